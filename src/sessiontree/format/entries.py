"""Session entries (pi format v3): constructors that fix pi's key order (the TypedDicts of their shapes
live in ``entry_types`` and are re-exported here, imported when one is first used).

Constructors only build dicts; ids and timestamps are passed in (see ``ids``). No I/O here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiontree._lazy import export_lazily
from sessiontree.format.pi_json import UNDEFINED

if TYPE_CHECKING:
    from sessiontree.format.entry_types import (
        ActiveToolsChangeEntry,
        BranchSummaryEntry,
        CompactionEntry,
        CustomEntry,
        CustomMessageEntry,
        LabelEntry,
        LeafEntry,
        MessageEntry,
        ModelChangeEntry,
        SessionEntry,
        SessionHeader,
        SessionInfoEntry,
        ThinkingLevelChangeEntry,
    )

__all__ = [
    "CURRENT_SESSION_VERSION",
    "ENTRY_TYPES",
    "ActiveToolsChangeEntry",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "LabelEntry",
    "LeafEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "ThinkingLevelChangeEntry",
    "active_tools_change_entry",
    "branch_summary_entry",
    "compaction_entry",
    "custom_entry",
    "custom_message_entry",
    "label_entry",
    "leaf_entry",
    "message_entry",
    "model_change_entry",
    "session_header",
    "session_info_entry",
    "thinking_level_change_entry",
]

CURRENT_SESSION_VERSION = 3

ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "active_tools_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "leaf",
    }
)


def _opt(value: Any) -> Any:
    return UNDEFINED if value is None else value


def _strip(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if v is not UNDEFINED}


def session_header(
    session_id: str, timestamp: str, cwd: str, parent_session: str | None = None
) -> dict[str, Any]:
    """A v3 session header: ``type, version, id, timestamp, cwd[, parentSession]``."""
    return _strip(
        {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": cwd,
            "parentSession": _opt(parent_session),
        }
    )


def _base(kind: str, entry_id: str, parent_id: str | None, timestamp: str) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}


def message_entry(
    entry_id: str, parent_id: str | None, timestamp: str, message: dict[str, Any]
) -> dict[str, Any]:
    """``message``: ``type, id, parentId, timestamp, message``."""
    return {**_base("message", entry_id, parent_id, timestamp), "message": message}


def thinking_level_change_entry(
    entry_id: str, parent_id: str | None, timestamp: str, level: str
) -> dict[str, Any]:
    """``thinking_level_change``: ``…, thinkingLevel``."""
    return {**_base("thinking_level_change", entry_id, parent_id, timestamp), "thinkingLevel": level}


def model_change_entry(
    entry_id: str, parent_id: str | None, timestamp: str, provider: str, model_id: str
) -> dict[str, Any]:
    """``model_change``: ``…, provider, modelId``."""
    return {
        **_base("model_change", entry_id, parent_id, timestamp),
        "provider": provider,
        "modelId": model_id,
    }


def active_tools_change_entry(
    entry_id: str, parent_id: str | None, timestamp: str, names: list[str]
) -> dict[str, Any]:
    """``active_tools_change`` (harness format): ``…, activeToolNames``."""
    return {**_base("active_tools_change", entry_id, parent_id, timestamp), "activeToolNames": list(names)}


def compaction_entry(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    summary: str,
    first_kept_entry_id: str | None,
    tokens_before: float,
    details: Any = UNDEFINED,
    from_hook: Any = UNDEFINED,
    retained_tail: Any = UNDEFINED,
) -> dict[str, Any]:
    """``compaction``: ``…, summary, firstKeptEntryId, tokensBefore[, retainedTail][, details][, fromHook]``.

    ``details``/``from_hook`` default to absent; pass ``None`` explicitly to store JSON ``null``.
    """
    return _strip(
        {
            **_base("compaction", entry_id, parent_id, timestamp),
            "summary": summary,
            "firstKeptEntryId": UNDEFINED if first_kept_entry_id is None else first_kept_entry_id,
            "tokensBefore": tokens_before,
            "retainedTail": retained_tail,
            "details": details,
            "fromHook": from_hook,
        }
    )


def branch_summary_entry(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    from_id: str,
    summary: str,
    details: Any = UNDEFINED,
    from_hook: Any = UNDEFINED,
) -> dict[str, Any]:
    """``branch_summary``: ``…, fromId, summary[, details][, fromHook]``."""
    return _strip(
        {
            **_base("branch_summary", entry_id, parent_id, timestamp),
            "fromId": from_id,
            "summary": summary,
            "details": details,
            "fromHook": from_hook,
        }
    )


def custom_entry(
    entry_id: str, parent_id: str | None, timestamp: str, custom_type: str, data: Any = UNDEFINED
) -> dict[str, Any]:
    """``custom`` (coding-agent order): ``type, customType[, data], id, parentId, timestamp``."""
    return _strip(
        {
            "type": "custom",
            "customType": custom_type,
            "data": data,
            "id": entry_id,
            "parentId": parent_id,
            "timestamp": timestamp,
        }
    )


def custom_message_entry(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    custom_type: str,
    content: Any,
    display: bool,
    details: Any = UNDEFINED,
) -> dict[str, Any]:
    """``custom_message``: ``type, customType, content, display[, details], id, parentId, timestamp``."""
    return _strip(
        {
            "type": "custom_message",
            "customType": custom_type,
            "content": content,
            "display": display,
            "details": details,
            "id": entry_id,
            "parentId": parent_id,
            "timestamp": timestamp,
        }
    )


def label_entry(
    entry_id: str, parent_id: str | None, timestamp: str, target_id: str, label: str | None
) -> dict[str, Any]:
    """``label``: ``…, targetId[, label]`` (no ``label`` key clears the label)."""
    return _strip(
        {**_base("label", entry_id, parent_id, timestamp), "targetId": target_id, "label": _opt(label)}
    )


def session_info_entry(entry_id: str, parent_id: str | None, timestamp: str, name: str) -> dict[str, Any]:
    """``session_info``: ``…, name`` (the caller trims)."""
    return {**_base("session_info", entry_id, parent_id, timestamp), "name": name}


def leaf_entry(entry_id: str, parent_id: str | None, timestamp: str, target_id: str | None) -> dict[str, Any]:
    """``leaf`` (harness format): ``…, targetId`` (``null`` = before the first entry)."""
    return {**_base("leaf", entry_id, parent_id, timestamp), "targetId": target_id}


# Last, once every name defined here exists: the rest of ``__all__`` are the TypedDicts of ``entry_types``.
export_lazily(
    __name__, dict.fromkeys([n for n in __all__ if n not in globals()], "sessiontree.format.entry_types")
)
