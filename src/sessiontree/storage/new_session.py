"""The pieces of making a session that need no manager: checking options, a fresh header and file name,
the session directory, and opening a file as a store (a missing or empty file is a new session there).

Used by the factories and by the manager itself; it holds no session state.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sessiontree.format import entries as E
from sessiontree.format.ids import assert_valid_session_id, iso_from_ms, new_entry_id, now_ms, uuid7
from sessiontree.storage import EntryStore, JsonlStore, _fileio
from sessiontree.storage.session_dirs import ensure_private_dir, get_default_session_dir, session_file_name

__all__ = ["MANAGER_OPTIONS", "ensure_session_dir", "new_header", "open_file_store", "split_options"]

MANAGER_OPTIONS = ("clock", "id_factory", "session_id_factory", "durability", "persist_leaf", "stale_leaf")
"""The keyword options every ``SessionManager`` factory passes on to the manager."""


def split_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` when every key is a manager option; ``TypeError`` naming the others."""
    unknown = set(options) - set(MANAGER_OPTIONS)
    if unknown:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    return options


def new_header(
    options: dict[str, Any], cwd: str, session_id: str | None, parent_session: str | None
) -> tuple[dict[str, Any], str]:
    """A session header (id from ``session_id`` or the options' factory, time from their clock) and the
    file name pi gives it; the id is validated first, since it becomes part of a file name."""
    sid = session_id if session_id is not None else options.get("session_id_factory", uuid7)()
    assert_valid_session_id(sid)
    ts = iso_from_ms(options.get("clock", now_ms)())
    return E.session_header(sid, ts, cwd, parent_session), session_file_name(ts, sid)


def ensure_session_dir(cwd: str, session_dir: str | Path | None) -> Path:
    """``session_dir`` (or pi's directory for ``cwd``), created 0700 when missing."""
    directory = (
        _fileio.resolve_session_dir(Path(session_dir))
        if session_dir is not None
        else get_default_session_dir(cwd)
    )
    return ensure_private_dir(directory)


def open_file_store(
    path: Path, options: dict[str, Any], *, read_only: bool, new_cwd: str | None = None
) -> EntryStore:
    """Open ``path``; a missing or empty file becomes a new session whose header cwd is ``new_cwd``.

    No exists() check first: a missing file is a new session at that path (created, exclusively, with its
    first entry), so a process that loses a race to create it gets ``SessionLockedError`` at that write.
    """
    store = JsonlStore.open(
        path,
        read_only=read_only,
        durability=options.get("durability", "flush"),
        id_factory=options.get("id_factory", new_entry_id),
        missing_ok=not read_only,
    )
    if store.header is None:
        header, _ = new_header(options, new_cwd if new_cwd is not None else os.getcwd(), None, None)
        store.set_header(header)
    return store
