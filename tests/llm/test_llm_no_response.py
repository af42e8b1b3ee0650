"""A stream that closes before the provider says how the reply ended is an error reply, never an empty
finished one: each provider, through its SDK, against a loopback server that sends nothing, or speaks
another API's dialect (Responses requests answered with Chat Completions chunks, as a ``--base-url`` server
did)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sessiontree.llm import StreamOptions, complete
from sessiontree.llm.types import Api
from tests.llm.fake_servers import SseReply, anthropic_sse, chat_completions_sse, fake_server, responses_sse
from tests.llm.wire_support import APIS, context_for, model_for

pytestmark = pytest.mark.anyio

OPTIONS = StreamOptions(api_key="test-key", max_retries=0)
NO_RESPONSE = "the stream ended without a response"


async def reply_to(api: Api, wire: SseReply) -> dict[str, Any]:
    with fake_server() as server:
        server.replies.append(wire)
        model = model_for(api, server.url)
        with anyio.fail_after(30):
            message = await complete(model, context_for(model), OPTIONS)
    return dict(message)


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_with_no_event_is_an_error_reply(api: Api) -> None:
    message = await reply_to(api, SseReply([]))
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith(NO_RESPONSE), message["errorMessage"]
    assert message["content"] == []


OTHER_DIALECT = {
    "openai-responses": chat_completions_sse(text=["Hello from a Chat Completions server"]),
    "anthropic-messages": responses_sse(text=["Hello from a Responses server"]),
    "openai-completions": SseReply([(None, "[DONE]")]),  # the end marker and nothing else
}


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_in_another_dialect_is_an_error_reply(api: Api) -> None:
    message = await reply_to(api, OTHER_DIALECT[api])
    assert message["stopReason"] == "error"
    assert NO_RESPONSE in message["errorMessage"]


async def test_an_anthropic_stream_cut_before_message_stop_is_an_error_reply() -> None:
    wire = anthropic_sse(text=["Half a rep"])
    wire.events = wire.events[:-2]  # no message_delta, no message_stop
    message = await reply_to("anthropic-messages", wire)
    assert message["stopReason"] == "error" and NO_RESPONSE in message["errorMessage"]
    assert [b.get("text") for b in message["content"]] == ["Half a rep"]  # what came is kept


async def test_a_finished_empty_reply_stays_a_finished_reply() -> None:
    message = await reply_to("openai-completions", chat_completions_sse(text=[]))
    assert message["stopReason"] == "stop" and "errorMessage" not in message
