"""Responses input items (the OpenAI Agents SDK's session items) to pi messages and back, losslessly.

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
written by anything else (pi, sessiontree's agent, another adapter) map to items the plain way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import orjson

from sessiontree.format.messages import (
    Usage,
    assistant_message,
    custom_message,
    tool_result_message,
    user_message,
)
from sessiontree.format.pi_json import dumps, loads

from ...llm.convert import convert_message
from .._blocks import Blocks, Mismatch, data_url, plain_parts
from .._records import Record, copy_json

__all__ = [
    "API",
    "EXTRA_KEY",
    "ITEM_CUSTOM_TYPE",
    "PROVIDER",
    "Mismatch",
    "default_items",
    "instruction_custom_type",
    "item_kind",
    "items_to_records",
    "message_items",
]

Item = dict[str, Any]
Block = dict[str, Any]
ItemKind = Literal["user", "instruction", "assistant", "result", "other"]

EXTRA_KEY = "openaiAgents"
"""The key of a stored pi message that holds its items' residuals."""
ITEM_CUSTOM_TYPE = "openai-agents.item"
"""``customType`` of the custom entries that hold items pi has no message for."""
API = "openai-responses"
PROVIDER = "openai-agents"

_INSTRUCTION_ROLES = ("system", "developer")
_MESSAGE_ROLES = ("user", "assistant", *_INSTRUCTION_ROLES)
_TEXT_PARTS = ("input_text", "output_text")
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.S)


def instruction_custom_type(role: str) -> str:
    """The ``customType`` of the custom message a ``system`` / ``developer`` item becomes."""
    return f"openai-agents.{role}"


_INSTRUCTION_TYPES = {instruction_custom_type(role): role for role in _INSTRUCTION_ROLES}


def _compact(value: Any) -> str | None:
    """Compact JSON text (orjson: fast; None for what it cannot encode). Arguments are only left to it when
    it and the JavaScript encoder agree, so the text comes back whatever the store did to the numbers."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None


def _arguments_text(arguments: Any) -> str:
    value = arguments if arguments is not None else {}
    text = _compact(value)
    return text if text is not None else dumps(value)


def _without(item: Item, *keys: str) -> Item:
    return {k: v for k, v in item.items() if k not in keys}


# ---------------------------------------------------------------------------------------------- shapes
def _part_ok(part: Any) -> bool:
    """A content part whose fields are what its type says (so the residual is unambiguous)."""
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    if kind in _TEXT_PARTS:
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
    if role in _INSTRUCTION_ROLES:
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
        if kind in _TEXT_PARTS:
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


def _restore_parts(parts: Any, role: str, blocks: Blocks) -> list[Item]:
    if not isinstance(parts, list):
        raise Mismatch("residual content is not a list")
    out: list[Item] = []
    for part in parts:
        if not isinstance(part, dict):
            raise Mismatch("residual part is not an object")
        kind = part.get("type")
        if kind in _TEXT_PARTS and "text" not in part:
            out.append({**part, "text": blocks.text()})
        elif kind == "refusal" and role == "assistant" and "refusal" not in part:
            out.append({**part, "refusal": blocks.text()})
        elif (
            kind == "input_image"
            and role != "assistant"
            and "image_url" not in part
            and "file_id" not in part
        ):
            image = blocks.take("image")
            out.append({**part, "image_url": data_url(image)})
        else:
            out.append(part)
    return out


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
        exact = isinstance(parsed, dict) and _compact(parsed) == raw and dumps(parsed) == raw
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


# ---------------------------------------------------------------------------------------------- pi -> items
def _restore_user_side(residual: Item, content: Any, role: str) -> Item:
    if residual.get("role") != role:
        raise Mismatch(f"residual role {residual.get('role')!r} for a {role} message")
    if "content" not in residual:
        if not isinstance(content, str):
            raise Mismatch("string content expected")
        return {**residual, "content": content}
    blocks = Blocks(content)
    parts = _restore_parts(residual["content"], role, blocks)
    blocks.done()
    return {**residual, "content": parts}


def _restore_assistant_side(residual: Item, blocks: Blocks) -> Item:
    kind = residual.get("type")
    if kind == "reasoning":
        item = dict(residual)
        for key, part_kind in (("summary", "summary_text"), ("content", "reasoning_text")):
            parts = residual.get(key)
            if isinstance(parts, list):
                item[key] = [
                    {**p, "text": blocks.text("thinking", "thinking")}
                    if isinstance(p, dict) and p.get("type") == part_kind and "text" not in p
                    else p
                    for p in parts
                ]
        return item
    if kind == "function_call":
        call = blocks.take("toolCall")
        arguments = (
            residual["arguments"] if "arguments" in residual else _arguments_text(call.get("arguments"))
        )
        return {**residual, "call_id": call.get("id"), "name": call.get("name"), "arguments": arguments}
    if residual.get("role") != "assistant":
        raise Mismatch("residual is not an assistant-side item")
    if "content" not in residual:
        return {**residual, "content": blocks.text()}
    return {**residual, "content": _restore_parts(residual["content"], "assistant", blocks)}


def _restore(message: dict[str, Any], residuals: Any) -> list[Item]:
    if not isinstance(residuals, list) or not all(isinstance(r, dict) for r in residuals):
        raise Mismatch(f"{EXTRA_KEY} is not a list of objects")
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        blocks = Blocks(content)
        items = [_restore_assistant_side(r, blocks) for r in residuals]
        blocks.done()
        return items
    if len(residuals) != 1:
        raise Mismatch(f"one residual expected for a {role} message")
    residual = residuals[0]
    if role == "user":
        return [_restore_user_side(residual, content, "user")]
    if role == "custom" and message.get("customType") in _INSTRUCTION_TYPES:
        return [_restore_user_side(residual, content, _INSTRUCTION_TYPES[message["customType"]])]
    if role == "toolResult":
        item = {**residual, "call_id": message.get("toolCallId")}
        if "output" not in residual:
            blocks = Blocks(content)
            item["output"] = blocks.text()
            blocks.done()
            return [item]
        blocks = Blocks(content)
        item["output"] = _restore_parts(residual["output"], "tool", blocks)
        blocks.done()
        return [item]
    raise Mismatch(f"{EXTRA_KEY} on a {role} message")


def _plain_content(content: Any) -> str | list[Item]:
    return plain_parts(
        content,
        lambda text: {"type": "input_text", "text": text},
        lambda url: {"type": "input_image", "detail": "auto", "image_url": url},
    )


def _plain_output(content: Any) -> str | list[Item]:
    blocks = content if isinstance(content, list) else []
    if any(isinstance(b, dict) and b.get("type") == "image" for b in blocks):
        return _plain_content(blocks)
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )


def _reasoning_item(signature: Any) -> Item | None:
    """The Responses reasoning item sessiontree's own provider keeps whole in ``thinkingSignature``."""
    if not isinstance(signature, str) or not signature.startswith("{"):
        return None
    try:
        item = loads(signature)
    except ValueError:
        return None
    return item if isinstance(item, dict) and item.get("type") == "reasoning" else None


