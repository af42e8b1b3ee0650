"""``check``: every problem of a session file, found without changing it (no lock, no write).

What the store reports on loading plus the cycles a tree walk finds; above both, so that storage never
reaches up to the tree.
"""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.errors import CorruptSessionError
from sessiontree.storage import JsonlStore, Problem
from sessiontree.tree.tree_index import TreeIndex

__all__ = ["check_session_file", "no_header_problem"]


def no_header_problem(store: JsonlStore, file: Path) -> Problem:
    """Why a session file without a header is not a session: empty, blank, or only the start of a header (a
    torn first write). Every command reports it the same way."""
    if store.problems:  # the start of a header only: a torn first write
        return store.problems[0]
    what = "empty" if not os.path.getsize(store.path or file) else "blank (whitespace only)"
    return Problem("empty", None, f"{file}: the file is {what}: no session header, no entries")


def check_session_file(path: str | Path) -> list[Problem]:
    """Every problem of a session file (read-only: nothing is modified, no lock is taken)."""
    file = Path(path)
    try:
        store = JsonlStore.open(file, read_only=True)
    except CorruptSessionError as exc:
        return [Problem("bad_header", exc.line, str(exc))]
    with store:
        if store.header is None:
            return [no_header_problem(store, file)]
        tree = TreeIndex(store)
        tree.find_cycles()
        return [*store.problems, *tree.problems]
