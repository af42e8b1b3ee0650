"""``prepare_compaction``: what a compaction of a path would summarize, keep and report (pi v0.78, B§7.5).

Pure: reads a root-first path and returns a preparation. It never calls a model and never writes entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontree.tree.context import (
    branch_summary_entry_message,
    compute_retained_tail,
    context_from_path,
    session_entry_to_context_messages,
)
from sessiontree.tree.context import path_ids as entry_ids
from sessiontree.tree.context import path_types as entry_types

from ..llm.tokens import estimate_context_tokens
from .cut_points import find_cut_point
from .file_ops import FileOperations, extract_file_ops_from_message
from .settings import DEFAULT_COMPACTION_SETTINGS, CompactionSettings

__all__ = [
    "CompactionPreparation",
    "compute_retained_tail",
    "entry_ids",
    "entry_to_summary_message",
    "prepare_compaction",
]

Entry = dict[str, Any]
AgentMessage = dict[str, Any]


def entry_to_summary_message(entry: Entry) -> AgentMessage | None:
    """The message an entry contributes to a summary request, or None.

    Like the context mapping, except that a branch summary counts even when its text is empty and that
    compaction entries give nothing (the previous summary travels separately).
    """
    kind = entry.get("type")
    if kind == "branch_summary":
        return branch_summary_entry_message(entry)
    if kind in ("message", "custom_message"):
        messages = session_entry_to_context_messages(entry)
        return messages[0] if messages else None
    return None


@dataclass(slots=True)
class CompactionPreparation:
    """Everything ``compact`` needs, plus the path indexes it was derived from.

    ``retained_tail`` is what the new compaction entry stores as ``retainedTail`` (the kept messages).
    """

    first_kept_entry_id: str
    messages_to_summarize: list[AgentMessage]
    turn_prefix_messages: list[AgentMessage]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings
    previous_compaction_index: int = -1
    boundary_start: int = 0
    first_kept_entry_index: int = 0
    turn_start_index: int = -1
    history_end: int = 0
    retained_tail: list[AgentMessage] = field(default_factory=list)

    @property
    def has_content(self) -> bool:
        """True when there is something to summarize (history or a split-turn prefix)."""
        return bool(self.messages_to_summarize) or bool(self.turn_prefix_messages)


def _map_range(path: Sequence[Entry], types: Sequence[str], start: int, end: int) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for i in range(start, end):
        if types[i] in ("message", "custom_message", "branch_summary"):
            message = entry_to_summary_message(path[i])
            if message is not None:
                out.append(message)
    return out


def prepare_compaction(
    path: Sequence[Entry], settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS
) -> CompactionPreparation | None:
    """Prepare a compaction of a root-first path; None when it is empty or already ends in a compaction.

    As pi v0.78: the region starts at the previous compaction's ``firstKeptEntryId`` (so messages it kept
    are summarized once the recent window moves past them); ``tokens_before`` is estimated from the rebuilt
    context; compaction entries are never summarized (the previous summary is passed on); file operations
    accumulate from the previous compaction's ``details``. Beyond pi: when that previous compaction's
    ``firstKeptEntryId`` is not on the path but it carries a ``retainedTail``, those kept messages are
    summarized instead of being lost (SPEC B§13). None is also returned when the first kept entry has no id.
    """
    n = len(path)
    types = entry_types(path)
    if n == 0 or types[n - 1] == "compaction":
        return None

    prev_index = -1
    for i in range(n - 1, -1, -1):
        if types[i] == "compaction":
            prev_index = i
            break
    prev: Entry | None = path[prev_index] if prev_index >= 0 else None

    boundary_start = 0
    carried: list[AgentMessage] = []
    if prev is not None:
        first_kept = prev.get("firstKeptEntryId")
        ids = entry_ids(path)
        found = -1
        if isinstance(first_kept, str):
            for i in range(n):  # pi's findIndex over the whole path
                if ids[i] == first_kept:
                    found = i
                    break
        if found >= 0:
            boundary_start = found
        else:
            boundary_start = prev_index + 1
            tail = prev.get("retainedTail")
            if isinstance(tail, list):
                carried = [m for m in tail if isinstance(m, dict)]

    tokens_before = estimate_context_tokens(context_from_path(path).messages).tokens

    cut = find_cut_point(path, boundary_start, n, settings.keep_recent_tokens)
    first_kept_id = path[cut.first_kept_entry_index].get("id")
    if not first_kept_id:
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index

    messages_to_summarize = carried + _map_range(path, types, boundary_start, history_end)
    turn_prefix: list[AgentMessage] = []
    if cut.is_split_turn:
        turn_prefix = _map_range(path, types, cut.turn_start_index, cut.first_kept_entry_index)

    previous_summary: str | None = None
    file_ops = FileOperations()
    if prev is not None:
        summary = prev.get("summary")
        previous_summary = summary if isinstance(summary, str) else None
        if not prev.get("fromHook") and prev.get("details"):
            file_ops.add_details(prev.get("details"))
    for message in messages_to_summarize:
        extract_file_ops_from_message(message, file_ops)
    for message in turn_prefix:
        extract_file_ops_from_message(message, file_ops)

    return CompactionPreparation(
        first_kept_entry_id=str(first_kept_id),
        messages_to_summarize=messages_to_summarize,
        turn_prefix_messages=turn_prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=file_ops,
        settings=settings,
        previous_compaction_index=prev_index,
        boundary_start=boundary_start,
        first_kept_entry_index=cut.first_kept_entry_index,
        turn_start_index=cut.turn_start_index,
        history_end=history_end,
        retained_tail=compute_retained_tail(path, str(first_kept_id)),
    )
