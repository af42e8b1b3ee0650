"""Wire tests: each provider, through its official SDK, against a loopback server speaking that API.

Covers the exact request payloads (snapshots), streamed reassembly, usage and cost, aborts, HTTP errors and
context-overflow errors. Nothing here leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from sessiontree.llm import AbortSignal, StreamEvent, StreamOptions, complete, stream
from sessiontree.llm.overflow import is_context_overflow
from sessiontree.llm.types import Api
from tests.llm.fake_servers import (
    FakeServer,
    JsonReply,
    RawReply,
    SseReply,
    fake_server,
    reply_for,
)
from tests.llm.wire_support import APIS, context_for, model_for

pytestmark = pytest.mark.anyio

OPTIONS: dict[str, Any] = {"api_key": "test-key", "max_retries": 0}


async def collect(api: Api, server: FakeServer, **options: Any) -> list[StreamEvent]:
    model = model_for(api, server.url)
    events: list[StreamEvent] = []
    with anyio.fail_after(30):
        async for event in stream(model, context_for(model), StreamOptions(**{**OPTIONS, **options})):
            events.append(event)
    return events


# -- request payloads -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_request_payload(api: Api, snapshot: Any) -> None:
    """System prompt, tools, a tool call + result, an image, a thinking block, a compaction summary and a
    branch summary, as the official SDK puts them on the wire."""
    with fake_server() as server:
        server.replies.append(reply_for(api, text=["ok"]))
        seen: list[dict[str, Any]] = []
        await collect(api, server, reasoning="medium", session_id="session-1", on_payload=seen.append)
        request = server.requests[-1]
    assert request.body == json.loads(json.dumps(seen[0]))  # on_payload sees exactly what is sent
    assert (
        request.headers["authorization"] == "Bearer test-key"
        or request.headers.get("x-api-key") == "test-key"
    )
    wire = {
        "path": request.path,
        "anthropic-beta": request.headers.get("anthropic-beta"),
        "body": request.body,
    }
    assert wire == snapshot


@pytest.mark.parametrize("api", APIS)
async def test_request_keeps_invariants(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(reply_for(api, text=["ok"]))
        await collect(api, server)
        body = server.requests[-1].body
    text = json.dumps(body)
    assert "I will now edi" not in text  # the aborted turn is not sent
    assert "<branch_exploration_summary>" in text
    assert "The conversation history before this point was compacted" in text
    assert "iVBORw0KGgo" in text  # the image


# -- streaming ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_stream_reassembles_thinking_text_and_tool_calls(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(
            reply_for(api, thinking=["Let me ", "think."], text=["Hel", "lo ", "there"],
                      tool_calls=[("call_9", "read", ['{"pa', 'th": "a', '.txt"}'])], stop="toolUse")
        )  # fmt: skip
        events = await collect(api, server, reasoning="high")
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert [e.delta for e in events if e.type == "thinking_delta"] == ["Let me ", "think."]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo ", "there"]
    assert [e.delta for e in events if e.type == "toolcall_delta"] == ['{"pa', 'th": "a', '.txt"}']
    for kind in ("thinking", "text", "toolcall"):
        assert types.index(f"{kind}_start") < types.index(f"{kind}_delta") < types.index(f"{kind}_end")
    partial_args = [e.partial["content"][2]["arguments"] for e in events if e.type == "toolcall_delta"]
    assert partial_args[-1] == {"path": "a.txt"}
    message = events[-1].message
    assert message is not None
    content = message["content"]
    assert content[0]["type"] == "thinking" and content[0]["thinking"] == "Let me think."
    assert content[0].get("thinkingSignature")  # replayable next turn
    assert content[1]["type"] == "text" and content[1]["text"] == "Hello there"
    call = content[2]
    assert call["type"] == "toolCall" and call["name"] == "read" and call["arguments"] == {"path": "a.txt"}
    assert call["id"].startswith("call_9")
    assert (message["api"], message["provider"], message["model"]) == (api, "test", "test-model")
    assert message["stopReason"] == "toolUse"
    assert message["responseId"] in ("chatcmpl-123", "resp_123", "msg_123")
    assert list(message) == [k for k in ("role", "content", "api", "provider", "model", "responseModel",
                                          "responseId", "usage", "stopReason", "timestamp") if k in message]  # fmt: skip


@pytest.mark.parametrize("api", APIS)
async def test_usage_and_cost(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(reply_for(api, text=["hi"], usage=(1000, 300, 200, 50)))
        model = model_for(api, server.url)
        message = await complete(model, context_for(model), StreamOptions(**OPTIONS))
    cache_write = 50 if api == "anthropic-messages" else 0  # OpenAI reports no cache writes
    usage = message["usage"]
    assert {k: usage[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == {  # type: ignore[literal-required]
        "input": 1000, "output": 300, "cacheRead": 200, "cacheWrite": cache_write,
        "totalTokens": 1500 + cache_write,
    }  # fmt: skip
    cost = usage["cost"]
    assert cost["input"] == pytest.approx(1000 * 3 / 1e6)
    assert cost["output"] == pytest.approx(300 * 15 / 1e6)
    assert cost["cacheRead"] == pytest.approx(200 * 0.3 / 1e6)
    assert cost["cacheWrite"] == pytest.approx(cache_write * 3.75 / 1e6)
    assert cost["total"] == pytest.approx(
        cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    )
    assert message["stopReason"] == "stop"


@pytest.mark.parametrize("api", APIS)
async def test_length_stop(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(reply_for(api, text=["cut"], stop="length"))
        events = await collect(api, server)
    assert events[-1].type == "done" and events[-1].reason == "length"


# -- aborts -----------------------------------------------------------------------------------------------------


def _hold_after_first(reply: SseReply, marker: str) -> SseReply:
    index = next(i for i, (_, data) in enumerate(reply.events) if marker in json.dumps(data))
    reply.hold_after = index + 1
    return reply


@pytest.mark.parametrize("api", APIS)
async def test_abort_signal_mid_stream_keeps_partial_content(api: Api) -> None:
    """The server stalls after the first text delta; the signal fires while the SDK waits for more."""
    with fake_server() as server:
        server.replies.append(_hold_after_first(reply_for(api, text=["Partial ", "rest"]), "Partial "))
        signal = AbortSignal()
        model = model_for(api, server.url)
        events: list[StreamEvent] = []

        async def abort_when_server_stalls() -> None:
            await anyio.to_thread.run_sync(server.held.wait, 20)
            signal.abort()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                async for event in stream(model, context_for(model), StreamOptions(**OPTIONS, signal=signal)):
                    events.append(event)
                    if event.type == "text_delta":
                        tg.start_soon(abort_when_server_stalls)
    last = events[-1]
    assert last.type == "error" and last.reason == "aborted"
    assert last.message is not None
    assert last.message["stopReason"] == "aborted"
    assert last.message["errorMessage"] == "Request was aborted"
    assert last.message["content"] == [{"type": "text", "text": "Partial "}]


@pytest.mark.parametrize("api", APIS)
async def test_abort_between_events(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(reply_for(api, text=["one ", "two ", "three"]))
        signal = AbortSignal()
        model = model_for(api, server.url)
        seen: list[StreamEvent] = []
        with anyio.fail_after(30):
            async for event in stream(model, context_for(model), StreamOptions(**OPTIONS, signal=signal)):
                seen.append(event)
                if event.type == "text_delta":
                    signal.abort()
    assert seen[-1].type == "error" and seen[-1].reason == "aborted"
    assert seen[-1].partial["content"][0]["text"] == "one "


@pytest.mark.parametrize("api", APIS)
async def test_abort_before_start_sends_nothing(api: Api) -> None:
    signal = AbortSignal()
    signal.abort()
    with fake_server() as server:
        events = await collect(api, server, signal=signal)
        assert server.requests == []
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].message is not None and events[-1].message["stopReason"] == "aborted"


@pytest.mark.parametrize("api", APIS)
async def test_anyio_cancellation_records_aborted_message(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(_hold_after_first(reply_for(api, text=["Partial ", "rest"]), "Partial "))
        model = model_for(api, server.url)
        response = stream(model, context_for(model), StreamOptions(**OPTIONS))
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def cancel_when_server_stalls() -> None:
                    await anyio.to_thread.run_sync(server.held.wait, 20)
                    tg.cancel_scope.cancel()

                async for event in response:
                    if event.type == "text_delta":
                        tg.start_soon(cancel_when_server_stalls)
    message = response.message
    assert message is not None
    assert message["stopReason"] == "aborted"
    assert message["content"] == [{"type": "text", "text": "Partial "}]


# -- errors -----------------------------------------------------------------------------------------------------

AUTH_ERRORS: dict[str, tuple[dict[str, Any], str]] = {
    "openai-completions": (
        {"error": {"message": "Incorrect API key provided: test-key.", "type": "invalid_request_error",
                   "param": None, "code": "invalid_api_key"}},
        "401 Incorrect API key provided: test-key.",
    ),
    "openai-responses": (
        {"error": {"message": "Incorrect API key provided: test-key.", "type": "invalid_request_error",
                   "param": None, "code": "invalid_api_key"}},
        "401 Incorrect API key provided: test-key.",
    ),
    "anthropic-messages": (
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
        '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
    ),
}  # fmt: skip


@pytest.mark.parametrize("api", APIS)
async def test_http_error_ends_stream_with_error(api: Api) -> None:
    body, expected = AUTH_ERRORS[api]
    with fake_server() as server:
        server.replies.append(JsonReply(401, body))
        events = await collect(api, server)
    assert [e.type for e in events] == ["start", "error"]
    message = events[-1].message
    assert message is not None
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == expected
    assert message["content"] == []
    assert not is_context_overflow(message, 200_000)


@pytest.mark.parametrize("api", APIS)
async def test_error_without_body(api: Api) -> None:
    with fake_server() as server:
        server.replies.append(RawReply(400, ""))
        events = await collect(api, server)
    message = events[-1].message
    assert message is not None and message["stopReason"] == "error"
    assert message["errorMessage"] == "400 status code (no body)"
    assert is_context_overflow(message, 0)  # pi counts a bodiless 400/413 as an overflow


# Real error bodies as each provider (or compatible server) returns them for an oversized prompt.
OVERFLOW_BODIES: list[tuple[Api, int, Any]] = [
    ("openai-completions", 400, {"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                   "130517 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    ("openai-completions", 400, {  # vLLM
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
                   "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages "
                   "or completion.",
        "type": "BadRequestError", "param": None, "code": 400}),
    ("openai-completions", 400, {"error": {  # llama.cpp server
        "code": 400, "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}),
    ("openai-completions", 400, {"error": {  # OpenRouter
        "message": "This endpoint's maximum context length is 131072 tokens. However, you requested about "
                   "140000 tokens (130000 of text input, 10000 in the output). Please reduce the length of "
                   "either one, or use the \"middle-out\" transform to compress your prompt automatically.",
        "code": 400}}),
    ("openai-responses", 400, {"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
    ("anthropic-messages", 400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 213462 tokens > 200000 maximum"},
        "request_id": "req_011CUGxV9"}),
    ("anthropic-messages", 413, {"type": "error", "error": {
        "type": "request_too_large", "message": "Request exceeds the maximum allowed number of bytes."}}),
]  # fmt: skip


@pytest.mark.parametrize(("api", "status", "body"), OVERFLOW_BODIES)
async def test_context_overflow_error(api: Api, status: int, body: Any) -> None:
    with fake_server() as server:
        server.replies.append(JsonReply(status, body))
        events = await collect(api, server)
    message = events[-1].message
    assert message is not None
    assert events[-1].type == "error" and message["stopReason"] == "error"
    assert message["errorMessage"].startswith(f"{status} ")
    assert is_context_overflow(message, 200_000)


async def test_rate_limit_is_not_overflow() -> None:
    body = {"error": {"message": "Rate limit reached: too many tokens per minute", "type": "tokens",
                      "code": "rate_limit_exceeded"}}  # fmt: skip
    with fake_server() as server:
        server.replies.append(JsonReply(429, body))
        events = await collect("openai-completions", server)
    message = events[-1].message
    assert message is not None and message["stopReason"] == "error"
    assert not is_context_overflow(message, 200_000)


MID_STREAM_ERRORS: dict[str, tuple[tuple[str | None, Any], str]] = {
    "openai-completions": ((None, {"error": {"message": "Upstream model crashed", "type": "server_error"}}),
                           "Upstream model crashed"),
    "openai-responses": (("error", {"type": "error", "code": "server_error", "message": "The server had an error",
                                    "param": None, "sequence_number": 99}), "The server had an error"),
    "anthropic-messages": (("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                           '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
}  # fmt: skip


@pytest.mark.parametrize("api", APIS)
async def test_error_event_mid_stream_keeps_partial_text(api: Api) -> None:
    event, expected = MID_STREAM_ERRORS[api]
    reply = _hold_after_first(reply_for(api, text=["Partial ", "rest"]), "Partial ")
    assert reply.hold_after is not None
    reply.events = [*reply.events[: reply.hold_after], event]
    reply.hold_after = None
    with fake_server() as server:
        server.replies.append(reply)
        events = await collect(api, server)
    message = events[-1].message
    assert message is not None and events[-1].type == "error"
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == expected
    assert message["content"][0]["text"] == "Partial "


async def test_missing_api_key_is_an_error_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    model = model_for("anthropic-messages", "http://127.0.0.1:9", provider="anthropic")
    message = await complete(model, context_for(model), StreamOptions(max_retries=0))
    assert message["stopReason"] == "error"
    assert (
        message["errorMessage"]
        == "No API key for provider anthropic: set ANTHROPIC_API_KEY or ANTHROPIC_OAUTH_TOKEN"
    )


async def test_connection_refused_is_an_error_message() -> None:
    with fake_server() as server:
        url = server.url
    model = model_for("openai-completions", url)
    message = await complete(model, context_for(model), StreamOptions(**OPTIONS))
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "Connection error."
