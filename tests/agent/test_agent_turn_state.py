"""Turn snapshots and the storage seam: the incremental context equals a full rebuild over random operation
sequences (hypothesis), the snapshot is frozen, the write buffer is FIFO and keeps what failed, and a remote
store is only ever called from a worker thread."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import SessionManager
from sessiontree.agent import ScriptedModel, reply
from sessiontree.agent.session import AsyncSession
from sessiontree.agent.turn_state import ContextCache
from sessiontree.agent.write_buffer import WriteBuffer
from sessiontree.errors import SessionNotFoundError
from sessiontree.storage import MemoryStore
from tests.agent.support import harness

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "user",
                "assistant",
                "tool",
                "model",
                "thinking",
                "tools",
                "custom",
                "custom_message",
                "label",
                "name",
                "summary",
                "compaction",
                "branch",
                "reset",
                "check",
                "check",
            ]
        ),
        st.integers(min_value=0, max_value=10_000),
    ),
    max_size=60,
)


def _apply(manager: SessionManager, op: str, n: int) -> None:
    ids = [e["id"] for e in manager.get_entries()]
    pick = ids[n % len(ids)] if ids else None
    if op == "user":
        manager.append_message({"role": "user", "content": f"u{n}", "timestamp": n})
    elif op == "assistant":
        manager.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": f"a{n}"}], "api": "x", "provider": f"p{n % 3}",
             "model": f"m{n % 2}", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0}, "stopReason": "stop",
             "timestamp": n}
        )  # fmt: skip
    elif op == "tool":
        manager.append_message(
            {
                "role": "toolResult",
                "toolCallId": f"c{n}",
                "toolName": "t",
                "content": [],
                "isError": False,
                "timestamp": n,
            }
        )
    elif op == "model":
        manager.append_model_change(f"prov{n % 2}", f"model{n % 5}")
    elif op == "thinking":
        manager.append_thinking_level_change(["off", "low", "high"][n % 3])
    elif op == "tools":
        manager.append_active_tools_change([f"tool{i}" for i in range(n % 3)])
    elif op == "custom":
        manager.append_custom_entry("state", {"n": n})
    elif op == "custom_message":
        manager.append_custom_message_entry("note", f"note {n}", True)
    elif op == "label" and pick is not None:
        manager.append_label_change(pick, f"label{n}" if n % 2 else None)
    elif op == "name":
        manager.append_session_info(f"name {n}")
    elif op == "summary":
        manager.branch_with_summary(pick if n % 4 else None, f"summary {n}")
    elif op == "compaction" and pick is not None:
        manager.append_compaction(f"compacted {n}", pick, n)
    elif op == "branch" and pick is not None:
        manager.branch(pick)
    elif op == "reset":
        manager.reset_leaf()


@pytest.mark.parametrize("persist_leaf", [False, True])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_the_incremental_context_equals_a_full_rebuild(
    persist_leaf: bool, ops: list[tuple[str, int]]
) -> None:
    manager = SessionManager.in_memory("/w", persist_leaf=persist_leaf)
    cache = ContextCache()
    for op, n in ops:
        if op == "check" or n % 3 == 0:
            assert cache.context(manager) == manager.build_session_context()
        if op != "check":
            _apply(manager, op, n)
    assert cache.context(manager) == manager.build_session_context()


def test_the_cache_extends_on_appends_and_rebuilds_after_moves_and_compactions() -> None:
    manager = SessionManager.in_memory("/w")
    cache = ContextCache()
    manager.append_message({"role": "user", "content": "one", "timestamp": 1})
    cache.context(manager)
    for i in range(5):
        manager.append_message({"role": "user", "content": f"more {i}", "timestamp": 2})
        cache.context(manager)
    assert (cache.rebuilds, cache.extensions) == (1, 5)
    first = manager.get_entries()[0]["id"]
    manager.branch(first)
    cache.context(manager)
    manager.append_compaction("s", first, 1)
    cache.context(manager)
    assert cache.rebuilds == 3


def test_a_file_session_is_extended_like_a_memory_one(tmp_path: Any) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path / "s")
    manager.append_message({"role": "user", "content": "one", "timestamp": 1})
    cache = ContextCache()
    assert cache.context(manager) == manager.build_session_context()
    manager.append_message({"role": "user", "content": "two", "timestamp": 2})
    assert [m["content"] for m in cache.context(manager).messages] == ["one", "two"]
    manager.close()


@pytest.mark.anyio
async def test_a_snapshot_is_frozen_while_the_session_and_settings_move_on() -> None:
    model = ScriptedModel([reply("a"), reply("b")])
    h = harness(model, system_prompt="v1")
    await h.prompt("first")
    from sessiontree.agent.run import snapshot

    state = await snapshot(h._parts)
    frozen = list(state.messages)
    h.set_system_prompt("v2")
    await h.prompt("second")
    assert state.messages == frozen and state.system_prompt == "v1"
    assert (await snapshot(h._parts)).messages == h.session.build_session_context().messages


# -- the write buffer --------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_the_write_buffer_is_fifo_and_a_failed_write_stays_queued() -> None:
    manager = SessionManager.in_memory("/w")
    buffer = WriteBuffer()
    buffer.push("message", {"role": "user", "content": "one", "timestamp": 1})
    buffer.push("label", "missing-id", "x")  # fails: unknown target
    buffer.push("session_info", "after")
    with pytest.raises(SessionNotFoundError):
        await buffer.flush(AsyncSession(manager))
    assert [e["type"] for e in manager.get_entries()] == ["message"]
    assert [w.kind for w in buffer.pending] == ["label", "session_info"]
    buffer.pending[0]  # still the failed one, in front
    buffer._queue.popleft()  # the caller drops the bad write
    assert await buffer.flush(AsyncSession(manager)) == 1
    assert [e["type"] for e in manager.get_entries()] == ["message", "session_info"]


def test_unknown_pending_writes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown pending write"):
        WriteBuffer().push("leaf", None)


# -- the async facade ----------------------------------------------------------------------------------------
class RemoteStore(MemoryStore):
    """A memory store that says it is remote and records which threads call it."""

    remote = True

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.threads: set[int] = set()

    def append(self, entry: dict[str, Any]) -> None:
        self.threads.add(threading.get_ident())
        super().append(entry)

    def entry_at(self, i: int) -> dict[str, Any]:
        self.threads.add(threading.get_ident())
        return super().entry_at(i)


@pytest.mark.anyio
async def test_a_remote_store_is_only_called_from_worker_threads() -> None:
    base = SessionManager.in_memory("/w")
    store = RemoteStore(header=base.get_header())
    manager = SessionManager(store, cwd="/w", session_dir=None, persist=False)
    model = ScriptedModel([reply("noted")])
    h = harness(model, manager)
    h.set_session_name("queued while idle: remote stores are not called synchronously")
    assert [w.kind for w in h.pending_session_writes] == ["session_info"]
    loop_thread = threading.get_ident()
    await h.prompt("hello")
    assert store.threads and loop_thread not in store.threads
    assert h.pending_session_writes == () and manager.get_session_name() is not None
    assert [e["type"] for e in manager.get_entries()][-2:] == ["message", "message"]


@pytest.mark.anyio
async def test_a_local_store_is_called_inline() -> None:
    manager = SessionManager.in_memory("/w")
    facade = AsyncSession(manager)
    seen: list[int] = []
    await facade.run(lambda m: seen.append(threading.get_ident()))
    assert seen == [threading.get_ident()]
    assert await anyio.to_thread.run_sync(lambda: facade.remote) is False
