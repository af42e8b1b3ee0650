"""The session entry shapes (pi format v3) as TypedDicts.

Types only: entries are plain dicts at runtime. ``entries`` re-exports every name here and imports this
module when one is first used: creating TypedDicts compiles each annotation, more work at import than the
rest of ``entries`` (a session opened to read its context never needs them).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class SessionHeader(TypedDict):
    type: Literal["session"]
    version: NotRequired[int]
    id: str
    timestamp: str
    cwd: str
    parentSession: NotRequired[str]


class _Base(TypedDict):
    type: str
    id: str
    parentId: str | None
    timestamp: str


class MessageEntry(_Base):
    message: dict[str, Any]


class ThinkingLevelChangeEntry(_Base):
    thinkingLevel: str


class ModelChangeEntry(_Base):
    provider: str
    modelId: str


class ActiveToolsChangeEntry(_Base):
    activeToolNames: list[str]


class CompactionEntry(_Base):
    summary: str
    firstKeptEntryId: str
    tokensBefore: int
    retainedTail: NotRequired[list[dict[str, Any]]]
    details: NotRequired[Any]
    fromHook: NotRequired[bool]


class BranchSummaryEntry(_Base):
    fromId: str
    summary: str
    details: NotRequired[Any]
    fromHook: NotRequired[bool]


class CustomEntry(_Base):
    customType: str
    data: NotRequired[Any]


class CustomMessageEntry(_Base):
    customType: str
    content: str | list[dict[str, Any]]
    display: bool
    details: NotRequired[Any]


class LabelEntry(_Base):
    targetId: str
    label: NotRequired[str]


class SessionInfoEntry(_Base):
    name: str


class LeafEntry(_Base):
    targetId: str | None


SessionEntry = dict[str, Any]
"""Any stored entry (known or unknown type): a plain dict with at least type/id/parentId/timestamp."""
