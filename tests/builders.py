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


@contextmanager
def manager_factory(
    kind: str, tmp_path: Path, clock: Callable[[], Callable[[], int]] | None = None
) -> Iterator[Factory]:
    """Makes managers ``in_memory`` (kind ``memory``) or on a file under ``tmp_path`` (kind ``file``) and
    closes them all on exit; ``clock``, when given, makes each manager's default clock."""
    managers: list[SessionManager] = []

    def factory(**options: Any) -> SessionManager:
        if clock is not None:
            options.setdefault("clock", clock())
        if kind == "memory":
            manager = SessionManager.in_memory(str(tmp_path / "proj"), **options)
        else:
            manager = SessionManager.create(str(tmp_path / "proj"), tmp_path / "sessions", **options)
        managers.append(manager)
        return manager

    yield factory
    for manager in managers:
        manager.close()


def reopened(manager: SessionManager) -> SessionManager:
    """The same session read back from its file (the manager itself when it is in memory)."""
    path = manager.get_session_file()
    return manager if path is None else SessionManager.open(path, read_only=True)
