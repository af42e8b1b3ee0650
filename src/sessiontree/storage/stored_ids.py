"""The session ids a store keeps: one rule for every back end (files, memory, SQLite, PostgreSQL), checked on
every way in (create, import, copy, fork), so that every stored session can be named as ``STORE#ID``, used in
a file name, bound as SQL text by every driver, opened, copied and deleted.
"""

from __future__ import annotations

from sessiontree.errors import SessionError
from sessiontree.format.ids import SESSION_ID_PATTERN

__all__ = ["session_id_error", "storable_session_id"]


def session_id_error(session_id: object) -> str | None:
    """Why ``session_id`` cannot name a stored session (``None`` when it can): pi's rule for custom session
    ids (letters, digits, ``-``, ``_`` and ``.``, beginning and ending with a letter or digit), so that every
    stored id can be named as ``STORE#ID``, used in a file name, and bound as SQL text by every driver."""
    if not isinstance(session_id, str):
        return f"the session id is {type(session_id).__name__}, not a string"
    if not SESSION_ID_PATTERN.match(session_id):
        return (
            f"the session id {session_id!r} is not one a store can keep: it must be non-empty, contain only "
            "alphanumeric characters, '-', '_' and '.', and start and end with an alphanumeric character"
        )
    return None


def storable_session_id(session_id: object, where: str) -> str:
    """``session_id`` when a store may keep a session under it; else ``SessionError`` (kind
    ``invalid_session``: the session's header names an id that cannot be stored)."""
    why = session_id_error(session_id)
    if why is not None:
        raise SessionError(f"{where}: cannot store this session: {why}", kind="invalid_session")
    assert isinstance(session_id, str)
    return session_id
