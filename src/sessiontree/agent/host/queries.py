"""What a client may ask an agent session about its session, in pi's JSON shapes: the model record, the
statistics over every entry, the user messages to fork from, the entries and the tree, the last reply's text.

Reads only (the session through its manager, messages as given); no harness, no writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessiontree.format.pi_json import UNDEFINED

from ...errors import SessionError
from ...llm.types import Model
from ..navigation import editor_text_of

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = [
    "entries_since",
    "fork_messages",
    "last_assistant_text",
    "model_record",
    "session_stats",
    "tree_record",
]


def model_record(model: Model) -> dict[str, Any]:
    """pi's ``Model`` object."""
    record: dict[str, Any] = {
        "id": model.id,
        "name": model.name or model.id,
        "api": model.api,
        "provider": model.provider,
        "baseUrl": model.base_url if model.base_url is not None else UNDEFINED,
        "reasoning": model.reasoning,
        "input": list(model.input),
        "cost": {
            "input": model.cost.input,
            "output": model.cost.output,
            "cacheRead": model.cost.cache_read,
            "cacheWrite": model.cost.cache_write,
        },
        "contextWindow": model.context_window,
        "maxTokens": model.max_tokens,
    }
    if model.headers:
        record["headers"] = dict(model.headers)
    if model.compat:
        record["compat"] = dict(model.compat)
    return record


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


class _Usage:
    __slots__ = ("cache_read", "cache_write", "cost", "input", "output")

    def __init__(self) -> None:
        self.input = self.output = self.cache_read = self.cache_write = 0
        self.cost = 0.0

    def add(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        self.input += int(_num(usage.get("input")))
        self.output += int(_num(usage.get("output")))
        self.cache_read += int(_num(usage.get("cacheRead")))
        self.cache_write += int(_num(usage.get("cacheWrite")))
        cost = usage.get("cost")
        if isinstance(cost, Mapping):
            self.cost += _num(cost.get("total"))


def _context_usage(manager: SessionManager, context_window: int) -> dict[str, Any] | Any:
    from ...llm.tokens import estimate_context_tokens

    if context_window <= 0:
        return UNDEFINED
    branch = manager.get_branch()
    last_compaction = max((i for i, e in enumerate(branch) if e.get("type") == "compaction"), default=None)
    if last_compaction is not None:
        answered = any(
            e.get("type") == "message"
            and isinstance(e.get("message"), dict)
            and e["message"].get("role") == "assistant"
            and e["message"].get("stopReason") not in ("aborted", "error")
            for e in branch[last_compaction + 1 :]
        )
        if not answered:
            return {"tokens": None, "contextWindow": context_window, "percent": None}
    tokens = estimate_context_tokens(manager.build_session_context().messages).tokens
    return {"tokens": tokens, "contextWindow": context_window, "percent": tokens / context_window * 100}


def session_stats(manager: SessionManager, model: Model) -> dict[str, Any]:
    """pi's ``SessionStats``: counted over every entry of the session (other branches and compacted history
    included); tokens from assistant and tool results' usage, ``usage`` entries and summaries' usage."""
    users = assistants = tool_results = total = tool_calls = 0
    usage = _Usage()
    for entry in manager.get_entries():
        kind = entry.get("type")
        if kind == "usage" or (kind in ("branch_summary", "compaction") and entry.get("usage")):
            usage.add(entry.get("usage"))
        message = entry.get("message")
        if kind != "message" or not isinstance(message, dict):
            continue
        total += 1
        role = message.get("role")
        if role == "user":
            users += 1
        elif role == "toolResult":
            tool_results += 1
            usage.add(message.get("usage"))
        elif role == "assistant":
            assistants += 1
            content = message.get("content")
            if isinstance(content, list):
                tool_calls += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "toolCall")
            usage.add(message.get("usage"))
    file = manager.get_session_file()
    return {
        "sessionFile": file if file is not None else UNDEFINED,
        "sessionId": manager.get_session_id(),
        "userMessages": users,
        "assistantMessages": assistants,
        "toolCalls": tool_calls,
        "toolResults": tool_results,
        "totalMessages": total,
        "tokens": {
            "input": usage.input,
            "output": usage.output,
            "cacheRead": usage.cache_read,
            "cacheWrite": usage.cache_write,
            "total": usage.input + usage.output + usage.cache_read + usage.cache_write,
        },
        "cost": usage.cost,
        "contextUsage": _context_usage(manager, model.context_window),
    }


def fork_messages(manager: SessionManager) -> list[dict[str, str]]:
    """``{entryId, text}`` for every user message of the session with text, in file order."""
    out: list[dict[str, str]] = []
    for entry in manager.get_entries():
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = editor_text_of(message.get("content"))
        if text:
            out.append({"entryId": str(entry.get("id")), "text": text})
    return out


def entries_since(manager: SessionManager, since: str | None) -> list[dict[str, Any]]:
    """Every entry in append order, or only those after the entry ``since`` ("Entry not found: ID")."""
    entries = manager.get_entries()
    if since is None:
        return entries
    position = next((i for i, e in enumerate(entries) if e.get("id") == since), None)
    if position is None:
        raise SessionError(f"Entry not found: {since}", kind="invalid_argument")
    return entries[position + 1 :]


def tree_record(manager: SessionManager) -> list[dict[str, Any]]:
    """pi's ``SessionTreeNode[]``: ``{entry, children, label?, labelTimestamp?}`` from the roots down."""
    return [node.to_dict() for node in manager.get_tree()]


def last_assistant_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The text of the last reply that ended normally or has text (pi's ``getLastAssistantText``)."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text"]
        if message.get("stopReason") != "stop" and not any(t.strip() for t in texts):
            continue
        return "".join(texts).strip() or None
    return None
