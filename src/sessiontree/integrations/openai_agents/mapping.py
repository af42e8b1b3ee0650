"""Responses input items (the OpenAI Agents SDK's session items) to pi messages, losslessly; ``restore``
reads them back (this module re-exports its ``message_items`` and ``default_items``), ``keys`` holds the
names both share.

Pure functions over dicts: no I/O and no import of the SDK. Results share nested values with their inputs
(callers copy). How items are stored:

* a ``user`` message item becomes a pi ``user`` message; ``system`` / ``developer`` items become pi
  ``custom`` messages (``customType`` ``openai-agents.system`` / ``openai-agents.developer``), which are in
  the context the way pi sends custom messages (as user text);
* consecutive assistant-side items of one ``add_items`` call (assistant messages, ``reasoning``,
  ``function_call``) become one pi ``assistant`` message, pi's one-message-per-reply shape, with a text
  block per text or refusal part, a thinking block per reasoning summary or content text, and a toolCall
  block per call (parallel calls stay in one message, as every provider needs);
* ``function_call_output`` becomes a pi ``toolResult`` (``toolName`` from the matching call);
* what the blocks cannot hold (item ids, status, annotations, logprobs, encrypted reasoning, image detail,
  an arguments string that is not compact JSON, the original shape of the content) stays in the message's
  ``openaiAgents`` key: one residual per item, the item without what its blocks hold. The key is left out
  when the plain conversion of the message gives the items back. pi keeps unknown keys, and the provider
  request builders read blocks only, so nothing in it reaches a request;
* every other item type (hosted tool calls and their outputs, MCP and shell items, item references,
  compaction items, …) and any item that is not well formed for its type goes verbatim into a ``custom``
  entry (``customType`` ``openai-agents.item``), which is never part of the model context.

Assistant messages say ``api`` ``openai-responses``, ``provider`` ``openai-agents`` and the configured model
name, so no sessiontree provider takes them for its own replies and replays their signatures. pi messages
written by anything else (pi, sessiontree's agent, another adapter) map to items the plain way (``restore``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from sessiontree.format.messages import (
    Usage,
    assistant_message,
    custom_message,
    tool_result_message,
    user_message,
)
from sessiontree.format.pi_json import dumps, loads

from .._blocks import Mismatch
from .._records import Record
from .keys import (
    API,
    EXTRA_KEY,
    INSTRUCTION_ROLES,
    ITEM_CUSTOM_TYPE,
    PROVIDER,
    TEXT_PARTS,
    Item,
    compact_json,
    instruction_custom_type,
)
from .restore import default_items, message_items

__all__ = [
    "API",
    "EXTRA_KEY",
    "ITEM_CUSTOM_TYPE",
    "PROVIDER",
    "Item",
    "Mismatch",
    "default_items",
    "instruction_custom_type",
    "item_kind",
    "items_to_records",
    "message_items",
]

Block = dict[str, Any]
ItemKind = Literal["user", "instruction", "assistant", "result", "other"]

_MESSAGE_ROLES = ("user", "assistant", *INSTRUCTION_ROLES)
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.S)


def _without(item: Item, *keys: str) -> Item:
    return {k: v for k, v in item.items() if k not in keys}


# ---------------------------------------------------------------------------------------------- shapes
def _part_ok(part: Any) -> bool:
    """A content part whose fields are what its type says (so the residual is unambiguous)."""
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    if kind in TEXT_PARTS:
        return isinstance(part.get("text"), str)
    if kind == "refusal":
        return isinstance(part.get("refusal"), str)
    if kind == "input_image":
        return "image_url" in part or "file_id" in part
    return True


def _content_ok(content: Any) -> bool:
    return isinstance(content, str) or (isinstance(content, list) and all(_part_ok(p) for p in content))


def _message_role(item: Item) -> str | None:
    if item.get("type", "message") != "message":
        return None
    role = item.get("role")
    if role not in _MESSAGE_ROLES or not _content_ok(item.get("content")):
        return None
    return str(role)


def _text_parts_ok(parts: Any, kind: str) -> bool:
    return isinstance(parts, list) and all(
        isinstance(p, dict) and (p.get("type") != kind or isinstance(p.get("text"), str)) for p in parts
    )


def _is_reasoning(item: Item) -> bool:
    content = item.get("content")
    return (
        item.get("type") == "reasoning"
        and _text_parts_ok(item.get("summary"), "summary_text")
        and (content is None or _text_parts_ok(content, "reasoning_text"))
    )


def _is_function_call(item: Item) -> bool:
    return item.get("type") == "function_call" and all(
        isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")
    )


def _is_function_output(item: Item) -> bool:
    return (
        item.get("type") == "function_call_output"
        and isinstance(item.get("call_id"), str)
        and _content_ok(item.get("output"))
    )


def item_kind(item: Any) -> ItemKind:
    """Where an item goes: a user or instruction message, the assistant reply, a tool result, or verbatim."""
    if not isinstance(item, dict):
        return "other"
    role = _message_role(item)
    if role == "user":
        return "user"
    if role in INSTRUCTION_ROLES:
        return "instruction"
    if role == "assistant" or _is_reasoning(item) or _is_function_call(item):
        return "assistant"
    if _is_function_output(item):
        return "result"
    return "other"


# ---------------------------------------------------------------------------------------------- parts
def _data_url(value: Any) -> tuple[str, str] | None:
    match = _DATA_URL.fullmatch(value) if isinstance(value, str) else None
    return (match.group(1), match.group(2)) if match else None


def _moves_image(part: Item, role: str) -> bool:
    return role != "assistant" and "file_id" not in part and _data_url(part.get("image_url")) is not None


def _parts_to_blocks(parts: list[Item], role: str) -> tuple[list[Block], list[Item]]:
    """Blocks for the parts pi can show, and each part without what went into its block."""
    blocks: list[Block] = []
    residual: list[Item] = []
    for part in parts:
        kind = part.get("type")
        if kind in TEXT_PARTS:
            blocks.append({"type": "text", "text": part["text"]})
            residual.append(_without(part, "text"))
        elif kind == "refusal" and role == "assistant":
            blocks.append({"type": "text", "text": part["refusal"]})
            residual.append(_without(part, "refusal"))
        elif kind == "input_image" and _moves_image(part, role):
            mime, data = _data_url(part["image_url"])  # type: ignore[misc]
            blocks.append({"type": "image", "data": data, "mimeType": mime})
            residual.append(_without(part, "image_url"))
        else:
            residual.append(part)
    return blocks, residual


# ---------------------------------------------------------------------------------------------- items -> pi
def _user_side(item: Item) -> tuple[str | list[Block], Item]:
    """pi content for a user or instruction item (a string stays a string) and the item's residual."""
    content = item["content"]
    if isinstance(content, str):
        return content, _without(item, "content")
    blocks, parts = _parts_to_blocks(content, str(item["role"]))
    return blocks, {**item, "content": parts}


