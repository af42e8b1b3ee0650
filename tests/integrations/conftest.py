"""Fixtures of the adapter tests: the back ends a session can live on, and no tracing export from the SDK.

``backend`` is parametrized over every back end: memory, JSONL, SQLite and PostgreSQL (the run's server); a
new back end is one more entry in ``BACKENDS`` (a way to make a new session, and a way to open it again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.storage import MemoryStore


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    """The Agents SDK exports traces to OpenAI when a key is set: tests never reach the internet."""
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield


@dataclass
class Backend:
    """A place for sessions: ``new()`` gives a fresh manager, ``reopen(manager)`` the same session read
    back from where it is stored (the old manager is closed)."""

    name: str
    new: Callable[[], SessionManager]
    reopen: Callable[[SessionManager], SessionManager]


def _memory(tmp_path: Path) -> Backend:
    def reopen(manager: SessionManager) -> SessionManager:
        header = manager.get_header()
        assert header is not None
        store = MemoryStore(header=header, entries=manager.get_entries())
        return SessionManager(store, cwd=manager.get_cwd(), session_dir=None, persist=False)

    return Backend("memory", lambda: SessionManager.in_memory(str(tmp_path)), reopen)


def _jsonl(tmp_path: Path) -> Backend:
    def reopen(manager: SessionManager) -> SessionManager:
        path = manager.get_session_file()
        assert path is not None
        manager.close()
        return SessionManager.open(path)

    return Backend("jsonl", lambda: SessionManager.create(str(tmp_path), tmp_path / "sessions"), reopen)


def _store(url: str, tmp_path: Path) -> Backend:
    def reopen(manager: SessionManager) -> SessionManager:
        sid = manager.get_session_id()
        manager.close()
        return SessionManager.open(sid, store=url)

    return Backend(url.split(":", 1)[0], lambda: SessionManager.create(str(tmp_path), store=url), reopen)


def _sqlite(tmp_path: Path) -> Backend:
    return _store(f"sqlite:///{tmp_path}/sessions.db", tmp_path)


BACKENDS: dict[str, Callable[[Path], Backend]] = {"memory": _memory, "jsonl": _jsonl, "sqlite": _sqlite}


@pytest.fixture(params=[*sorted(BACKENDS), "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "postgres":
        return _store(str(request.getfixturevalue("shared_postgres_store")), tmp_path)
    return BACKENDS[request.param](tmp_path)
