"""Live smoke tests against the real providers; each runs only when its API key is set."""

from __future__ import annotations

import os

import pytest

from sessiontree.llm import AbortSignal, Context, StreamOptions, Tool, complete, convert_to_llm
from sessiontree.llm.models import ModelRegistry
from sessiontree.llm.types import Model

pytestmark = [pytest.mark.live, pytest.mark.anyio]

TOOL = Tool("get_time", "Current time in a city", {"type": "object", "properties": {"city": {"type": "string"}},
                                                    "required": ["city"]})  # fmt: skip
CASES = [
    ("openai", "gpt-4o-mini", "OPENAI_API_KEY"),
    ("anthropic", "claude-haiku-4-5", "ANTHROPIC_API_KEY"),
]


def live_model(provider: str, model_id: str, env: str) -> Model:
    """The registry's model, or a skip when its API key is not set."""
    if not os.environ.get(env):
        pytest.skip(f"{env} is not set")
    model = ModelRegistry().get(provider, model_id)
    assert model is not None
    return model


@pytest.mark.parametrize(("provider", "model_id", "env"), CASES)
async def test_live_text_and_tool_call(provider: str, model_id: str, env: str) -> None:
    model = live_model(provider, model_id, env)
    prompt = {"role": "user", "content": "What time is it in Paris? Use the tool.", "timestamp": 0}
    context = Context(messages=convert_to_llm([prompt]), system_prompt="Be brief.", tools=[TOOL])
    reply = await complete(model, context, StreamOptions(max_tokens=256))
    assert reply["stopReason"] in ("toolUse", "stop"), reply.get("errorMessage")
    assert reply["usage"]["input"] > 0 and reply["usage"]["cost"]["total"] > 0
    calls = [b for b in reply["content"] if b["type"] == "toolCall"]
    if calls:
        result = {"role": "toolResult", "toolCallId": calls[0]["id"], "toolName": "get_time",
                  "content": [{"type": "text", "text": "14:05"}], "isError": False, "timestamp": 1}  # fmt: skip
        follow = Context(
            messages=convert_to_llm([prompt, reply, result]), system_prompt="Be brief.", tools=[TOOL]
        )
        final = await complete(model, follow, StreamOptions(max_tokens=256))
        assert final["stopReason"] == "stop", final.get("errorMessage")
        assert "14" in "".join(b.get("text", "") for b in final["content"])


@pytest.mark.parametrize(("provider", "model_id", "env"), CASES)
async def test_live_abort_before_start(provider: str, model_id: str, env: str) -> None:
    model = live_model(provider, model_id, env)
    signal = AbortSignal()
    signal.abort()
    context = Context(messages=convert_to_llm([{"role": "user", "content": "hi", "timestamp": 0}]))
    reply = await complete(model, context, StreamOptions(signal=signal))
    assert reply["stopReason"] == "aborted"
