"""One line of display text per entry and per tool call, as pi's tree selector and chat show them
(``user: …``, ``[bash: ls -la]``, ``[compaction: 12k tokens]``).

Pure functions over plain dicts; every string from the session comes out display-safe (``one_line``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from sessiontree.format.safe_text import cut_to_width, one_line
from sessiontree.tree.views import message_text

from ...agent.navigation import editor_text_of

__all__ = ["entry_line", "search_text", "text_of", "tool_call_summary"]

_WIDTH = 200  # cells kept of one entry's text; the views cut further to their width


def _short(path: Any) -> str:
    text = str(path or "")
    home = os.path.expanduser("~")
    return "~" + text[len(home) :] if home not in ("", "~") and text.startswith(home) else text


def tool_call_summary(name: str, args: Any) -> str:
    """pi's one-line form of a tool call: ``[read: src/a.py:10-20]``, ``[bash: make test]``, ``[grep: /x/ in .]``."""
    a = args if isinstance(args, dict) else {}
    if name == "read":
        shown = _short(a.get("path") or a.get("file_path"))
        offset, limit = a.get("offset"), a.get("limit")
        if isinstance(offset, int) or isinstance(limit, int):
            start = offset if isinstance(offset, int) else 1
            end = f"-{start + limit - 1}" if isinstance(limit, int) else ""
            shown += f":{start}{end}"
        text = f"[read: {shown}]"
    elif name in ("write", "edit"):
        text = f"[{name}: {_short(a.get('path') or a.get('file_path'))}]"
    elif name == "bash":
        raw = " ".join(str(a.get("command") or "").split())
        text = f"[bash: {cut_to_width(raw, 53, '...')}]"
    elif name == "grep":
        text = f"[grep: /{a.get('pattern') or ''}/ in {_short(a.get('path') or '.')}]"
    elif name == "find":
        text = f"[find: {a.get('pattern') or ''} in {_short(a.get('path') or '.')}]"
    elif name == "ls":
        text = f"[ls: {_short(a.get('path') or '.')}]"
    else:
        raw = json.dumps(a, ensure_ascii=False, default=str)
        text = f"[{name}: {cut_to_width(raw, 43, '...')}]"
    return one_line(text, _WIDTH)


def text_of(content: Any) -> str:
    """The text blocks of a message content (or the string), for display and search."""
    return editor_text_of(content) if isinstance(content, (str, list)) else ""


def entry_line(entry: dict[str, Any], tool_calls: dict[str, tuple[str, Any]]) -> tuple[str, str]:
    """``(kind, text)`` for a tree row: kind is ``user``, ``assistant``, ``tool``, ``error``, ``summary``,
    ``compaction``, ``custom`` or ``meta`` (the style to draw it in); ``tool_calls`` maps call ids to
    ``(name, arguments)`` so a tool result shows the call it answers."""
    kind = entry.get("type")
    if kind == "message":
        raw = entry.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        role = message.get("role")
        if role == "user":
            return "user", "user: " + one_line(text_of(message.get("content")), _WIDTH)
        if role == "assistant":
            body = one_line(text_of(message.get("content")), _WIDTH)
            if body:
                return "assistant", "assistant: " + body
            if message.get("stopReason") == "aborted":
                return "assistant", "assistant: (aborted)"
            error = message.get("errorMessage")
            if isinstance(error, str) and error:
                return "error", "assistant: " + one_line(error, 80)
            return "assistant", "assistant: (no content)"
        if role == "toolResult":
            call = tool_calls.get(str(message.get("toolCallId")))
            if call is not None:
                return "tool", tool_call_summary(*call)
            return "tool", one_line(f"[{message.get('toolName') or 'tool'}]", _WIDTH)
        if role == "bashExecution":
            return "meta", "[bash]: " + one_line(str(message.get("command") or ""), _WIDTH)
        return "meta", one_line(f"[{role}]", _WIDTH)
    if kind == "custom_message":
        text = one_line(text_of(entry.get("content")), _WIDTH)
        return "custom", one_line(f"[{entry.get('customType')}]: ", 60) + text
    if kind == "compaction":
        tokens = entry.get("tokensBefore")
        thousands = round(tokens / 1000) if isinstance(tokens, (int, float)) else "?"
        return "compaction", f"[compaction: {thousands}k tokens]"
    if kind == "branch_summary":
        return "summary", "[branch summary]: " + one_line(str(entry.get("summary") or ""), _WIDTH)
    if kind == "model_change":
        return "meta", one_line(f"[model: {entry.get('modelId')}]", _WIDTH)
    if kind == "thinking_level_change":
        return "meta", one_line(f"[thinking: {entry.get('thinkingLevel')}]", _WIDTH)
    if kind == "custom":
        return "meta", one_line(f"[custom: {entry.get('customType')}]", _WIDTH)
    if kind == "label":
        label = entry.get("label")
        return "meta", one_line(f"[label: {label if isinstance(label, str) else '(cleared)'}]", _WIDTH)
    if kind == "session_info":
        return "meta", one_line(f"[name: {entry.get('name')}]", _WIDTH)
    return "meta", one_line(f"[{kind}]", _WIDTH)


def search_text(entry: dict[str, Any], label: str | None) -> str:
    """What search matches for an entry (pi's ``getSearchableText``), lower-cased."""
    parts = [label] if label else []
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        message = entry["message"]
        parts.append(str(message.get("role")))
        parts.append(message_text(message.get("content"), 2000))
        if message.get("role") == "bashExecution":
            parts.append(str(message.get("command") or ""))
    elif kind == "custom_message":
        parts += [str(entry.get("customType")), text_of(entry.get("content"))]
    elif kind == "compaction":
        parts.append("compaction")
    elif kind == "branch_summary":
        parts += ["branch summary", str(entry.get("summary") or "")]
    elif kind == "model_change":
        parts += ["model", str(entry.get("modelId"))]
    elif kind == "thinking_level_change":
        parts += ["thinking", str(entry.get("thinkingLevel"))]
    elif kind == "custom":
        parts += ["custom", str(entry.get("customType"))]
    elif kind == "label":
        parts += ["label", str(entry.get("label") or "")]
    return " ".join(parts).lower()
