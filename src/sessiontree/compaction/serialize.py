"""``serialize_conversation``: model messages rendered as labelled plain text for a summary request.

Text rendering only (pi's English labels, B§7.6); it never converts runtime messages itself and never
renders images. Callers run ``convert_to_llm`` first, which is where summaries get their wrappers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontree.format.pi_json import _is_index_key, dumps, utf16_len

__all__ = ["TOOL_RESULT_MAX_CHARS", "serialize_conversation", "truncate_for_summary"]

TOOL_RESULT_MAX_CHARS = 2000
"""Tool results longer than this (UTF-16 code units) are cut in summary requests."""


def _slice_utf16(text: str, count: int) -> str:
    """``text.slice(0, count)`` in JavaScript: may cut a surrogate pair and leave a lone surrogate."""
    return text.encode("utf-16-le", "surrogatepass")[: 2 * count].decode("utf-16-le", "surrogatepass")


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Keep the first ``max_chars`` code units and say how many more were cut."""
    length = utf16_len(text)
    if length <= max_chars:
        return text
    return f"{_slice_utf16(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _text_blocks(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    out: list[str] = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "text":
            text = block.get("text")
            out.append(text if isinstance(text, str) else "")
    return out


def _js_entries(arguments: Any) -> list[tuple[str, Any]]:
    """``Object.entries(arguments)``: array-index keys first in numeric order, then insertion order."""
    if not isinstance(arguments, Mapping):
        return []
    items = [(str(k), v) for k, v in arguments.items()]
    index_items = sorted((kv for kv in items if _is_index_key(kv[0])), key=lambda kv: int(kv[0]))
    return index_items + [kv for kv in items if not _is_index_key(kv[0])]


def _tool_call(block: Mapping[str, Any]) -> str:
    args = ", ".join(f"{k}={dumps(v)}" for k, v in _js_entries(block.get("arguments")))
    return f"{block.get('name', '')}({args})"


def _assistant(content: Any, parts: list[str]) -> None:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            texts.append(text if isinstance(text, str) else "")
        elif kind == "thinking":
            value = block.get("thinking")
            thinking.append(value if isinstance(value, str) else "")
        elif kind == "toolCall":
            calls.append(_tool_call(block))
    if thinking:
        parts.append("[Assistant thinking]: " + "\n".join(thinking))
    if texts:
        parts.append("[Assistant]: " + "\n".join(texts))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))


def serialize_conversation(messages: Sequence[Mapping[str, Any]]) -> str:
    """Render model messages as ``[User]:`` / ``[Assistant]:`` / ``[Tool result]:`` paragraphs (pi's format).

    Tool results are truncated to 2000 characters; empty user messages and tool results are skipped.
    """
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else "".join(_text_blocks(content))
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            _assistant(message.get("content"), parts)
        elif role == "toolResult":
            text = "".join(_text_blocks(message.get("content")))
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)
