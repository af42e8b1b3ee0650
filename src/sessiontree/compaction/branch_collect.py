"""Which entries a branch summary covers and which of their messages fit its budget (pi, B§8.2-8.3).

Pure: walks parent links through a lookup and estimates tokens. It never calls a model and never writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sessiontree.tree.context import compaction_summary_message

from ..llm.tokens import estimate_tokens
from .file_ops import FileOperations, extract_file_ops_from_message
from .prepare import entry_to_summary_message

__all__ = [
    "BranchEntries",
    "BranchPreparation",
    "EntryLookup",
    "branch_entry_to_message",
    "branch_token_budget",
    "collect_entries_for_branch_summary",
    "prepare_branch_entries",
]

Entry = dict[str, Any]
AgentMessage = dict[str, Any]

DEFAULT_CONTEXT_WINDOW = 128000
"""The window assumed when the model does not say (pi's fallback)."""


class EntryLookup(Protocol):
    """Anything that finds an entry by id (a ``SessionManager``, an index over a file)."""

    def get_entry(self, entry_id: str) -> Entry | None: ...


@dataclass(slots=True)
class BranchEntries:
    """The abandoned entries (chronological) and the deepest entry shared with the target's path."""

    entries: list[Entry]
    common_ancestor_id: str | None


def _walk(session: EntryLookup, leaf_id: str) -> list[tuple[str, Entry]]:
    """``(id, entry)`` from ``leaf_id`` up the parent links, until a missing entry or a repeated id."""
    path: list[tuple[str, Entry]] = []
    seen: set[str] = set()
    current: str | None = leaf_id
    while isinstance(current, str) and current not in seen:
        entry = session.get_entry(current)
        if entry is None:
            break
        seen.add(current)
        path.append((current, entry))
        parent = entry.get("parentId")
        current = parent if isinstance(parent, str) else None
    return path


def collect_entries_for_branch_summary(
    session: EntryLookup, old_leaf_id: str | None, target_id: str
) -> BranchEntries:
    """Entries from ``old_leaf_id`` back to (not including) the common ancestor with ``target_id``.

    Compactions are not a stop; two separate root trees share no ancestor, so the whole old path counts.
    """
    if not old_leaf_id:
        return BranchEntries([], None)
    old_walk = _walk(session, old_leaf_id)
    old_path = {entry_id for entry_id, _ in old_walk}
    common: str | None = None
    for entry_id, _ in _walk(session, target_id):  # deepest first
        if entry_id in old_path:
            common = entry_id
            break
    collected: list[Entry] = []
    for entry_id, entry in old_walk:
        if not entry_id or entry_id == common:
            break
        collected.append(entry)
    collected.reverse()
    return BranchEntries(collected, common)


def branch_entry_to_message(entry: Entry) -> AgentMessage | None:
    """The message an entry contributes to a branch summary: tool results are left out (the assistant's
    tool-call line carries them) and compactions count as their summaries."""
    kind = entry.get("type")
    if kind == "compaction":
        return compaction_summary_message(entry)
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") == "toolResult":
            return None
        return message
    return entry_to_summary_message(entry)


def branch_token_budget(context_window: int | None, reserve_tokens: int) -> int:
    """``(context_window or 128000) - reserve_tokens``: how much abandoned history a summary request carries."""
    return (context_window or DEFAULT_CONTEXT_WINDOW) - reserve_tokens


@dataclass(slots=True)
class BranchPreparation:
    """Messages that fit the budget (chronological), their file operations and their token estimate."""

    messages: list[AgentMessage]
    file_ops: FileOperations = field(default_factory=FileOperations)
    total_tokens: int = 0
    entry_ids: list[str] = field(default_factory=list)


def prepare_branch_entries(entries: Sequence[Entry], token_budget: int = 0) -> BranchPreparation:
    """Take messages newest first while they fit ``token_budget`` (0 = no limit), as pi does.

    File lists of earlier (non-hook) branch summaries are carried over, all of them. A compaction or branch
    summary that overflows is still taken while the total is under 90 % of the budget. One deliberate
    difference from pi: the file operations of the message that broke the budget are not collected, since
    that message is not summarized.
    """
    file_ops = FileOperations()
    for entry in entries:
        if entry.get("type") == "branch_summary" and not entry.get("fromHook") and entry.get("details"):
            file_ops.add_details(entry.get("details"))

    messages: list[AgentMessage] = []
    ids: list[str] = []
    total = 0
    for entry in reversed(entries):
        message = branch_entry_to_message(entry)
        if message is None:
            continue
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            is_summary = entry.get("type") in ("compaction", "branch_summary")
            if is_summary and total < token_budget * 0.9:
                messages.append(message)
                ids.append(str(entry.get("id")))
                total += tokens
            break
        extract_file_ops_from_message(message, file_ops)
        messages.append(message)
        ids.append(str(entry.get("id")))
        total += tokens
    messages.reverse()
    ids.reverse()
    return BranchPreparation(messages, file_ops, total, ids)