def _assistant_side(item: Item) -> tuple[list[Block], Item]:
    """The blocks an assistant-side item gives and its residual."""
    kind = item.get("type")
    if kind == "reasoning":
        blocks: list[Block] = []
        residual = dict(item)
        for key, part_kind in (("summary", "summary_text"), ("content", "reasoning_text")):
            parts = item.get(key)
            if not isinstance(parts, list):
                continue
            kept: list[Item] = []
            for part in parts:
                if part.get("type") == part_kind:
                    blocks.append({"type": "thinking", "thinking": part["text"]})
                    kept.append(_without(part, "text"))
                else:
                    kept.append(part)
            residual[key] = kept
        return blocks, residual
    if kind == "function_call":
        raw = item["arguments"]
        try:
            parsed = loads(raw)
        except ValueError:
            parsed = None
        arguments = parsed if isinstance(parsed, dict) else {}
        block = {"type": "toolCall", "id": item["call_id"], "name": item["name"], "arguments": arguments}
        exact = isinstance(parsed, dict) and compact_json(parsed) == raw and dumps(parsed) == raw
        residual = _without(item, "call_id", "name", *(("arguments",) if exact else ()))
        return [block], residual
    content = item["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}], _without(item, "content")
    blocks, parts = _parts_to_blocks(content, "assistant")
    return blocks, {**item, "content": parts}


def _with_residuals(message: dict[str, Any], residuals: list[Item], items: list[Item]) -> dict[str, Any]:
    if default_items(message) != items:
        message[EXTRA_KEY] = residuals
    return message


def items_to_records(
    items: Sequence[Item],
    *,
    timestamp: int,
    model: str,
    usage: Usage | None = None,
    tool_name: Callable[[str], str | None] = lambda _call_id: None,
    provider: str = PROVIDER,
    api: str = API,
) -> list[Record]:
    """The entries to append for ``items`` (in order), as the module docstring describes.

    ``usage`` goes on the last assistant message (the reply the items came from); ``tool_name`` finds the
    name of a call made before these items (calls among them are found here).
    """
    records: list[Record] = []
    group: list[Item] = []
    names: dict[str, str] = {}
    replies: list[int] = []

    def flush() -> None:
        if not group:
            return
        blocks: list[Block] = []
        residuals: list[Item] = []
        for member in group:
            member_blocks, residual = _assistant_side(member)
            blocks.extend(member_blocks)
            residuals.append(residual)
        calls = any(b["type"] == "toolCall" for b in blocks)
        message = assistant_message(
            blocks,
            api=api,
            provider=provider,
            model=model,
            stop_reason="toolUse" if calls else "stop",
            timestamp=timestamp,
        )
        replies.append(len(records))
        records.append(Record(message=_with_residuals(message, residuals, list(group))))
        group.clear()

    for item in items:
        kind = item_kind(item)
        if kind == "assistant":
            if item.get("type") == "function_call":
                names[item["call_id"]] = item["name"]
            group.append(item)
            continue
        flush()
        if kind == "user":
            content, residual = _user_side(item)
            records.append(
                Record(message=_with_residuals(user_message(content, timestamp), [residual], [item]))
            )
        elif kind == "instruction":
            content, residual = _user_side(item)
            message = custom_message(
                instruction_custom_type(item["role"]), content, display=True, timestamp=timestamp
            )
            records.append(Record(message=_with_residuals(message, [residual], [item])))
        elif kind == "result":
            call_id = item["call_id"]
            output = item["output"]
            if isinstance(output, str):
                blocks: list[Block] = [{"type": "text", "text": output}]
                residual = _without(item, "call_id", "output")
            else:
                blocks, parts = _parts_to_blocks(output, "tool")
                residual = {**_without(item, "call_id"), "output": parts}
            name = names.get(call_id) or tool_name(call_id) or ""
            message = tool_result_message(call_id, name, blocks, is_error=False, timestamp=timestamp)
            records.append(Record(message=_with_residuals(message, [residual], [item])))
        else:
            records.append(Record(custom_type=ITEM_CUSTOM_TYPE, data=item))
    flush()
    if usage is not None and replies:
        reply = records[replies[-1]].message
        assert reply is not None
        reply["usage"] = usage
    return records
