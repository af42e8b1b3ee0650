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
import importlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from sessiontree import SessionManager

BACKEND = os.environ.get("SESSIONTREE_UPSTREAM_BACKEND", "jsonl")
POSTGRES_URL = os.environ.get("SESSIONTREE_UPSTREAM_POSTGRES_URL", "")
EXCLUDED: dict[str, str] = json.loads(os.environ.get("SESSIONTREE_UPSTREAM_EXCLUDED", "{}"))
if BACKEND not in ("memory", "jsonl", "sqlite", "postgres"):
    raise pytest.UsageError(f"SESSIONTREE_UPSTREAM_BACKEND={BACKEND!r}: memory, jsonl, sqlite or postgres")
if BACKEND == "postgres" and not POSTGRES_URL:
    raise pytest.UsageError("SESSIONTREE_UPSTREAM_BACKEND=postgres needs SESSIONTREE_UPSTREAM_POSTGRES_URL")

_scratch = Path(tempfile.mkdtemp(prefix="sessiontree-upstream-"))


class Closable(Protocol):
    def close(self) -> None: ...


opened: list[Closable] = []
"""Every adapter a swapped class made (closed at the end of its test)."""
memory_sessions: dict[tuple[str, str], SessionManager] = {}
"""The in-memory sessions of the ``memory`` back end, by database file and session id."""


def namespace_of(db_path: str | os.PathLike[str]) -> str | None:
    """A short name for a database file (None for ``:memory:``, where every session is a new one)."""
    if str(db_path) == ":memory:":
        return None
    return hashlib.sha256(str(Path(db_path).resolve()).encode()).hexdigest()[:12]


def target(namespace: str | None, session_id: str | None, db_path: str | os.PathLike[str] | None) -> str:
    """Where a session lives on the chosen back end: one place per database file, a new one otherwise."""
    place = namespace or uuid.uuid4().hex[:12]
    if BACKEND == "jsonl":
        return str(_scratch / place)
    if BACKEND == "sqlite":
        if session_id is None:  # a new session with a fresh id: one database holds them all
            return f"sqlite:///{_scratch / 'sessions.db'}"
        path = Path(db_path) if db_path is not None and namespace is not None else _scratch / f"{place}.db"
        return f"sqlite:///{path}#{session_id}"
    assert BACKEND == "postgres"
    return f"{POSTGRES_URL}#{place}.{session_id}" if session_id else POSTGRES_URL


SWAPS = {
    "SQLiteSession": ("sessiontree_swap_agents", "TreeBackedSQLiteSession"),
    "InMemoryChatMessageHistory": ("sessiontree_swap_langchain", "TreeBackedHistory"),
}
"""The names swapped in the test modules, and the classes (in modules of their own, imported only by the
suite that uses them) they become."""


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
    for name, (module, replacement) in SWAPS.items():
        if hasattr(request.module, name):
            monkeypatch.setattr(request.module, name, getattr(importlib.import_module(module), replacement))
            swapped += 1
    before = len(opened)
    yield
    record_property("adapter_sessions", len(opened) - before)
    record_property("swapped_names", swapped)
    for adapter in opened[before:]:
        adapter.close()


def pytest_unconfigure() -> None:
    for manager in memory_sessions.values():
        manager.close()
    shutil.rmtree(_scratch, ignore_errors=True)
