"""Stored pi messages back to Responses input items (the reading half of the Agents SDK mapping).

A message with residuals (``EXTRA_KEY``, written by ``mapping``) gives its items back exactly; any other
message (written by pi, sessiontree's agent, another adapter) maps to items the plain way
(``default_items``). Pure functions over dicts: no I/O and no import of the SDK.
"""

from __future__ import annotations

from typing import Any

from sessiontree.format.pi_json import dumps, loads

from ...llm.convert import convert_message
from .._blocks import Blocks, Mismatch, data_url, plain_parts
from .._records import copy_json
from .keys import EXTRA_KEY, INSTRUCTION_TYPES, TEXT_PARTS, Item, arguments_text

__all__ = ["Mismatch", "default_items", "message_items"]


def _restore_parts(parts: Any, role: str, blocks: Blocks) -> list[Item]:
    """Content parts with what their blocks hold put back (the residual parts of one message)."""
    if not isinstance(parts, list):
        raise Mismatch("residual content is not a list")
    out: list[Item] = []
    for part in parts:
        if not isinstance(part, dict):
            raise Mismatch("residual part is not an object")
        kind = part.get("type")
        if kind in TEXT_PARTS and "text" not in part:
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
            residual["arguments"] if "arguments" in residual else arguments_text(call.get("arguments"))
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
    if role == "custom" and message.get("customType") in INSTRUCTION_TYPES:
        return [_restore_user_side(residual, content, INSTRUCTION_TYPES[message["customType"]])]
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
    if role == "custom" and message.get("customType") in INSTRUCTION_TYPES:
        role_name = INSTRUCTION_TYPES[message["customType"]]
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
