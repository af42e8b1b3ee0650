"""Worker-thread hops of a turn on a remote store: every write is one call through the facade (with the
context cache's extension in it), and the reads that need no store (the next snapshot, the context after the
run, the leaf, the session id) are answered from memory; the cache's memory answer is always the rebuild's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings

from sessiontree import SessionManager
from sessiontree.agent import AgentTool, ScriptedModel, ToolResult, reply, tool_call
from sessiontree.agent import session as session_module
from sessiontree.agent import turn_state as turn_state_module
from sessiontree.agent.session import AsyncSession
from sessiontree.agent.turn_state import ContextCache
from sessiontree.storage import MemoryStore
from tests.agent.support import harness
from tests.agent.test_agent_turn_state import OPS, _apply


class LoopGuardedStore(MemoryStore):
    """A memory store that says it is remote (and, as the SQL stores, durable at every commit: no sync at
    save points) and refuses every read and write made on the event loop."""

    remote = True
    durable_on_commit = True
    loop_thread: int | None = None

    def _guard(self) -> None:
        if threading.get_ident() == self.loop_thread:
            raise AssertionError("a remote store was called on the event loop")

    def append(self, entry: Any) -> None:
        self._guard()
        super().append(entry)

    def entry_at(self, i: int) -> dict[str, Any]:
        self._guard()
        return super().entry_at(i)

    def raw_at(self, i: int) -> bytes:
        self._guard()
        return super().raw_at(i)


def _remote_manager() -> tuple[SessionManager, LoopGuardedStore]:
    base = SessionManager.in_memory("/w")
    store = LoopGuardedStore(header=base.get_header())
    return SessionManager(store, cwd="/w", session_dir=None, persist=False), store


async def _ok(_call_id: str, _args: dict[str, Any], _signal: Any, _update: Any) -> ToolResult:
    return ToolResult([{"type": "text", "text": "ok"}])


NOOP = AgentTool("noop", "does nothing", {"type": "object", "properties": {}}, _ok, repeatable=True)


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every call made through ``AsyncSession.run`` (each one a worker thread for a remote
    store)."""
    made: list[str] = []
    original = AsyncSession.run

    async def counted(self: AsyncSession, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        made.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(AsyncSession, "run", counted)
    return made


@pytest.mark.anyio
async def test_a_remote_turn_makes_one_worker_call_per_entry_it_writes(hops: list[str]) -> None:
    """A prompt of three requests (two with a tool call) writes six entries: six calls, no snapshot or
    context read of its own (the run's writes keep the cache current)."""
    manager, store = _remote_manager()
    store.loop_thread = threading.get_ident()
    model = ScriptedModel([reply("warm")])
    h = harness(model, manager, tools=[NOOP])
    await h.prompt("warm up")  # the first snapshot builds the cache: one call to read the session
    before = len(manager.get_entries())
    hops.clear()
    model.add(reply(tool_call("noop", id="c1")), reply(tool_call("noop", id="c2")), reply("done"))
    await h.prompt("go")
    store.loop_thread = None  # the checks below read the store themselves
    written = manager.get_entries()[before:]
    assert [e["message"]["role"] for e in written] == [
        "user", "assistant", "toolResult", "assistant", "toolResult", "assistant",
    ]  # fmt: skip
    assert hops == ["_append_message"] * len(written)
    assert h.context_cache.rebuilds == 1
    assert h.context_cache.current(manager) == manager.build_session_context()


@pytest.mark.anyio
async def test_writes_buffered_during_a_turn_go_in_one_call_that_keeps_the_cache_current(
    hops: list[str],
) -> None:
    """A listener's write at ``turn_end`` is flushed in one call; the next request's snapshot sees it
    without another."""
    manager, store = _remote_manager()
    store.loop_thread = threading.get_ident()
    model = ScriptedModel([reply("warm")])
    h = harness(model, manager, tools=[NOOP])
    await h.prompt("warm up")
    noted: list[bool] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "turn_end" and not noted:
            noted.append(True)
            h.append_custom_message("note", "from the listener")

    h.subscribe(on_event)
    model.add(reply(tool_call("noop", id="c1")), reply("done"))
    hops.clear()
    await h.prompt("go")
    store.loop_thread = None
    assert hops == ["_append_message"] * 3 + ["_apply_all_then", "_append_message"]
    assert "from the listener" in str(model.requests[-1].messages)
    assert h.context_cache.current(manager) == manager.build_session_context()


@pytest.mark.anyio
async def test_the_leaf_and_the_session_id_are_read_without_a_worker_call(hops: list[str]) -> None:
    manager, _ = _remote_manager()
    first = manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    facade = AsyncSession(manager)
    assert await facade.leaf_id() == first
    assert await facade.session_id() == manager.get_session_id()
    assert hops == []


@pytest.mark.parametrize("persist_leaf", [False, True])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_the_cache_answers_from_memory_only_with_the_rebuilds_context(
    persist_leaf: bool, ops: list[tuple[str, int]]
) -> None:
    """Whatever happened since, ``current`` is None or equal to a full rebuild; after ``advance`` it is the
    rebuild whenever only appends led to the leaf."""
    manager = SessionManager.in_memory("/w", persist_leaf=persist_leaf)
    cache = ContextCache()
    cache.context(manager)
    for op, n in ops:
        if op != "check":
            _apply(manager, op, n)
        if n % 2:
            cache.advance(manager)
        answer = cache.current(manager)
        assert answer is None or answer == manager.build_session_context()
        if n % 5 == 0:
            assert cache.context(manager) == manager.build_session_context()
            assert cache.current(manager) == manager.build_session_context()


def test_advancing_never_rebuilds_and_follows_appends() -> None:
    manager = SessionManager.in_memory("/w")
    cache = ContextCache()
    cache.advance(manager)  # nothing cached: nothing to extend, and no rebuild either
    assert (cache.rebuilds, cache.current(manager)) == (0, None)
    manager.append_message({"role": "user", "content": "one", "timestamp": 1})
    cache.context(manager)
    manager.append_message({"role": "user", "content": "two", "timestamp": 2})
    assert cache.current(manager) is None
    cache.advance(manager)
    assert cache.current(manager) == manager.build_session_context()
    first = manager.get_entries()[0]["id"]
    manager.append_compaction("s", first, 1)
    cache.advance(manager)  # a compaction needs a rebuild: left to the next ``context``
    assert cache.current(manager) is None and cache.rebuilds == 1
    assert cache.context(manager) == manager.build_session_context() and cache.rebuilds == 2


def test_a_failed_advance_forgets_the_cache_instead_of_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    manager = SessionManager.in_memory("/w")
    cache = ContextCache()
    manager.append_message({"role": "user", "content": "one", "timestamp": 1})
    cache.context(manager)
    manager.append_message({"role": "user", "content": "two", "timestamp": 2})

    def broken(_entry: Any) -> list[Any]:
        raise RuntimeError("cannot convert")

    monkeypatch.setattr(turn_state_module, "session_entry_to_context_messages", broken)
    cache.advance(manager)
    assert cache.current(manager) is None
    monkeypatch.undo()
    assert cache.context(manager) == manager.build_session_context()
    assert cache.rebuilds == 2


# -- the session's worker thread ------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_calls_made_together_run_one_at_a_time_in_their_order_on_one_thread() -> None:
    manager, _ = _remote_manager()
    facade = AsyncSession(manager)
    running: list[int] = []
    log: list[tuple[int, int, int]] = []  # (call, thread, calls running at its start)

    def call(_manager: SessionManager, k: int) -> int:
        running.append(k)
        log.append((k, threading.get_ident(), len(running)))
        time.sleep(0.02)
        running.remove(k)
        return k * 10

    answers: dict[int, int] = {}

    async def one(k: int) -> None:
        answers[k] = await facade.run(call, k)

    async with anyio.create_task_group() as group:
        for k in range(4):
            group.start_soon(one, k)
            await anyio.sleep(0)  # each task submits before the next starts
    assert [k for k, _, _ in log] == [0, 1, 2, 3]
    assert {n for _, _, n in log} == {1}
    threads = {t for _, t, _ in log}
    assert len(threads) == 1 and threading.get_ident() not in threads
    assert answers == {0: 0, 1: 10, 2: 20, 3: 30}


@pytest.mark.anyio
async def test_a_worker_call_raises_in_the_caller_and_a_cancelled_caller_waits_for_its_call() -> None:
    manager, _ = _remote_manager()
    facade = AsyncSession(manager)

    def failing(_manager: SessionManager) -> None:
        raise KeyError("from the worker")

    with pytest.raises(KeyError, match="from the worker"):
        await facade.run(failing)
    finished: list[bool] = []

    def slow(_manager: SessionManager) -> None:
        time.sleep(0.1)
        finished.append(True)

    with anyio.move_on_after(0.01):
        await facade.run(slow)
    assert finished == [True]  # the cancellation waited until the call returned
    with anyio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(anyio.get_cancelled_exc_class()):
            await facade.run(slow)
    assert finished == [True]  # a caller already cancelled makes no call


@pytest.mark.anyio
async def test_the_worker_thread_ends_when_idle_and_another_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "IDLE_S", 0.05)
    manager, _ = _remote_manager()
    facade = AsyncSession(manager)
    first = await facade.run(lambda _m: threading.current_thread())
    first.join(timeout=5)
    assert not first.is_alive()
    second = await facade.run(lambda _m: threading.current_thread())
    assert second is not first and second.name == "sessiontree-session"


@pytest.mark.anyio
async def test_without_an_asyncio_loop_calls_go_to_anyios_worker_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager, _ = _remote_manager()
    facade = AsyncSession(manager)
    monkeypatch.setattr(session_module, "_asyncio_loop", lambda: None)  # as under trio
    name = await facade.run(lambda _m: threading.current_thread().name)
    assert name != "sessiontree-session" and name != threading.current_thread().name
