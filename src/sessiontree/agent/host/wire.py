"""pi's wire form of session events (``toJsonEvent``), as ``--mode json`` prints them and ``rpc`` sends them,
made from the harness's events: the same names and camelCase fields where the harness already speaks pi
(``agent_start`` … ``tool_execution_end``, ``auto_retry_*``, ``compaction_*``), pi's names and shapes where it
does not (``queue_update`` with texts, ``thinking_level_changed``, ``compaction_end.result``), and nothing for
the harness's own bookkeeping (``save_point``, ``tools_update``, ``model_update``, ``session_tree`` …).

Pure functions: no session, no I/O. ``agent_settled`` is the agent session's to send (it knows ``aborted``).
"""

from __future__ import annotations

from typing import Any

from sessiontree.format.pi_json import UNDEFINED

from ..navigation import editor_text_of

__all__ = ["compaction_result", "queue_texts", "wire_event"]

Event = dict[str, Any]

_AS_IS = frozenset(
    {
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "auto_retry_start",
        "auto_retry_end",
        "compaction_start",
    }
)
_RESULT_KEYS = ("summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter", "usage", "details")


def queue_texts(messages: Any) -> list[str]:
    """The texts of queued user messages (pi keeps its queues as strings)."""
    return [editor_text_of(m.get("content")) for m in messages or () if isinstance(m, dict)]


def compaction_result(entry: Any) -> dict[str, Any] | None:
    """pi's ``CompactionResult`` from a compaction entry (``None`` when there is none)."""
    if not isinstance(entry, dict):
        return None
    return {key: entry[key] for key in _RESULT_KEYS if key in entry}


def _assistant_event(update: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in update.items() if k != "partial"}
    if update.get("type") == "toolcall_start":
        partial = update.get("partial") or {}
        content = partial.get("content") or []
        index = update.get("contentIndex")
        block = content[index] if isinstance(index, int) and 0 <= index < len(content) else {}
        out["id"] = block.get("id", "")
        out["toolName"] = block.get("name", "")
    return out


def wire_event(event: Event) -> Event | None:
    """The pi event ``event`` is on the wire, or None when pi has no such event."""
    kind = event.get("type")
    if kind in _AS_IS:
        return event
    if kind == "message_update":
        message = event.get("message") or {}
        return {
            "type": "message_update",
            "usage": message.get("usage"),
            "assistantMessageEvent": _assistant_event(event.get("assistantMessageEvent") or {}),
        }
    if kind == "queue_update":
        return {
            "type": "queue_update",
            "steering": queue_texts([*(event.get("steer") or ()), *(event.get("nextTurn") or ())]),
            "followUp": queue_texts(event.get("followUp")),
        }
    if kind == "compaction_end":
        result = compaction_result(event.get("result"))
        return {**event, "result": UNDEFINED if result is None else result}
    if kind == "thinking_level_update":
        if event.get("level") == event.get("previousLevel"):
            return None
        return {"type": "thinking_level_changed", "level": event.get("level")}
    return None
