"""``SQLiteSession`` for the Agents SDK's session tests: a ``TreeSession`` on the chosen back end
(``sessiontree_swap``), built the way SQLiteSession is."""

from __future__ import annotations

import os
from typing import Any

from agents.memory import SessionSettings
from sessiontree_swap import BACKEND, memory_sessions, namespace_of, opened, target

from sessiontree import SessionManager
from sessiontree.integrations._open import _open_manager
from sessiontree.integrations.openai_agents import TreeSession


def _manager(session_id: str, db_path: str | os.PathLike[str]) -> SessionManager:
    namespace = namespace_of(db_path)
    if BACKEND == "memory":
        if namespace is None:
            return SessionManager.in_memory(session_id_factory=lambda: session_id)
        key = (namespace, session_id)
        if key not in memory_sessions:
            memory_sessions[key] = SessionManager.in_memory(session_id_factory=lambda: session_id)
        return memory_sessions[key]
    if BACKEND == "jsonl":
        return _open_manager(target(namespace, None, db_path), session_id)
    return _open_manager(target(namespace, session_id, db_path))


class TreeBackedSQLiteSession(TreeSession):
    """``SQLiteSession``'s constructor over a ``TreeSession``: the same database file and session id are
    the same session, ``":memory:"`` is a new one each time (as with SQLiteSession)."""

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(_manager(session_id, db_path), session_settings=session_settings)
        self.session_id = session_id  # the stored id may carry the database file's namespace
        self.db_path = db_path
        opened.append(self)
