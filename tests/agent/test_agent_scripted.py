"""``ScriptedModel`` through the public model layer (``stream``, ``complete``, compaction's ``LlmSummarizer``),
its recordings, errors, overflow errors, usage and abort points; and pi's stream-option tests
(agent-harness-stream.test.ts): request and payload hooks, options frozen per request."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.agent import (
    ScriptedModel,
    ScriptedRequest,
    error_reply,
    overflow_reply,
    reply,
    text,
    thinking,
    tool_call,
)
from sessiontree.compaction import CompactionSettings, LlmSummarizer, compact_session
from sessiontree.llm import AbortSignal, Context, StreamOptions, Tool, complete, is_context_overflow, stream
from tests.agent.support import CALCULATE, harness

pytestmark = pytest.mark.anyio

HELLO = Context(messages=[{"role": "user", "content": "hello", "timestamp": 1}], system_prompt="be brief")  # type: ignore[list-item]


async def test_replies_stream_through_the_same_events_as_the_providers() -> None:
    model = ScriptedModel(
        [reply(thinking("plan", signature="sig"), "Hi", tool_call("read", {"path": "a"}, id="c1"), chunk=2)]
    )
    events = [e async for e in stream(model, HELLO)]
    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert {"thinking_start", "thinking_delta", "thinking_end", "text_start", "text_delta", "text_end",
            "toolcall_start", "toolcall_delta", "toolcall_end"} <= set(kinds)  # fmt: skip
    final = events[-1].message
    assert final is not None
    assert final["content"] == [
        {"type": "thinking", "thinking": "plan", "thinkingSignature": "sig"},
        {"type": "text", "text": "Hi"},
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
    ]
    assert (
        final["stopReason"] == "toolUse" and final["api"] == "scripted" and final["model"] == "scripted-model"
    )
    assert list(final)[:5] == ["role", "content", "api", "provider", "model"]


async def test_requests_are_recorded() -> None:
    model = ScriptedModel([reply("ok")], reasoning=True)
    tool = Tool("read", "read a file", {"type": "object"})
    await complete(
        model,
        Context(messages=HELLO.messages, system_prompt="sys", tools=[tool]),
        StreamOptions(reasoning="high"),
    )
    request = model.requests[0]
    assert (request.system_prompt, request.tool_names, request.reasoning, request.texts()) == (
        "sys",
        ["read"],
        "high",
        ["hello"],
    )


async def test_errors_and_overflow_errors_end_the_reply_and_never_raise() -> None:
    model = ScriptedModel([error_reply("529 overloaded"), overflow_reply()])
    failed = await complete(model, HELLO)
    assert failed["stopReason"] == "error" and failed["errorMessage"] == "529 overloaded"
    assert not is_context_overflow(failed)
    overflow = await complete(model, HELLO)
    assert is_context_overflow(overflow)
    exhausted = await complete(model, HELLO)
    assert exhausted["stopReason"] == "error" and "no reply left" in exhausted["errorMessage"]


async def test_usage_is_as_scripted_or_estimated() -> None:
    model = ScriptedModel([reply("x", usage=(100, 20, 5, 1)), reply("a much longer answer " * 10)])
    scripted = await complete(model, HELLO)
    assert scripted["usage"]["input"] == 100 and scripted["usage"]["totalTokens"] == 126
    estimated = await complete(model, HELLO)
    assert estimated["usage"]["input"] > 0 and estimated["usage"]["output"] >= 50


async def test_a_step_can_be_a_function_of_the_request_sync_or_async() -> None:
    async def later(request: ScriptedRequest) -> Any:
        await anyio.sleep(0)
        return reply(f"you said {request.texts()[-1]}")

    model = ScriptedModel([lambda r: reply(str(len(r.messages))), later])
    assert (await complete(model, HELLO))["content"][0]["text"] == "1"
    assert (await complete(model, HELLO))["content"][0]["text"] == "you said hello"


async def test_an_abort_point_keeps_the_partial_reply() -> None:
    model = ScriptedModel([reply("abcdefgh", chunk=2, hang_after=3)])
    signal = AbortSignal()
    response = stream(model, HELLO, StreamOptions(signal=signal))
    seen = 0
    async for event in response:
        if event.type == "text_delta":
            seen += 1
            if seen == 2:
                signal.abort()
    final = await response.result()
    assert final["stopReason"] == "aborted" and final["content"][0]["text"] == "abcd"


async def test_a_waiting_reply_is_released_by_its_event() -> None:
    gate = anyio.Event()
    model = ScriptedModel([reply("released", wait=gate)])
    result: dict[str, Any] = {}
    async with anyio.create_task_group() as group:

        async def ask() -> None:
            result["reply"] = await complete(model, HELLO)

        group.start_soon(ask)
        await anyio.sleep(0.01)
        assert "reply" not in result
        gate.set()
    assert result["reply"]["content"][0]["text"] == "released"


async def test_variants_share_the_script_and_the_log() -> None:
    first = ScriptedModel([reply("1"), reply("2")], id="a")
    second = first.variant(id="b", context_window=1000)
    await complete(first, HELLO)
    await complete(second, HELLO)
    assert [r.model_id for r in first.requests] == ["a", "b"] and second.context_window == 1000
    assert first != second and first == first


async def test_the_scripted_model_summarizes_for_compaction() -> None:
    manager = SessionManager.in_memory("/w")
    for i in range(3):
        manager.append_message({"role": "user", "content": f"question {i} " + "x" * 100, "timestamp": i})
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "y" * 100}], "api": "a", "provider": "p",
                                "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0}, "stopReason": "stop", "timestamp": i})  # fmt: skip
    summarizer = ScriptedModel([reply("## Goal\nscripted summary")] * 2)
    entry = await compact_session(
        manager, LlmSummarizer(summarizer), settings=CompactionSettings(keep_recent_tokens=1)
    )
    assert entry["summary"].startswith("## Goal\nscripted summary")
    assert "<conversation>" in summarizer.requests[0].texts()[0]


async def test_text_blocks_can_be_given_explicitly() -> None:
    model = ScriptedModel([reply(text("one"), text("two"))])
    final = await complete(model, HELLO)
    assert [b["text"] for b in final["content"]] == ["one", "two"]


# -- pi's agent-harness-stream tests -----------------------------------------------------------------------
async def test_stream_options_are_snapshotted_and_request_hooks_chain_their_patches() -> None:
    model = ScriptedModel([reply("ok")])
    h = harness(
        model, stream_options=StreamOptions(headers={"base": "1", "drop": "x"}, timeout=5.0), api_key="KEY"
    )
    seen: list[Any] = []

    def first(event: dict[str, Any]) -> dict[str, Any]:
        seen.append((event["sessionId"], dict(event["streamOptions"].headers)))
        return {"streamOptions": {"headers": {"added": "2", "drop": None}, "max_retries": 7}}

    def second(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(event["streamOptions"].headers))
        return {"streamOptions": {"timeout": None}}

    h.on("before_provider_request", first)
    h.on("before_provider_request", second)
    await h.prompt("hi")
    options = model.requests[0].options
    assert seen[0] == (h.session.get_session_id(), {"base": "1", "drop": "x"})
    assert seen[1] == {"base": "1", "added": "2"}
    assert (
        options.headers == {"base": "1", "added": "2"}
        and options.max_retries == 7
        and options.timeout is None
    )
    assert options.api_key == "KEY" and options.session_id == h.session.get_session_id()


async def test_headers_none_clears_every_header() -> None:
    model = ScriptedModel([reply("ok")])
    h = harness(model, stream_options=StreamOptions(headers={"a": "1"}))
    h.on("before_provider_request", lambda event: {"streamOptions": {"headers": None}})
    await h.prompt("hi")
    assert model.requests[0].options.headers is None


async def test_updated_stream_options_apply_to_the_next_request_of_the_run_only() -> None:
    model = ScriptedModel([reply(tool_call("calculate", {"expression": "1"})), reply("done")])
    h = harness(model, tools=[CALCULATE], stream_options=StreamOptions(temperature=0.1))
    h.subscribe(
        lambda e: (
            h.set_stream_options(StreamOptions(temperature=0.9))
            if e["type"] == "tool_execution_start"
            else None
        )
    )
    await h.prompt("hi")
    assert [r.options.temperature for r in model.requests] == [0.1, 0.9]


async def test_payload_hooks_chain() -> None:
    model = ScriptedModel([reply("ok")])
    h = harness(model)
    h.on("before_provider_payload", lambda event: {"payload": {**event["payload"], "first": True}})
    h.on(
        "before_provider_payload",
        lambda event: {"payload": {**event["payload"], "second": event["payload"]["first"]}},
    )
    await h.prompt("hi")
    assert model.payloads[0]["first"] is True and model.payloads[0]["second"] is True
