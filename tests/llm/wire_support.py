"""Shared data for the wire tests: models per API and a conversation exercising every message feature."""

from __future__ import annotations

from typing import Any

from sessiontree.format.pi_json import dumps
from sessiontree.llm import Context, Model, ModelCost, Tool, convert_to_llm
from sessiontree.llm.types import Api

APIS: tuple[Api, ...] = ("openai-completions", "openai-responses", "anthropic-messages")

# A 1x1 transparent PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

READ_TOOL = Tool(
    name="read",
    description="Read a file from the workspace",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File path"}},
        "required": ["path"],
    },
)

SYSTEM_PROMPT = "You are a careful coding agent."


def model_for(api: Api, base_url: str, *, model_id: str = "test-model", provider: str = "test") -> Model:
    return Model(
        id=model_id,
        api=api,
        provider=provider,
        base_url=base_url + ("" if api == "anthropic-messages" else "/v1"),
        reasoning=True,
        input=("text", "image"),
        cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
        context_window=200_000,
        max_tokens=8192,
    )


def signatures(api: Api) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(thinking block, tool-call id, text block) as each API's provider stores them."""
    thinking: dict[str, Any] = {
        "type": "thinking",
        "thinking": "The config is in config.json; read it first.",
    }
    text: dict[str, Any] = {"type": "text", "text": "Let me read the config."}
    if api == "anthropic-messages":
        thinking["thinkingSignature"] = "EqQBCkYIBxgCKkCsignature"
        call_id = "toolu_01A"
    elif api == "openai-responses":
        item = {
            "id": "rs_01",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": thinking["thinking"]}],
            "encrypted_content": "gAAAAencrypted",
        }
        thinking["thinkingSignature"] = dumps(item)
        text["textSignature"] = "msg_01"
        call_id = "call_01|fc_01"
    else:
        thinking["thinkingSignature"] = "reasoning_content"
        call_id = "call_01"
    return thinking, call_id, text


def usage(input_: int, output: int) -> dict[str, Any]:
    return {
        "input": input_,
        "output": output,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": input_ + output,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def conversation(model: Model) -> list[dict[str, Any]]:
    """Runtime messages: compaction summary, image, same-model thinking + tool call + result, an aborted
    turn, a branch summary, and a final prompt."""
    thinking, call_id, text = signatures(model.api)
    identity = {"api": model.api, "provider": model.provider, "model": model.id}
    return [
        {"role": "compactionSummary", "summary": "## Goal\nEnable verbose logging.", "tokensBefore": 50000,
         "timestamp": 1_700_000_000_000},
        {"role": "user", "content": [{"type": "text", "text": "Here is the error screen."},
                                     {"type": "image", "data": PNG, "mimeType": "image/png"}],
         "timestamp": 1_700_000_001_000},
        {"role": "assistant", "content": [thinking, text, {"type": "toolCall", "id": call_id, "name": "read",
                                                          "arguments": {"path": "config.json"}}],
         **identity, "usage": usage(100, 20), "stopReason": "toolUse", "timestamp": 1_700_000_002_000},
        {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
         "content": [{"type": "text", "text": '{"verbose": false}'}], "isError": False,
         "timestamp": 1_700_000_003_000},
        {"role": "assistant", "content": [{"type": "text", "text": "I will now edi"}], **identity,
         "usage": usage(0, 0), "stopReason": "aborted", "errorMessage": "Request was aborted",
         "timestamp": 1_700_000_004_000},
        {"role": "branchSummary", "summary": "Tried rewriting the config as YAML; the loader rejected it.",
         "fromId": "a1b2c3d4", "timestamp": 1_700_000_005_000},
        {"role": "user", "content": "Set verbose to true.", "timestamp": 1_700_000_006_000},
    ]  # fmt: skip


def context_for(model: Model) -> Context:
    return Context(
        messages=convert_to_llm(conversation(model)), system_prompt=SYSTEM_PROMPT, tools=[READ_TOOL]
    )
