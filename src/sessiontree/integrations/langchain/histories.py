"""``get_session_history(store)``: the session factory ``RunnableWithMessageHistory`` asks for, one
``TreeChatMessageHistory`` per session id in a store (a directory of pi session files, a database store
URL, or ``"memory:"``).

A session is opened on first use of its history (in a worker thread for the async methods, so the event loop
never waits on it), created when the store has no session of that id, and kept open for the next turn.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import Any

from ...errors import SessionError
from .._open import _open_manager
from .history import TreeChatMessageHistory

__all__ = ["SessionHistories", "get_session_history"]


class SessionHistories:
    """A ``get_session_history`` for ``RunnableWithMessageHistory``: ``histories(session_id)`` is that
    session's history (the same object on every call); ``close()`` closes every one (also as a context
    manager). ``options`` go to each ``TreeChatMessageHistory`` (summarizer and settings)."""

    def __init__(self, store: str | os.PathLike[str], **options: Any) -> None:
        text = os.fspath(store)
        if text.endswith(".jsonl") or "#" in text:
            raise SessionError(
                f"{text}: get_session_history needs a store that holds many sessions (a directory of "
                "session files or a database store URL without #SESSION_ID), not one session",
                kind="invalid_argument",
            )
        self.store = text
        self.options = options
        self._histories: dict[str, TreeChatMessageHistory] = {}
        self._guard = threading.Lock()

    def __call__(self, session_id: str) -> TreeChatMessageHistory:
        if not isinstance(session_id, str) or not session_id:
            raise SessionError(
                f"a session id must be a non-empty string, not {session_id!r}", kind="invalid_argument"
            )
        with self._guard:
            history = self._histories.get(session_id)
            if history is None:
                store = self.store
                history = TreeChatMessageHistory(
                    lambda: _open_manager(store, session_id), session_id=session_id, **self.options
                )
                self._histories[session_id] = history
            return history

    def close(self) -> None:
        """Close every history handed out (their sessions stay in the store)."""
        with self._guard:
            histories, self._histories = list(self._histories.values()), {}
        for history in histories:
            history.close()

    def __enter__(self) -> SessionHistories:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def get_session_history(store: str | os.PathLike[str], **options: Any) -> SessionHistories:
    """The ``get_session_history`` argument of ``RunnableWithMessageHistory`` for sessions kept in
    ``store``: ``RunnableWithMessageHistory(chain, get_session_history("sessions/"))``, then
    ``config={"configurable": {"session_id": "..."}}`` picks the session. See ``SessionHistories``."""
    return SessionHistories(store, **options)
