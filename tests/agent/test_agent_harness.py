"""pi's harness tests (packages/agent/test/harness/agent-harness.test.ts), ported to ``AgentHarness`` on the
scripted model, plus the harness behaviours the issue names (persist-before-notify, save points, failures)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.agent import (
    AgentHarness,
    HarnessError,
    ScriptedModel,
    ScriptedRequest,
    SyncHarness,
    reply,
    tool_call,
)
from sessiontree.agent.scripted import Reply
from tests.agent.support import (
    CALCULATE,
    GET_CURRENT_TIME,
    Recorder,
    delayed_tool,
    harness,
    roles,
    session_kinds,
)

pytestmark = pytest.mark.anyio


def user_count(request: ScriptedRequest) -> int:
    return sum(1 for m in request.messages if m["role"] == "user")


async def test_constructs_directly_and_exposes_queue_modes() -> None:
    model = ScriptedModel()
    h = harness(
        model,
        thinking_level="high",
        system_prompt="You are helpful.",
        steering_mode="all",
        follow_up_mode="all",
    )
    assert h.model is model and h.thinking_level == "high"
    assert (h.steering_mode, h.follow_up_mode) == ("all", "all")
    h.steering_mode = "one-at-a-time"
    h.follow_up_mode = "one-at-a-time"
    assert (h.steering_mode, h.follow_up_mode) == ("one-at-a-time", "one-at-a-time")


@pytest.mark.parametrize("queue", ["steer", "follow_up"])
async def test_drains_queued_messages_one_at_a_time_and_emits_queue_updates(queue: str) -> None:
    # pi: two steers queued during the first reply are delivered one per turn; two follow-ups one each
    # time the agent would otherwise stop. Either way the requests carry 1, 2, 3 user messages.
    counts: list[int] = []

    def answer(request: ScriptedRequest) -> Reply:
        counts.append(user_count(request))
        return reply("ok")

    h = harness(ScriptedModel([answer, answer, answer]))
    lengths: list[int] = []
    queued = False
    key = "steer" if queue == "steer" else "followUp"
    enqueue = h.steer if queue == "steer" else h.follow_up

    def listener(event: dict[str, Any]) -> None:
        nonlocal queued
        if event["type"] == "queue_update":
            lengths.append(len(event[key]))
        if event["type"] == "message_start" and event["message"]["role"] == "assistant" and not queued:
            queued = True
            enqueue("one")
            enqueue("two")

    h.subscribe(listener)
    await h.prompt("hello")
    assert counts == [1, 2, 3]
    assert lengths == [1, 2, 1, 0]


async def test_appends_before_agent_start_messages_and_persists_them() -> None:
    model = ScriptedModel([reply("ok")])
    h = harness(model)
    h.on(
        "before_agent_start",
        lambda event: {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hook"}], "timestamp": 1}]
        },
    )
    await h.prompt("hello")
    assert model.requests[0].texts() == ["hello", "hook"]
    stored = [e["message"] for e in h.session.get_entries() if e["type"] == "message"]
    assert [m["content"][0]["text"] for m in stored if m["role"] == "user"] == ["hello", "hook"]


async def test_abort_mid_stream_persists_an_aborted_reply_and_keeps_next_turn_messages() -> None:
    gate = anyio.Event()
    model = ScriptedModel([reply("never finished", chunk=2, hang_after=2), reply("second")])
    h = harness(model)
    updates: list[tuple[int, int, int]] = []
    h.subscribe(
        lambda e: (
            updates.append((len(e["steer"]), len(e["followUp"]), len(e["nextTurn"])))
            if e["type"] == "queue_update"
            else None
        )
    )

    async def abort_when_streaming(event: dict[str, Any]) -> None:
        if event["type"] == "message_update" and not gate.is_set():
            gate.set()

    h.subscribe(abort_when_streaming)
    result: dict[str, Any] = {}
    async with anyio.create_task_group() as group:

        async def run() -> None:
            result["first"] = await h.prompt("first")

        group.start_soon(run)
        await gate.wait()
        await h.steer("steer")
        await h.follow_up("follow")
        await h.next_turn("next")
        cleared = await h.abort()
    assert len(cleared.cleared_steer) == 1 and len(cleared.cleared_follow_up) == 1
    assert (0, 0, 1) in updates
    first = result["first"]
    assert first["stopReason"] == "aborted" and first["content"][0]["text"].startswith("ne")
    stored = [e["message"] for e in h.session.get_entries() if e["type"] == "message"]
    assert stored[-1]["stopReason"] == "aborted"  # persisted, never half-written
    await h.prompt("second")
    assert model.requests[1].texts() == ["first", "next", "second"]


async def test_a_throwing_hook_is_persisted_as_an_error_reply() -> None:
    model = ScriptedModel([reply("after failure")])
    h = harness(model)
    events = Recorder()
    h.subscribe(events)
    remove = h.on("context", lambda event: (_ for _ in ()).throw(RuntimeError("context exploded")))
    response = await h.prompt("hello")
    assert response["stopReason"] == "error" and response["errorMessage"] == "context exploded"
    assert model.requests == []  # the request was never sent
    stored = [e["message"] for e in h.session.get_entries() if e["type"] == "message"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["stopReason"] == "error" and stored[1]["errorMessage"] == "context exploded"
    assert {"agent_end", "settled", "save_point"} <= set(events.types())
    remove()
    assert (await h.prompt("after failure"))["role"] == "assistant"


async def test_a_failure_between_tool_calls_closes_the_turn_before_the_error_reply() -> None:
    model = ScriptedModel([reply(tool_call("calculate", {"expression": "1+1"}))])
    h = harness(model, tools=[CALCULATE])

    def explode(event: dict[str, Any]) -> None:
        if event["type"] == "tool_execution_start":
            raise RuntimeError("listener exploded")

    h.subscribe(explode)
    response = await h.prompt("hello")
    assert response["stopReason"] == "error" and "listener exploded" in response["errorMessage"]
    stored = [e["message"] for e in h.session.get_entries() if e["type"] == "message"]
    assert [m["role"] for m in stored] == ["user", "assistant", "toolResult", "assistant"]
    assert stored[2]["isError"] and stored[2]["toolCallId"] == stored[1]["content"][0]["id"]


async def test_changes_made_during_tool_execution_start_apply_to_the_second_request_only() -> None:
    first = ScriptedModel(
        [reply(tool_call("calculate", {"expression": "1 + 1"}, id="call-1")), reply("done")],
        id="first",
        reasoning=True,
    )
    second = first.variant(id="second")
    h = harness(first, thinking_level="off", system_prompt="first prompt", tools=[CALCULATE])

    def listener(event: dict[str, Any]) -> None:
        if event["type"] == "tool_execution_start":
            h.set_model(second)
            h.set_thinking_level("high")
            h.set_system_prompt("second prompt")
            h.set_tools([CALCULATE, GET_CURRENT_TIME], ["get_current_time"])

    h.subscribe(listener)
    await h.prompt("hello")
    captured = [(r.model_id, r.reasoning, r.system_prompt, r.tool_names) for r in first.requests]
    assert captured == [
        ("first", None, "first prompt", ["calculate"]),
        ("second", "high", "second prompt", ["get_current_time"]),
    ]
    # buffered during the run, flushed at the turn's save point: after the turn's own messages
    kinds = [e["type"] for e in h.session.get_entries()]
    assert kinds.index("thinking_level_change") > kinds.index("message") + 2


async def test_orders_pending_listener_session_writes_after_agent_emitted_messages() -> None:
    h = harness(ScriptedModel([reply("ok")]))
    wrote = False

    async def listener(event: dict[str, Any]) -> None:
        nonlocal wrote
        if event["type"] == "message_end" and event["message"]["role"] == "assistant" and not wrote:
            wrote = True
            assert h.pending_session_writes == ()
            await h.append_message(
                {
                    "role": "custom",
                    "customType": "listener",
                    "content": "listener write",
                    "display": True,
                    "timestamp": 1,
                }
            )
            assert [w.kind for w in h.pending_session_writes] == ["message"]

    h.subscribe(listener)
    await h.prompt("hello")
    assert roles(h.session) == ["user", "assistant", "custom"]
    assert h.pending_session_writes == ()


async def test_every_message_end_is_persisted_before_a_listener_sees_it(tmp_path: Path) -> None:
    with session_kinds("file", tmp_path) as manager:
        h = harness(
            ScriptedModel([reply(tool_call("calculate", {"expression": "2*3"})), reply("6")]),
            manager,
            tools=[CALCULATE],
        )
        seen: list[bool] = []

        def listener(event: dict[str, Any]) -> None:
            if event["type"] == "message_end":
                stored = [e.get("message") for e in manager.get_entries() if e["type"] == "message"]
                seen.append(stored[-1] is event["message"] or stored[-1] == event["message"])

        h.subscribe(listener)
        await h.prompt("hi")
        assert seen == [True, True, True, True]


async def test_save_points_follow_each_turn_and_report_pending_mutations() -> None:
    h = harness(
        ScriptedModel([reply(tool_call("calculate", {"expression": "1"})), reply("done")]), tools=[CALCULATE]
    )
    events = Recorder()
    h.subscribe(events)
    h.subscribe(lambda e: h.set_session_name("named") if e["type"] == "tool_execution_end" else None)
    await h.prompt("go")
    assert [e["hadPendingMutations"] for e in events.of("save_point")] == [True, False]
    assert h.session.get_session_name() == "named"
    turn_ends = [i for i, t in enumerate(events.types()) if t == "turn_end"]
    assert all(events.types()[i + 1] == "save_point" for i in turn_ends)


async def test_wait_for_idle_waits_for_run_settlement_and_awaited_listeners() -> None:
    h = harness(ScriptedModel([reply("ok")]))
    barrier = anyio.Event()
    finished = False

    async def listener(event: dict[str, Any]) -> None:
        nonlocal finished
        if event["type"] == "agent_end":
            await barrier.wait()
            finished = True

    h.subscribe(listener)
    idle = False
    async with anyio.create_task_group() as group:
        group.start_soon(h.prompt, "hello")
        await anyio.sleep(0.01)

        async def waiter() -> None:
            nonlocal idle
            await h.wait_for_idle()
            idle = True

        group.start_soon(waiter)
        await anyio.sleep(0.01)
        assert not idle and not finished
        with pytest.raises(HarnessError) as busy:
            await h.prompt("again")
        assert busy.value.kind == "busy"
        barrier.set()
    assert idle and finished


async def test_runs_tool_call_and_tool_result_hooks_through_the_direct_loop() -> None:
    h = harness(
        ScriptedModel([reply(tool_call("calculate", {"expression": "2 + 2"}, id="call-1"))]),
        tools=[CALCULATE],
    )
    seen: list[tuple[str, str, Any]] = []

    def on_call(event: dict[str, Any]) -> None:
        seen.append((event["toolCallId"], event["toolName"], event["input"]["expression"]))

    h.on("tool_call", on_call)
    h.on(
        "tool_result",
        lambda event: {
            "content": [{"type": "text", "text": "patched result"}],
            "details": {"patched": True},
            "terminate": True,
        },
    )
    last = await h.prompt("hello")
    assert seen == [("call-1", "calculate", "2 + 2")]
    result = next(
        e["message"]
        for e in h.session.get_entries()
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    )
    assert result["content"] == [{"type": "text", "text": "patched result"}] and result["details"] == {
        "patched": True
    }
    assert last["stopReason"] == "toolUse"  # every result asked to terminate: no further request


async def test_a_blocking_tool_call_hook_gives_an_error_result() -> None:
    model = ScriptedModel([reply(tool_call("calculate", {"expression": "1"})), reply("ok")])
    h = harness(model, tools=[CALCULATE])
    h.on("tool_call", lambda event: {"block": True, "reason": "not today"})
    await h.prompt("hello")
    result = model.requests[1].messages[-1]
    assert (
        result["role"] == "toolResult" and result["isError"] and result["content"][0]["text"] == "not today"
    )


async def test_preserves_tool_lists_for_getters_and_update_events() -> None:
    inspect_tool = replace(CALCULATE, name="inspect")
    search_tool = replace(CALCULATE, name="search")
    h = harness(ScriptedModel(), tools=[inspect_tool, search_tool], active_tool_names=["inspect"])
    updates: list[dict[str, Any]] = []
    h.subscribe(lambda e: updates.append(e) if e["type"] == "tools_update" else None)
    tools, active = h.tools, h.active_tools
    tools.pop()
    active.pop()
    assert [t.name for t in h.tools] == ["inspect", "search"] and [t.name for t in h.active_tools] == [
        "inspect"
    ]
    await h.set_active_tools(["search"])
    await h.set_tools([search_tool], ["search"])
    for bad in (lambda: h.set_active_tools(["missing"]), lambda: h.set_active_tools(["search", "search"]),
                lambda: h.set_tools([inspect_tool]), lambda: h.set_tools([inspect_tool, inspect_tool], ["inspect"])):  # fmt: skip
        with pytest.raises(HarnessError) as error:
            bad()
        assert error.value.kind == "invalid_argument"
    assert [{k: u[k] for k in ("toolNames", "previousToolNames", "activeToolNames", "previousActiveToolNames", "source")} for u in updates] == [
        {"toolNames": ["inspect", "search"], "previousToolNames": ["inspect", "search"], "activeToolNames": ["search"],
         "previousActiveToolNames": ["inspect"], "source": "set"},
        {"toolNames": ["search"], "previousToolNames": ["inspect", "search"], "activeToolNames": ["search"],
         "previousActiveToolNames": ["search"], "source": "set"},
    ]  # fmt: skip
    assert [t.name for t in h.tools] == ["search"]
    assert h.session.build_session_context().active_tool_names == ["search"]


def test_validates_constructor_tool_names() -> None:
    manager = SessionManager.in_memory("/w")
    model = ScriptedModel()
    with pytest.raises(HarnessError, match="Unknown tool"):
        AgentHarness(manager, model, tools=[CALCULATE], active_tool_names=["missing"])
    with pytest.raises(HarnessError, match="Duplicate tool"):
        AgentHarness(manager, model, tools=[CALCULATE, CALCULATE])
    with pytest.raises(HarnessError, match="Duplicate active tool"):
        AgentHarness(manager, model, tools=[CALCULATE], active_tool_names=["calculate", "calculate"])


async def test_parallel_tool_results_are_persisted_in_source_order_whatever_order_they_end() -> None:
    slow, fast = delayed_tool("slow", 0.05), delayed_tool("fast", 0.0)
    model = ScriptedModel(
        [reply(tool_call("slow", {"n": 1}, id="a"), tool_call("fast", {"n": 2}, id="b")), reply("done")]
    )
    h = harness(model, tools=[slow, fast])
    events = Recorder()
    h.subscribe(events)
    await h.prompt("go")
    assert [e["toolCallId"] for e in events.of("tool_execution_end")] == ["b", "a"]
    stored = [
        e["message"]
        for e in h.session.get_entries()
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert [m["toolCallId"] for m in stored] == ["a", "b"]
    assert [m["content"][0]["text"] for m in stored] == ["slow:1", "fast:2"]


async def test_steer_and_follow_up_need_a_running_agent() -> None:
    h = harness(ScriptedModel())
    for call in (h.steer, h.follow_up):
        with pytest.raises(HarnessError) as error:
            call("x")
        assert error.value.kind == "invalid_state"


async def test_setters_write_at_once_when_idle_and_only_on_a_real_change() -> None:
    model = ScriptedModel()
    h = harness(model)
    await h.set_thinking_level("high")
    await h.set_thinking_level("high")
    await h.set_model(model.variant(id="other"))
    kinds = [e["type"] for e in h.session.get_entries()]
    assert kinds == ["thinking_level_change", "model_change"]
    context = h.session.build_session_context()
    assert context.thinking_level == "high" and context.model == {"provider": "scripted", "modelId": "other"}


async def test_shutdown_is_permanent_and_drops_queues_and_pending_writes() -> None:
    h = harness(ScriptedModel([reply("x")]))
    h.next_turn("later")
    await h.shutdown()
    await h.shutdown()
    with pytest.raises(HarnessError) as error:
        await h.prompt("hi")
    assert error.value.kind == "invalid_state"


def test_the_sync_runner_drives_the_harness_from_plain_code() -> None:
    model = ScriptedModel([reply("hi"), reply("again")])
    events = Recorder()
    h = harness(model)
    h.subscribe(events)
    with SyncHarness(h) as agent:
        assert agent.prompt("hello")["content"][0]["text"] == "hi"
        agent.call(h.set_thinking_level, "low")
        agent.next_turn("before")
        assert agent.prompt("second")["content"][0]["text"] == "again"
        assert agent.resume() is None
    assert model.requests[1].texts() == ["hello", "before", "second"]
    assert "thinking_level_update" in events.types()
    with pytest.raises(HarnessError, match="shut down"):
        anyio.run(h.prompt, "closing the runner shut the harness down")
