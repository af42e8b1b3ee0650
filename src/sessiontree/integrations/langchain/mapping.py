"""LangChain chat messages to pi messages and back, losslessly.

Pure functions (no I/O). How messages are stored:

* ``HumanMessage`` becomes a pi ``user`` message, ``AIMessage`` an ``assistant`` message (a text block per
  text part, a toolCall block per tool call, usage from ``usage_metadata``), ``ToolMessage`` a
  ``toolResult`` (``isError`` when its status is ``error``), ``SystemMessage`` a pi ``custom`` message
  (``customType`` ``langchain.system``), which is in the context as pi sends custom messages;
* the fields the blocks do not hold (ids, names, ``additional_kwargs``, ``response_metadata``, non-text
  content parts, ``usage_metadata``, ``artifact``, ...) stay in the message's ``langchain`` key, with
  fields at their defaults left out; the key is left out when the plain conversion gives the message back.
  The provider request builders read blocks only, so nothing in it reaches a request;
* every other message class (chunks, ``ChatMessage``, ``FunctionMessage``, ...) goes verbatim
  (``message_to_dict``) into a ``custom`` entry (``customType`` ``langchain.message``), never sent to a model.

Content lists map part by part: a string part or a ``{"type": "text"}`` part is a text block; other parts
stay in the residual. A content list with a malformed text part is kept whole in the residual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from sessiontree.format.messages import (
    Usage,
    assistant_message,
    custom_message,
    empty_usage,
    tool_result_message,
    user_message,
)

from ...llm.convert import convert_message
from .._blocks import Blocks, Mismatch, plain_parts
from .._records import Record

__all__ = [
    "EXTRA_KEY",
    "MESSAGE_CUSTOM_TYPE",
    "SYSTEM_CUSTOM_TYPE",
    "Mismatch",
    "default_message",
    "message_of",
    "message_to_record",
]

Block = dict[str, Any]

EXTRA_KEY = "langchain"
"""The key of a stored pi message that holds the LangChain fields its blocks do not."""
MESSAGE_CUSTOM_TYPE = "langchain.message"
"""``customType`` of the custom entries that hold messages pi has no role for."""
SYSTEM_CUSTOM_TYPE = "langchain.system"
API = "langchain"
PROVIDER = "langchain"

_CLASSES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "tool": ToolMessage,
    "system": SystemMessage,
}
_TOOL_CALL_KEYS = frozenset({"name", "args", "id", "type"})


def _defaults(cls: type[BaseMessage]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        if field.default_factory is not None:
            out[name] = field.default_factory()  # type: ignore[call-arg]
        elif not field.is_required():
            out[name] = field.default
    return out


_DEFAULTS = {kind: _defaults(cls) for kind, cls in _CLASSES.items()}


# ---------------------------------------------------------------------------------------------- to pi
def _content_ok(parts: list[Any]) -> bool:
    return all(
        isinstance(p, str)
        or (isinstance(p, dict) and (p.get("type") != "text" or isinstance(p.get("text"), str)))
        for p in parts
    )


def _content_blocks(content: Any) -> tuple[str | list[Block], Any]:
    """pi content and the content residual (``None`` when the content is a plain string)."""
    if isinstance(content, str):
        return content, None
    if not isinstance(content, list) or not _content_ok(content):
        return [], {"verbatim": content}
    blocks: list[Block] = []
    residual: list[Any] = []
    for part in content:
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
            residual.append(None)
        elif part.get("type") == "text":
            blocks.append({"type": "text", "text": part["text"]})
            residual.append({k: v for k, v in part.items() if k != "text"})
        else:
            residual.append(part)
    return blocks, residual


def _as_list(content: str | list[Block]) -> list[Block]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _tool_calls_ok(calls: Any) -> bool:
    return isinstance(calls, list) and all(
        isinstance(c, dict)
        and set(c) == _TOOL_CALL_KEYS
        and c["type"] == "tool_call"
        and isinstance(c["name"], str)
        and isinstance(c["id"], str)
        and isinstance(c["args"], dict)
        for c in calls
    )


def _usage(metadata: Any) -> Usage:
    if not isinstance(metadata, dict):
        return empty_usage()
    details = metadata.get("input_token_details") or {}
    read = int(details.get("cache_read", 0) or 0)
    written = int(details.get("cache_creation", 0) or 0)
    usage = empty_usage()
    usage["input"] = max(int(metadata.get("input_tokens", 0) or 0) - read - written, 0)
    usage["output"] = int(metadata.get("output_tokens", 0) or 0)
    usage["cacheRead"] = read
    usage["cacheWrite"] = written
    usage["totalTokens"] = int(metadata.get("total_tokens", 0) or 0)
    return usage


def _residual(kind: str, data: dict[str, Any], moved: tuple[str, ...]) -> dict[str, Any]:
    defaults = _DEFAULTS[kind]
    return {
        k: v
        for k, v in data.items()
        if k not in moved and k != "type" and not (k in defaults and v == defaults[k])
    }


def message_to_record(
    message: BaseMessage, *, timestamp: int, tool_name: Callable[[str], str | None] = lambda _id: None
) -> Record:
    """The entry to append for one LangChain message (see the module docstring)."""
    kind = next((k for k, cls in _CLASSES.items() if type(message) is cls), None)
    if kind is None:
        return Record(custom_type=MESSAGE_CUSTOM_TYPE, data=message_to_dict(message))
    data = message.model_dump()
    content, content_residual = _content_blocks(data.get("content"))
    moved: tuple[str, ...] = ("content",)
    pi: dict[str, Any]
    if kind == "human":
        pi = user_message(content, timestamp)
    elif kind == "system":
        pi = custom_message(SYSTEM_CUSTOM_TYPE, content, display=True, timestamp=timestamp)
    elif kind == "ai":
        blocks = _as_list(content)
        calls = data.get("tool_calls")
        if calls and _tool_calls_ok(calls):
            blocks = [
                *blocks,
                *(
                    {"type": "toolCall", "id": c["id"], "name": c["name"], "arguments": c["args"]}
                    for c in calls
                ),
            ]
            moved = ("content", "tool_calls")
        metadata = data.get("response_metadata") or {}
        pi = assistant_message(
            blocks,
            api=API,
            provider=PROVIDER,
            model=str(metadata.get("model_name") or metadata.get("model") or "unknown"),
            usage=_usage(data.get("usage_metadata")),
            stop_reason="toolUse" if any(b["type"] == "toolCall" for b in blocks) else "stop",
            timestamp=timestamp,
        )
    else:
        call_id = str(data.get("tool_call_id"))
        name = data.get("name") if isinstance(data.get("name"), str) else None
        pi = tool_result_message(
            call_id,
            name or tool_name(call_id) or "",
            _as_list(content),
            is_error=data.get("status") == "error",
            timestamp=timestamp,
        )
        moved = ("content", "tool_call_id")
    residual = _residual(kind, data, moved)
    if content_residual is not None:
        residual["content"] = content_residual
    if default_message(pi) != message:
        pi[EXTRA_KEY] = residual
    return Record(message=pi)


# ---------------------------------------------------------------------------------------------- from pi
def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _plain_parts(content: Any) -> str | list[Any]:
    return plain_parts(
        content,
        lambda text: {"type": "text", "text": text},
        lambda url: {"type": "image_url", "image_url": {"url": url}},
    )


def default_message(message: dict[str, Any]) -> BaseMessage | None:
    """The plain conversion of a pi runtime message (what a message without a residual gives)."""
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        if message.get("stopReason") in ("error", "aborted"):
            return None  # a failed reply is not sent to any model (llm.transform)
        calls = [
            {
                "name": b.get("name", ""),
                "args": b.get("arguments") or {},
                "id": b.get("id", ""),
                "type": "tool_call",
            }
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "toolCall"
        ]
        return AIMessage(content="\n".join(_texts(content)), tool_calls=calls)
    if role == "toolResult":
        status = "error" if message.get("isError") else "success"
        return ToolMessage(
            content="\n".join(_texts(content)), tool_call_id=str(message.get("toolCallId", "")), status=status
        )
    if role == "custom" and message.get("customType") == SYSTEM_CUSTOM_TYPE:
        return SystemMessage(content=_plain_parts(content))
    if role == "user":
        return HumanMessage(content=_plain_parts(content))
    converted = convert_message(message)
    if converted is None:
        return None
    return HumanMessage(content="\n".join(_texts(converted.get("content"))))


def _restore_content(residual: dict[str, Any], content: Any, string_ok: bool) -> tuple[Any, Blocks | None]:
    """The LangChain content, and the blocks left after it (None for a string kept as a string)."""
    shape = residual.get("content")
    if shape is None and string_ok and isinstance(content, str):
        return content, None
    blocks = Blocks(content)
    if shape is None:
        return str(blocks.take("text").get("text", "")), blocks
    if isinstance(shape, dict) and "verbatim" in shape:
        return shape["verbatim"], blocks
    if not isinstance(shape, list):
        raise Mismatch("content residual is neither a list nor verbatim")
    parts: list[Any] = []
    for part in shape:
        if part is None:
            parts.append(str(blocks.take("text").get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "text" and "text" not in part:
            parts.append({**part, "text": blocks.take("text").get("text", "")})
        else:
            parts.append(part)
    return parts, blocks


def _restore(message: dict[str, Any], residual: Any) -> BaseMessage:
    if not isinstance(residual, dict):
        raise Mismatch(f"{EXTRA_KEY} is not an object")
    role = message.get("role")
    data = dict(residual)
    if role == "user" or (role == "custom" and message.get("customType") == SYSTEM_CUSTOM_TYPE):
        kind = "human" if role == "user" else "system"
        data["content"], blocks = _restore_content(residual, message.get("content"), True)
    elif role == "assistant":
        kind = "ai"
        data["content"], blocks = _restore_content(residual, message.get("content"), False)
        assert blocks is not None
        calls = blocks.rest()
        if not all(isinstance(c, dict) and c.get("type") == "toolCall" for c in calls):
            raise Mismatch("only toolCall blocks may follow the content")
        if calls and "tool_calls" in residual:
            raise Mismatch("tool calls in the residual and in the blocks")
        if "tool_calls" not in residual:
            data["tool_calls"] = [
                {"name": c.get("name"), "args": c.get("arguments"), "id": c.get("id"), "type": "tool_call"}
                for c in calls
            ]
        blocks = None
    elif role == "toolResult":
        kind = "tool"
        data["content"], blocks = _restore_content(residual, message.get("content"), False)
        data["tool_call_id"] = message.get("toolCallId")
    else:
        raise Mismatch(f"{EXTRA_KEY} on a {role} message")
    if blocks is not None and blocks.rest():
        raise Mismatch("more blocks than the residual owns")
    return messages_from_dict([{"type": kind, "data": {**data, "type": kind}}])[0]


def message_of(message: dict[str, Any]) -> BaseMessage | None:
    """The LangChain message a stored pi runtime message stands for (None when it is not in the context).

    Raises ``Mismatch`` for a residual that does not fit the blocks.
    """
    residual = message.get(EXTRA_KEY)
    if residual is None:
        return default_message(message)
    return _restore(message, residual)
