"""Where an adapter's session lives: one function turns a target (a ``.jsonl`` file, a directory of sessions,
``memory:``, or a database store URL, ``sqlite:///…`` or ``postgresql://…``, optionally with ``#SESSION_ID``)
into a ``SessionManager``.

Opens and creates only through the ``SessionManager`` factories; it never reads or writes entries itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sessiontree.session.manager import SessionManager
from sessiontree.storage.session_dirs import get_sessions_root
from sessiontree.storage.urls import is_store_url

from ..errors import SessionError, SessionNotFoundError

__all__ = ["MEMORY_TARGET", "_open_manager"]

MEMORY_TARGET = "memory:"


def _fixed_id(session_id: str | None) -> dict[str, Any]:
    return {} if session_id is None else {"session_id_factory": lambda: session_id}


def _open_file(path: Path, session_id: str | None) -> SessionManager:
    manager = SessionManager.open(path, **_fixed_id(session_id))  # a missing file starts a session there
    if session_id is not None and manager.get_session_id() != session_id:
        found = manager.get_session_id()
        manager.close()
        raise SessionError(
            f"{path} holds session {found}, not {session_id}", kind="invalid_argument", path=str(path)
        )
    return manager


def _open_in_directory(directory: Path, session_id: str | None) -> SessionManager:
    if session_id is not None:
        matches = sorted(directory.glob(f"*_{session_id}.jsonl")) if directory.is_dir() else []
        if matches:
            return _open_file(matches[-1], session_id)
    return SessionManager.create(os.getcwd(), directory, id=session_id)


def _open_manager(target: str | os.PathLike[str], session_id: str | None = None) -> SessionManager:
    """The session an adapter works on.

    * ``"memory:"``: a new in-memory session (with ``session_id`` when given);
    * a database store URL (``sqlite:///…``, ``postgresql://…``; ``#SESSION_ID`` may name the session): that
      session, or a new one (with ``session_id`` when given);
    * a path ending in ``.jsonl``: that file, opened, or created there when missing;
    * any other path: a directory of session files (created when missing): the session ``session_id`` in it
      (found by pi's file name ``<timestamp>_<id>.jsonl``, created when absent), or a new session.

    Raises ``SessionError`` (kind ``invalid_argument``) for a store URL no back end here serves, and when a
    ``.jsonl`` file holds another session than ``session_id``.
    """
    text = os.fspath(target)
    if text == MEMORY_TARGET:
        return SessionManager.in_memory(**_fixed_id(session_id))
    if is_store_url(text) and not text.lower().startswith(("jsonl:", "memory:")):  # a database store
        url, _, in_url = text.partition("#")
        wanted = session_id or in_url or None
        if wanted is not None:
            try:
                return SessionManager.open(wanted, store=url)
            except SessionNotFoundError:
                pass  # a new session with that id
        return SessionManager.create(os.getcwd(), store=url, id=wanted)
    if text.lower().startswith("jsonl:"):
        text = text[len("jsonl:") :] or os.fspath(get_sessions_root())
    scheme, sep, _ = text.partition(":")
    if sep and len(scheme) > 1 and scheme.isalnum():
        raise SessionError(f"Unsupported session store URL: {text}", kind="invalid_argument")
    path = Path(text).expanduser()
    if path.suffix == ".jsonl":
        return _open_file(path, session_id)
    return _open_in_directory(path, session_id)
