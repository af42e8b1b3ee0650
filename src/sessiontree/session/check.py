"""``check``: every problem of a session file or of a session in a database store, found without changing it
(no lock, no write).

For a file: what the store reports on loading plus the cycles a tree walk finds. For a database store: the
same for its lines, and every row whose columns disagree with them (``SqlRepo.check``).
"""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.errors import CorruptSessionError, SessionError
from sessiontree.storage import JsonlStore, Problem
from sessiontree.tree.tree_index import TreeIndex

__all__ = ["check_session_file", "check_stored_session", "no_header_problem"]


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


def check_stored_session(url: str, session_id: str) -> list[Problem]:
    """Every problem of the session ``session_id`` in the database store ``url`` (read-only)."""
    from sessiontree.session.store_access import shared_repo
    from sessiontree.storage.sql.repository import SqlRepo

    repo = shared_repo(url)
    if not isinstance(repo, SqlRepo):
        raise SessionError(f"{url}: not a database store", kind="invalid_argument")
    try:
        return repo.check(session_id)
    except CorruptSessionError as exc:  # its stored header: nothing else can be read
        return [Problem("bad_header", exc.line, str(exc))]
