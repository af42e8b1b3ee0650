"""The agent loop on its own (``run_agent_loop``): pi's event sequence, the request pipeline, tool rounds
(parallel, sequential, cut-off replies, terminate, hooks, bad calls), steering and follow-ups, and
``prepare_next_turn``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import anyio
import pytest

from sessiontree.agent import AgentContext, AgentTool, LoopConfig, ScriptedModel, ToolResult, reply, tool_call
from sessiontree.agent.loop import run_agent_loop, run_agent_loop_continue
from sessiontree.agent.types import NextTurn, ToolCallHookResult
from sessiontree.llm import convert_to_llm
from tests.agent.support import CALCULATE, Recorder, delayed_tool

pytestmark = pytest.mark.anyio


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


async def run(
    model: ScriptedModel, tools: list[AgentTool] = (), prompt: str = "go", **config: Any
) -> tuple[Recorder, list[dict[str, Any]]]:  # type: ignore[assignment]
    events = Recorder()

    async def emit(event: dict[str, Any]) -> None:
        events(event)

    context = AgentContext("system", [], list(tools))
    added = await run_agent_loop([user(prompt)], context, LoopConfig(model=model, **config), emit)
    return events, added


async def test_a_plain_reply_gives_pi_s_event_sequence() -> None:
    events, added = await run(ScriptedModel([reply("hello there", chunk=5)]))
    types = events.types()
    assert types[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert types[4] == "message_start" and types[-3:] == ["message_end", "turn_end", "agent_end"]
    updates = events.of("message_update")
    assert [u["assistantMessageEvent"]["type"] for u in updates] == [
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
    ]
    assert [m["role"] for m in added] == ["user", "assistant"]
    assert events.of("agent_end")[0]["messages"] == added


async def test_transform_context_runs_before_convert_to_llm() -> None:
    order: list[str] = []

    def transform(messages: list[dict[str, Any]], _signal: Any) -> list[dict[str, Any]]:
        order.append("transform")
        return [*messages, user("added by transform")]

    def convert(messages: list[dict[str, Any]]) -> Any:
        order.append("convert")
        return convert_to_llm(messages)

    model = ScriptedModel([reply("ok")])
    await run(model, transform_context=transform, convert_to_llm=convert)
    assert order == ["transform", "convert"]
    assert model.requests[0].texts() == ["go", "added by transform"]


async def test_a_reply_cut_off_by_the_length_limit_fails_all_its_tool_calls() -> None:
    ran: list[str] = []

    async def record(_id: str, args: dict[str, Any], _s: Any, _u: Any) -> ToolResult:
        ran.append(args["expression"])
        return ToolResult([{"type": "text", "text": "ran"}])

    tool = replace(CALCULATE, execute=record)
    model = ScriptedModel(
        [
            reply(
                tool_call("calculate", {"expression": "1"}),
                tool_call("calculate", {"expression": "2"}),
                stop_reason="length",
            ),
            reply("retry"),
        ]
    )
    _events, added = await run(model, [tool])
    assert ran == []
    results = [m for m in added if m["role"] == "toolResult"]
    assert len(results) == 2 and all(r["isError"] for r in results)
    assert "hit the output token limit" in results[0]["content"][0]["text"]
    assert len(model.requests) == 2  # the model is asked again


@pytest.mark.parametrize(("terminating", "requests"), [((True, False), 2), ((True, True), 1)])
async def test_the_loop_stops_after_a_tool_round_only_when_every_result_terminates(
    terminating: tuple[bool, bool], requests: int
) -> None:
    def tool(name: str, stop: bool) -> AgentTool:
        async def execute(_id: str, _args: dict[str, Any], _s: Any, _u: Any) -> ToolResult:
            return ToolResult([{"type": "text", "text": name}], terminate=stop)

        return AgentTool(name, name, {"type": "object"}, execute)

    model = ScriptedModel([reply(tool_call("a"), tool_call("b")), reply("after")])
    await run(model, [tool("a", terminating[0]), tool("b", terminating[1])])
    assert len(model.requests) == requests


async def test_parallel_calls_overlap_and_sequential_ones_do_not() -> None:
    active = 0
    peak = 0

    def tool(name: str, mode: Any = "parallel") -> AgentTool:
        async def execute(_id: str, _args: dict[str, Any], _s: Any, _u: Any) -> ToolResult:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await anyio.sleep(0.01)
            active -= 1
            return ToolResult([{"type": "text", "text": name}])

        return AgentTool(name, name, {"type": "object"}, execute, execution_mode=mode)

    def script() -> ScriptedModel:
        return ScriptedModel([reply(tool_call("a"), tool_call("b")), reply("done")])

    await run(script(), [tool("a"), tool("b")])
    assert peak == 2
    peak = 0
    await run(script(), [tool("a"), tool("b")], tool_execution="sequential")
    assert peak == 1
    peak = 0
    await run(script(), [tool("a", "sequential"), tool("b")])
    assert peak == 1


async def test_end_events_come_in_completion_order_and_results_in_source_order() -> None:
    model = ScriptedModel(
        [reply(tool_call("slow", {"n": 1}, id="s"), tool_call("fast", {"n": 2}, id="f")), reply("ok")]
    )
    events, added = await run(model, [delayed_tool("slow", 0.03), delayed_tool("fast", 0.0)])
    assert [e["toolCallId"] for e in events.of("tool_execution_start")] == ["s", "f"]
    assert [e["toolCallId"] for e in events.of("tool_execution_end")] == ["f", "s"]
    assert [m["toolCallId"] for m in added if m["role"] == "toolResult"] == ["s", "f"]


async def test_bad_calls_become_error_results() -> None:
    model = ScriptedModel(
        [
            reply(
                tool_call("missing"), tool_call("calculate", {"expression": 5}), tool_call("calculate", {})
            ),
            reply("ok"),
        ]
    )
    _, added = await run(model, [CALCULATE])
    texts = [m["content"][0]["text"] for m in added if m["role"] == "toolResult"]
    assert texts[0] == "Tool missing not found"
    assert (
        texts[1].startswith('Validation failed for tool "calculate"')
        and "expression: must be string" in texts[1]
    )
    assert "must have required property 'expression'" in texts[2]


async def test_arguments_are_coerced_where_a_model_sends_strings() -> None:
    seen: list[Any] = []

    async def execute(_id: str, args: dict[str, Any], _s: Any, _u: Any) -> ToolResult:
        seen.append(args)
        return ToolResult([])

    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "flag": {"type": "boolean"}}}
    tool = AgentTool("t", "t", schema, execute)
    await run(ScriptedModel([reply(tool_call("t", {"n": "3", "flag": "true"})), reply("ok")]), [tool])
    assert seen == [{"n": 3, "flag": True}]


async def test_hooks_can_block_a_call_and_patch_a_result() -> None:
    async def before(_a: Any, call: dict[str, Any], _args: Any, _c: Any) -> ToolCallHookResult | None:
        return ToolCallHookResult(True, "blocked") if call["id"] == "x" else None

    async def after(
        _a: Any, _call: Any, _args: Any, result: ToolResult, is_error: bool, _c: Any
    ) -> tuple[ToolResult, bool]:
        return ToolResult([{"type": "text", "text": "patched"}], result.details), is_error

    model = ScriptedModel(
        [
            reply(
                tool_call("calculate", {"expression": "1"}, id="x"),
                tool_call("calculate", {"expression": "2"}, id="y"),
            ),
            reply("ok"),
        ]
    )
    _, added = await run(model, [CALCULATE], before_tool_call=before, after_tool_call=after)
    results = {
        m["toolCallId"]: (m["content"][0]["text"], m["isError"]) for m in added if m["role"] == "toolResult"
    }
    assert results == {"x": ("blocked", True), "y": ("patched", False)}


async def test_tool_progress_becomes_update_events_until_the_tool_settles() -> None:
    async def execute(_id: str, _args: dict[str, Any], _s: Any, update: Any) -> ToolResult:
        await update(ToolResult([{"type": "text", "text": "halfway"}]))
        return ToolResult([{"type": "text", "text": "done"}])

    tool = AgentTool("slow", "slow", {"type": "object"}, execute)
    events, _ = await run(ScriptedModel([reply(tool_call("slow")), reply("ok")]), [tool])
    updates = events.of("tool_execution_update")
    assert [u["partialResult"]["content"][0]["text"] for u in updates] == ["halfway"]


async def test_steering_is_polled_after_each_turn_and_follow_ups_when_the_loop_would_stop() -> None:
    steer: list[list[dict[str, Any]]] = [[], [user("steered")]]  # polled at the start, then after each turn
    follow = [[user("followed")], []]
    calls: list[str] = []

    async def steering() -> list[dict[str, Any]]:
        calls.append("steer")
        return steer.pop(0) if steer else []

    async def follow_ups() -> list[dict[str, Any]]:
        calls.append("follow")
        return follow.pop(0) if follow else []

    model = ScriptedModel([reply("1"), reply("2"), reply("3")])
    _, added = await run(model, get_steering_messages=steering, get_follow_up_messages=follow_ups)
    assert [r.texts() for r in model.requests] == [["go"], ["go", "steered"], ["go", "steered", "followed"]]
    assert [m["role"] for m in added] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert calls[:2] == ["steer", "steer"] and "follow" in calls


async def test_prepare_next_turn_swaps_the_model_and_thinking_level_for_the_next_request() -> None:
    first = ScriptedModel([reply(tool_call("calculate", {"expression": "1"})), reply("done")], id="first")
    second = first.variant(id="second")

    async def prepare(_turn: Any) -> NextTurn:
        return NextTurn(model=second, thinking_level="high")

    await run(first, [CALCULATE], prepare_next_turn=prepare)
    assert [(r.model_id, r.reasoning) for r in first.requests] == [("first", None), ("second", "high")]


async def test_an_error_reply_ends_the_run_after_its_turn() -> None:
    from sessiontree.agent import error_reply

    events, added = await run(ScriptedModel([error_reply("boom")]))
    assert events.types()[-2:] == ["turn_end", "agent_end"]
    assert added[-1]["stopReason"] == "error" and added[-1]["errorMessage"] == "boom"


async def test_continue_needs_a_last_message_that_is_not_an_assistant_reply() -> None:
    async def emit(_event: dict[str, Any]) -> None:
        pass

    model = ScriptedModel([reply("again")])
    config = LoopConfig(model=model)
    with pytest.raises(ValueError, match="no messages"):
        await run_agent_loop_continue(AgentContext(None, []), config, emit)
    with pytest.raises(ValueError, match="assistant"):
        await run_agent_loop_continue(
            AgentContext(None, [{"role": "assistant", "content": []}]), config, emit
        )
    added = await run_agent_loop_continue(AgentContext(None, [user("pending")]), config, emit)
    assert [m["role"] for m in added] == ["assistant"]