def _plain_assistant(message: dict[str, Any]) -> list[Item]:
    if message.get("stopReason") in ("error", "aborted"):
        return []  # a failed reply is not sent to any model (llm.transform)
    items: list[Item] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            items.append({"role": "assistant", "content": block.get("text", "")})
        elif kind == "thinking":
            reasoning = _reasoning_item(block.get("thinkingSignature"))
            if reasoning is not None:
                items.append(reasoning)
            elif (block.get("thinking") or "").strip():
                # Reasoning from another model cannot be replayed as reasoning (as llm.transform does).
                items.append({"role": "assistant", "content": block["thinking"]})
        elif kind == "toolCall":
            items.append({
                "type": "function_call",
                "call_id": str(block.get("id", "")).partition("|")[0],
                "name": block.get("name", ""),
                "arguments": dumps(block.get("arguments") or {}),
            })  # fmt: skip
    return items


def default_items(message: dict[str, Any]) -> list[Item]:
    """The plain conversion of a pi runtime message to items (what a message without residuals gives)."""
    role = message.get("role")
    if role == "assistant":
        return _plain_assistant(message)
    if role == "toolResult":
        call_id = str(message.get("toolCallId", "")).partition("|")[0]
        return [
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": _plain_output(message.get("content")),
            }
        ]
    if role == "custom" and message.get("customType") in _INSTRUCTION_TYPES:
        role_name = _INSTRUCTION_TYPES[message["customType"]]
        return [{"role": role_name, "content": _plain_content(message.get("content"))}]
    converted = convert_message(message)
    if converted is None:
        return []
    content = converted.get("content")
    if (
        role != "user"
        and isinstance(content, list)
        and len(content) == 1
        and content[0].get("type") == "text"
    ):
        return [{"role": "user", "content": content[0].get("text", "")}]  # summaries, shell runs: one text
    return [{"role": "user", "content": _plain_content(content)}]


def message_items(message: dict[str, Any]) -> list[Item]:
    """The items a stored pi runtime message stands for, sharing no list or object with it (strings aside);
    raises ``Mismatch`` for residuals that do not fit."""
    residuals = message.get(EXTRA_KEY)
    if residuals is None:
        return default_items(message)
    return _restore(message, copy_json(residuals))
