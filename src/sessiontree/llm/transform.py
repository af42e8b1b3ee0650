"""Provider-level normalization of model messages (pi-ai's ``transformMessages``) so every request is valid.

It never mutates the stored messages (changed ones are copied) and knows nothing of any wire format.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from sessiontree.format.messages import AssistantMessage, Message, ToolCall

from .types import Model

__all__ = [
    "IMAGE_PLACEHOLDER",
    "NO_RESULT_TEXT",
    "is_same_model",
    "transform_messages",
]

NO_RESULT_TEXT = "No result provided"
IMAGE_PLACEHOLDER = "(image omitted: this model does not accept images)"

NormalizeId = Callable[[str], str]


def is_same_model(message: AssistantMessage | dict[str, Any], model: Model) -> bool:
    """True when ``message`` was produced by ``model`` (same provider, api and id): signatures are valid."""
    return (
        message.get("provider") == model.provider
        and message.get("api") == model.api
        and message.get("model") == model.id
    )


def _downgrade_images(content: Any) -> Any:
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and b.get("type") == "image" for b in content
    ):
        return content
    out: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image":
            if out and out[-1].get("type") == "text" and out[-1].get("text") == IMAGE_PLACEHOLDER:
                continue  # consecutive images collapse into one placeholder
            out.append({"type": "text", "text": IMAGE_PLACEHOLDER})
        else:
            out.append(block)
    return out


def _assistant_blocks(
    message: dict[str, Any], same: bool, id_map: dict[str, str], normalize_id: NormalizeId | None
) -> list[Any]:
    blocks: list[Any] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "thinking":
            if block.get("redacted"):
                if same:
                    blocks.append(block)
                continue
            text = block.get("thinking") or ""
            if same and block.get("thinkingSignature"):
                blocks.append(block)
            elif not text.strip():
                continue
            elif same:
                blocks.append(block)
            else:
                # Another model's reasoning cannot be replayed as reasoning; keep what it said as text.
                blocks.append({"type": "text", "text": text})
        elif kind == "text":
            blocks.append(block if same else {"type": "text", "text": block.get("text", "")})
        elif kind == "toolCall":
            call = block
            if not same and "thoughtSignature" in call:
                call = {k: v for k, v in call.items() if k != "thoughtSignature"}
            if normalize_id is not None:
                new_id = normalize_id(str(call.get("id", "")))
                if new_id != call.get("id"):
                    id_map[str(call.get("id"))] = new_id
                    call = {**call, "id": new_id}
            blocks.append(call)
        else:
            blocks.append(block)
    return blocks


def _synthetic_result(call: ToolCall, timestamp: int) -> Message:
    return cast(
        Message,
        {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call.get("name", ""),
            "content": [{"type": "text", "text": NO_RESULT_TEXT}],
            "isError": True,
            "timestamp": timestamp,
        },
    )


def transform_messages(
    messages: Sequence[Message],
    model: Model,
    *,
    normalize_tool_call_id: NormalizeId | None = None,
    now: Callable[[], int] | None = None,
) -> list[Message]:
    """Make ``messages`` sendable to ``model``.

    * assistant turns with ``stopReason`` ``error``/``aborted`` are skipped;
    * tool calls without a result get a synthetic error result ("No result provided") before the next
      user/assistant message or the end; results that answer no pending call (or answer one twice) are dropped;
    * images become a text placeholder when the model takes text only;
    * thinking blocks and signatures are kept for the same provider/api/model; for another model, thinking
      becomes text (empty or redacted thinking is dropped) and provider signatures are removed;
    * ``normalize_tool_call_id`` rewrites tool-call ids (and their results) a provider would reject.
    """
    clock = now or (lambda: int(time.time() * 1000))
    images_ok = model.supports_images
    id_map: dict[str, str] = {}
    result: list[Message] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def flush_pending() -> None:
        nonlocal pending, answered
        for call in pending:
            if call["id"] not in answered:
                result.append(_synthetic_result(call, clock()))
        pending, answered = [], set()

    for original in messages:
        message = cast(dict[str, Any], original)
        role = message.get("role")
        if role == "assistant":
            flush_pending()
            if message.get("stopReason") in ("error", "aborted"):
                continue
            same = is_same_model(message, model)
            content = _assistant_blocks(message, same, id_map, normalize_tool_call_id)
            converted = message if content == message.get("content") else {**message, "content": content}
            calls = [b for b in content if b.get("type") == "toolCall"]
            if calls:
                pending, answered = cast(list[ToolCall], calls), set()
            result.append(cast(Message, converted))
        elif role == "toolResult":
            call_id = id_map.get(str(message.get("toolCallId")), message.get("toolCallId"))
            if call_id in answered or not any(c["id"] == call_id for c in pending):
                continue  # orphaned or duplicate: no provider accepts it
            answered.add(str(call_id))
            updated = message
            if call_id != message.get("toolCallId"):
                updated = {**updated, "toolCallId": call_id}
            if not images_ok:
                content = _downgrade_images(updated.get("content"))
                if content is not updated.get("content"):
                    updated = {**updated, "content": content}
            result.append(cast(Message, updated))
        elif role == "user":
            flush_pending()
            if not images_ok:
                content = _downgrade_images(message.get("content"))
                if content is not message.get("content"):
                    message = {**message, "content": content}
            result.append(cast(Message, message))
        # any other role is not a model message and is not sent
    flush_pending()
    return result
