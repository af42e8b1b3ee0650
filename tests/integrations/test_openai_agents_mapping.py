"""The Responses-item mapping on its own: what a stored message looks like, and that nothing kept only for the
SDK (residual fields, verbatim items) reaches any provider's request, while the content does."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.compaction import CompactionSettings, prepare_compaction
from sessiontree.integrations.openai_agents import TreeSession
from sessiontree.integrations.openai_agents.mapping import (
    EXTRA_KEY,
    ITEM_CUSTOM_TYPE,
    Mismatch,
    items_to_records,
    message_items,
)
from sessiontree.llm import Context, StreamOptions, convert_to_llm, estimate_tokens
from sessiontree.llm.providers import anthropic, openai_completions, openai_responses
from sessiontree.llm.types import Model

SECRET = "SECRET-ONLY-FOR-THE-SDK"

CONVERSATION: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer in French."},
    {"role": "user", "content": [{"type": "input_text", "text": "What is in this file?"}]},
    {
        "type": "reasoning",
        "id": f"rs_{SECRET}",
        "summary": [{"type": "summary_text", "text": "The user wants the file read."}],
        "encrypted_content": SECRET,
    },
    {
        "type": "function_call",
        "id": f"fc_{SECRET}",
        "call_id": "call_1",
        "name": "read",
        "arguments": '{"path": "a.txt"}',
    },
    {"type": "web_search_call", "id": f"ws_{SECRET}", "status": "completed", "action": {"type": "search"}},
    {"type": "function_call_output", "call_id": "call_1", "output": "bonjour"},
    {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{SECRET}",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Le fichier dit bonjour.", "annotations": [], "logprobs": []}
        ],
    },
    {"type": "item_reference", "id": f"ref_{SECRET}"},
]


def stored(items: list[dict[str, Any]]) -> SessionManager:
    manager = SessionManager.in_memory("/proj")
    for record in items_to_records(items, timestamp=1, model="gpt-test"):
        if record.message is not None:
            manager.append_message(record.message)
        else:
            manager.append_custom_entry(str(record.custom_type), record.data)
    return manager


def test_the_file_holds_pi_messages_and_custom_entries() -> None:
    manager = stored(CONVERSATION)
    entries = manager.get_entries()
    shapes = [
        e["message"]["role"] if e["type"] == "message" else f"custom:{e['customType']}" for e in entries
    ]
    assert shapes == [
        "custom",
        "user",
        "assistant",  # reasoning + function_call: one reply
        f"custom:{ITEM_CUSTOM_TYPE}",  # web_search_call: no pi equivalent
        "toolResult",
        "assistant",
        f"custom:{ITEM_CUSTOM_TYPE}",
    ]
    reply = entries[2]["message"]
    assert [b["type"] for b in reply["content"]] == ["thinking", "toolCall"]
    assert reply["content"][1] == {
        "type": "toolCall",
        "id": "call_1",
        "name": "read",
        "arguments": {"path": "a.txt"},
    }
    assert reply["stopReason"] == "toolUse" and reply["provider"] == "openai-agents"
    # the arguments were not compact JSON: their exact text is kept for the SDK
    assert reply[EXTRA_KEY][1]["arguments"] == '{"path": "a.txt"}'
    assert entries[4]["message"]["toolName"] == "read"
    assert EXTRA_KEY not in entries[4]["message"]  # the plain conversion gives the item back
    assert EXTRA_KEY not in entries[0]["message"]


def test_context_tokens_and_compaction_see_the_content() -> None:
    manager = stored(CONVERSATION * 20)
    context = manager.build_session_context()
    roles = {m["role"] for m in context.messages}
    assert roles == {"custom", "user", "assistant", "toolResult"}
    # Replies carry a zero usage unless the SDK measured one (see the Runner tests): estimates count content.
    assert sum(estimate_tokens(m) for m in context.messages) > 20 * 15
    preparation = prepare_compaction(manager.get_branch(), CompactionSettings(keep_recent_tokens=50))
    assert preparation is not None and preparation.has_content
    assert {m["role"] for m in preparation.messages_to_summarize} == roles


MODELS = {
    "openai-completions": openai_completions,
    "openai-responses": openai_responses,
    "anthropic-messages": anthropic,
}


@pytest.mark.parametrize("api", sorted(MODELS))
@pytest.mark.parametrize("model_id", ["gpt-test", "other-model"])
def test_sdk_only_fields_never_reach_a_provider_request(api: str, model_id: str) -> None:
    manager = stored(CONVERSATION)
    model = Model(
        id=model_id, api=api, provider="openai-agents", base_url="http://127.0.0.1:9", reasoning=True
    )  # type: ignore[arg-type]
    context = Context(messages=convert_to_llm(manager.build_session_context().messages), system_prompt="sys")
    built = MODELS[api].build_request(model, context, StreamOptions(api_key="k"))  # type: ignore[attr-defined]
    body = json.dumps(built)
    assert SECRET not in body
    for text in ("Answer in French.", "What is in this file?", "bonjour", "Le fichier dit bonjour.", "a.txt"):
        assert text in body


def test_items_come_back_and_a_broken_residual_is_reported() -> None:
    manager = stored(CONVERSATION)
    got: list[Any] = []
    for entry in manager.get_entries():
        got.extend(message_items(entry["message"]) if entry["type"] == "message" else [entry["data"]])
    assert got == CONVERSATION
    reply = manager.get_entries()[2]["message"]
    broken = {**reply, EXTRA_KEY: reply[EXTRA_KEY][:1]}  # one residual for two blocks
    with pytest.raises(Mismatch):
        message_items(broken)


def test_pi_messages_from_elsewhere_map_the_plain_way() -> None:
    signature = json.dumps({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"})
    reply = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "", "thinkingSignature": signature},
            {"type": "text", "text": "hi"},
            {"type": "toolCall", "id": "call_9|fc_9", "name": "ls", "arguments": {}},
        ],
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5",
        "usage": {},
        "stopReason": "toolUse",
        "timestamp": 1,
    }
    assert message_items(reply) == [
        json.loads(signature),
        {"role": "assistant", "content": "hi"},
        {"type": "function_call", "call_id": "call_9", "name": "ls", "arguments": "{}"},
    ]
    result = {
        "role": "toolResult",
        "toolCallId": "call_9|fc_9",
        "toolName": "ls",
        "content": [{"type": "text", "text": "a"}],
        "isError": False,
        "timestamp": 2,
    }
    assert message_items(result) == [{"type": "function_call_output", "call_id": "call_9", "output": "a"}]
    shell = {
        "role": "bashExecution",
        "command": "ls",
        "output": "a",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 3,
    }
    assert message_items(shell) == [{"role": "user", "content": "Ran `ls`\n```\na\n```"}]
    assert message_items({**reply, "stopReason": "error"}) == []


def test_a_hand_edited_residual_is_read_plainly_and_reported(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.jsonl"

    async def write() -> None:
        session = TreeSession.open(path)
        await session.add_items(CONVERSATION[2:4])  # reasoning + function_call: one reply with residuals
        session.close()

    anyio.run(write)
    text = path.read_text(encoding="utf-8").replace('"openaiAgents":[{', '"openaiAgents":[{"role":"x"},{', 1)
    path.write_text(text, encoding="utf-8")

    async def read() -> list[Any]:
        session = TreeSession.open(path)
        items = await session.get_items()
        session.close()
        return items

    with caplog.at_level("WARNING"):
        items = anyio.run(read)
    assert [i.get("type") for i in items] == [None, "function_call"]  # the thinking as text, the call
    assert "read as a plain pi message" in caplog.text and str(path) in caplog.text
