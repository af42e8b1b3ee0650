"""A pytest plugin that runs the Agents SDK's and langchain-core's own session tests against sessiontree's
adapters: in every test module, ``SQLiteSession`` becomes a ``TreeSession`` and
``InMemoryChatMessageHistory`` a ``TreeChatMessageHistory``, on the back end named by
``SESSIONTREE_UPSTREAM_BACKEND`` (``memory``, ``jsonl``, ``sqlite`` or ``postgres``, whose server is
``SESSIONTREE_UPSTREAM_POSTGRES_URL``).

Loaded by ``tests/integrations/test_upstream_suites.py`` in a pytest run of its own, inside the upstream
source tree (``-p sessiontree_swap`` with this folder on ``PYTHONPATH``). Tests named in
``SESSIONTREE_UPSTREAM_EXCLUDED`` (a JSON object: test name -> reason) are skipped with that reason; each
test records how many adapter sessions it made (``adapter_sessions`` in the JUnit report).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.memory import SessionSettings
from langchain_core.messages import BaseMessage

from sessiontree import SessionManager
from sessiontree.integrations._open import _open_manager
from sessiontree.integrations.langchain import TreeChatMessageHistory
from sessiontree.integrations.openai_agents import TreeSession

BACKEND = os.environ.get("SESSIONTREE_UPSTREAM_BACKEND", "jsonl")
POSTGRES_URL = os.environ.get("SESSIONTREE_UPSTREAM_POSTGRES_URL", "")
EXCLUDED: dict[str, str] = json.loads(os.environ.get("SESSIONTREE_UPSTREAM_EXCLUDED", "{}"))
if BACKEND not in ("memory", "jsonl", "sqlite", "postgres"):
    raise pytest.UsageError(f"SESSIONTREE_UPSTREAM_BACKEND={BACKEND!r}: memory, jsonl, sqlite or postgres")
if BACKEND == "postgres" and not POSTGRES_URL:
    raise pytest.UsageError("SESSIONTREE_UPSTREAM_BACKEND=postgres needs SESSIONTREE_UPSTREAM_POSTGRES_URL")

_scratch = Path(tempfile.mkdtemp(prefix="sessiontree-upstream-"))
_opened: list[TreeSession | TreeChatMessageHistory] = []
_memory_sessions: dict[tuple[str, str], SessionManager] = {}


def _namespace(db_path: str | os.PathLike[str]) -> str | None:
    """A short name for a database file (None for ``:memory:``, where every session is a new one)."""
    if str(db_path) == ":memory:":
        return None
    return hashlib.sha256(str(Path(db_path).resolve()).encode()).hexdigest()[:12]


def _target(namespace: str | None, session_id: str | None, db_path: str | os.PathLike[str] | None) -> str:
    """Where a session lives on the chosen back end: one place per database file, a new one otherwise."""
    place = namespace or uuid.uuid4().hex[:12]
    if BACKEND == "jsonl":
        return str(_scratch / place)
    if BACKEND == "sqlite":
        path = Path(db_path) if db_path is not None and namespace is not None else _scratch / f"{place}.db"
        return f"sqlite:///{path}" + (f"#{session_id}" if session_id else "")
    assert BACKEND == "postgres"
    return f"{POSTGRES_URL}#{place}.{session_id}" if session_id else POSTGRES_URL


def _agents_manager(session_id: str, db_path: str | os.PathLike[str]) -> SessionManager:
    namespace = _namespace(db_path)
    if BACKEND == "memory":
        if namespace is None:
            return SessionManager.in_memory(session_id_factory=lambda: session_id)
        key = (namespace, session_id)
        if key not in _memory_sessions:
            _memory_sessions[key] = SessionManager.in_memory(session_id_factory=lambda: session_id)
        return _memory_sessions[key]
    if BACKEND == "jsonl":
        return _open_manager(_target(namespace, None, db_path), session_id)
    return _open_manager(_target(namespace, session_id, db_path))


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
        super().__init__(_agents_manager(session_id, db_path), session_settings=session_settings)
        self.session_id = session_id  # the stored id may carry the database file's namespace
        self.db_path = db_path
        _opened.append(self)


class TreeBackedHistory(TreeChatMessageHistory):
    """``InMemoryChatMessageHistory``'s constructor over a new ``TreeChatMessageHistory`` (its session opened
    on first use, as ``get_session_history`` does); equal to another when their messages are (as the pydantic
    model it stands for)."""

    def __init__(self, messages: Iterable[BaseMessage] | None = None) -> None:
        target = "memory:" if BACKEND == "memory" else _target(None, None, None)
        super().__init__(lambda: _open_manager(target))
        _opened.append(self)
        if messages:
            self.add_messages(list(messages))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeBackedHistory):
            return NotImplemented
        return self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TreeBackedHistory(messages={self.messages!r})"


SWAPS: dict[str, type[Any]] = {
    "SQLiteSession": TreeBackedSQLiteSession,
    "InMemoryChatMessageHistory": TreeBackedHistory,
}


def pytest_report_header() -> str:
    return f"sessiontree adapters swapped in (back end: {BACKEND})"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = item.nodeid.split("::", 1)[-1]
        reason = EXCLUDED.get(name) or EXCLUDED.get(name.split("[", 1)[0])
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"excluded: {reason}"))


@pytest.fixture(autouse=True)
def _sessiontree_swap(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, record_property: Any
) -> Iterator[None]:
    swapped = 0
    for name, replacement in SWAPS.items():
        if hasattr(request.module, name):
            monkeypatch.setattr(request.module, name, replacement)
            swapped += 1
    before = len(_opened)
    yield
    record_property("adapter_sessions", len(_opened) - before)
    record_property("swapped_names", swapped)
    for adapter in _opened[before:]:
        adapter.close()


def pytest_unconfigure() -> None:
    for manager in _memory_sessions.values():
        manager.close()
    shutil.rmtree(_scratch, ignore_errors=True)
