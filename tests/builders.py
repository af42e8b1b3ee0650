"""Builders the session-manager tests share: pi-shaped user and assistant messages, and managers in memory
or on a file, each test's managers closed when it ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sessiontree import SessionManager

Factory = Callable[..., SessionManager]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(text: str, timestamp: int = 2) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
        "stopReason": "stop",
        "timestamp": timestamp,
    }


MANAGER_KINDS = ("memory", "file", "sqlite", "postgres")
"""Where ``manager_factory`` puts sessions: in memory, in a JSONL file, in SQLite, in PostgreSQL."""


@contextmanager
def manager_factory(
    kind: str,
    tmp_path: Path,
    clock: Callable[[], Callable[[], int]] | None = None,
    *,
    store: str | None = None,
) -> Iterator[Factory]:
    """Makes managers ``in_memory`` (kind ``memory``), on a file under ``tmp_path`` (``file``), or in a
    database store (``sqlite``: a file under ``tmp_path``; ``postgres``: the ``store`` URL given), and closes
    them all on exit; ``clock``, when given, makes each manager's default clock."""
    managers: list[SessionManager] = []
    if kind == "sqlite" and store is None:
        store = f"sqlite:///{tmp_path}/sessions.db"

    def factory(**options: Any) -> SessionManager:
        if clock is not None:
            options.setdefault("clock", clock())
        if kind == "memory":
            manager = SessionManager.in_memory(str(tmp_path / "proj"), **options)
        elif kind == "file":
            manager = SessionManager.create(str(tmp_path / "proj"), tmp_path / "sessions", **options)
        else:
            assert store is not None, f"kind {kind!r} needs a store URL"
            manager = SessionManager.create(str(tmp_path / "proj"), store=store, **options)
        managers.append(manager)
        return manager

    yield factory
    for manager in managers:
        manager.close()


def store_url(manager: SessionManager) -> str | None:
    """The store URL of a manager over a database store (``None`` for files and memory)."""
    db = getattr(manager.index, "db", None)
    return None if db is None else str(db.url)


def user_messages_file(tmp_path: Path, count: int) -> str:
    """A session file under ``tmp_path`` of ``count`` user messages ``m0``, ``m1``, … in a chain (closed)."""
    manager = SessionManager.create(tmp_path, session_dir=tmp_path)
    for i in range(count):
        manager.append_message(user(f"m{i}"))
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path


def reopened(manager: SessionManager) -> SessionManager:
    """The same session read back from its file or database (the manager itself when it is in memory)."""
    url = store_url(manager)
    if url is not None:
        return SessionManager.open(manager.get_session_id(), store=url, read_only=True)
    path = manager.get_session_file()
    return manager if path is None else SessionManager.open(path, read_only=True)
