"""Provider normalization: failed turns, tool-call pairing, images for text-only models, foreign thinking."""

from __future__ import annotations

from typing import Any

from sessiontree.llm import Model
from sessiontree.llm.transform import IMAGE_PLACEHOLDER, NO_RESULT_TEXT, transform_messages

MODEL = Model(id="m", api="anthropic-messages", provider="anthropic", input=("text", "image"))
TEXT_ONLY = Model(id="m", api="anthropic-messages", provider="anthropic", input=("text",))


def assistant(
    *content: dict[str, Any],
    stop: str = "toolUse",
    model: str = "m",
    provider: str = "anthropic",
    api: str = "anthropic-messages",
) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content), "api": api, "provider": provider, "model": model,
            "usage": {}, "stopReason": stop, "timestamp": 1}  # fmt: skip


def call(call_id: str, name: str = "read") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {}}


def result(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 2}  # fmt: skip


def user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 3}


def roles(messages: list[Any]) -> list[str]:
    return [m["role"] for m in messages]


def test_failed_turns_are_skipped_with_their_results() -> None:
    msgs = [
        user(),
        assistant(call("a"), stop="error"),
        result("a"),
        assistant(call("b"), stop="aborted"),
        user(),
    ]
    out = transform_messages(msgs, MODEL, now=lambda: 9)  # type: ignore[arg-type]
    assert roles(out) == ["user", "user"]


def test_missing_results_are_synthesized_before_next_turn_and_at_the_end() -> None:
    msgs = [user(), assistant(call("a"), call("b")), result("b"), user("next"), assistant(call("c"))]
    out = transform_messages(msgs, MODEL, now=lambda: 9)  # type: ignore[arg-type]
    assert roles(out) == ["user", "assistant", "toolResult", "toolResult", "user", "assistant", "toolResult"]
    synthetic = out[3]
    assert synthetic == {
        "role": "toolResult",
        "toolCallId": "a",
        "toolName": "read",
        "content": [{"type": "text", "text": NO_RESULT_TEXT}],
        "isError": True,
        "timestamp": 9,
    }
    assert out[6]["toolCallId"] == "c"  # type: ignore[typeddict-item]


def test_orphan_and_duplicate_results_are_dropped() -> None:
    msgs = [user(), result("ghost"), assistant(call("a")), result("a"), result("a", "again"), result("zzz")]
    out = transform_messages(msgs, MODEL)  # type: ignore[arg-type]
    assert roles(out) == ["user", "assistant", "toolResult"]
    assert out[2]["content"][0]["text"] == "ok"  # type: ignore[index, typeddict-item]


def test_images_become_placeholders_for_text_only_models() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    msgs = [{"role": "user", "content": [{"type": "text", "text": "see"}, image, image], "timestamp": 1},
            assistant(call("a")), {**result("a"), "content": [image]}]  # fmt: skip
    out = transform_messages(msgs, TEXT_ONLY)  # type: ignore[arg-type]
    assert out[0]["content"] == [{"type": "text", "text": "see"}, {"type": "text", "text": IMAGE_PLACEHOLDER}]
    assert out[2]["content"] == [{"type": "text", "text": IMAGE_PLACEHOLDER}]
    kept = transform_messages(msgs, MODEL)  # type: ignore[arg-type]
    assert kept[0] is msgs[0]


def test_thinking_kept_for_same_model_and_turned_into_text_for_another() -> None:
    signed = {"type": "thinking", "thinking": "plan", "thinkingSignature": "sig"}
    redacted = {
        "type": "thinking",
        "thinking": "[Reasoning redacted]",
        "thinkingSignature": "opaque",
        "redacted": True,
    }
    empty = {"type": "thinking", "thinking": "  ", "thinkingSignature": "sig2"}
    text = {"type": "text", "text": "answer", "textSignature": "msg_1"}
    tool = {**call("a"), "thoughtSignature": "ts"}
    msgs = [user(), assistant(signed, redacted, empty, text, tool), result("a")]
    same = transform_messages(msgs, MODEL)  # type: ignore[arg-type]
    assert same[1]["content"] == [signed, redacted, empty, text, tool]  # type: ignore[typeddict-item]
    other = Model(id="gpt", api="openai-responses", provider="openai")
    out = transform_messages(msgs, other)  # type: ignore[arg-type]
    assert out[1]["content"] == [  # type: ignore[typeddict-item]
        {"type": "text", "text": "plan"},
        {"type": "text", "text": "answer"},
        call("a"),
    ]
    assert msgs[1]["content"][4] == tool  # the stored message is untouched


def test_tool_call_ids_are_normalized_with_their_results() -> None:
    msgs = [user(), assistant(call("call_1|fc_1"), provider="openai", api="openai-responses", model="gpt"),
            result("call_1|fc_1")]  # fmt: skip
    out = transform_messages(msgs, MODEL, normalize_tool_call_id=lambda raw: raw.split("|")[0])  # type: ignore[arg-type]
    assert out[1]["content"][0]["id"] == "call_1"  # type: ignore[index, typeddict-item]
    assert out[2]["toolCallId"] == "call_1"  # type: ignore[typeddict-item]
