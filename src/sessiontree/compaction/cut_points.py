"""Where a compaction may cut a path: valid cut points, turn starts and ``find_cut_point`` (pi, B§7.4).

Index arithmetic over a root-first list of entries; it never changes entries and never builds summaries.
Paths may be plain lists or views that expose ``types`` (as the manager's path views do), which lets the
scans skip decoding entries whose type already rules them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree.tree.context import path_types as entry_types

from ..llm.tokens import estimate_tokens

__all__ = [
    "CutPointResult",
    "entry_types",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "is_valid_cut_point",
]

Entry = dict[str, Any]

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = frozenset({"user", "bashExecution"})
_MESSAGE_LIKE_TYPES = frozenset({"branch_summary", "custom_message"})


def _role(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def is_valid_cut_point(entry: Entry) -> bool:
    """A kept region may start here: a user-like or assistant message, a custom message or a branch summary."""
    kind = entry.get("type")
    if kind in _MESSAGE_LIKE_TYPES:
        return True
    return kind == "message" and _role(entry) in _CUT_ROLES


def _is_cut(path: Sequence[Entry], types: Sequence[str], i: int) -> bool:
    kind = types[i]
    if kind in _MESSAGE_LIKE_TYPES:
        return True
    return kind == "message" and _role(path[i]) in _CUT_ROLES


def _is_turn_start(path: Sequence[Entry], types: Sequence[str], i: int) -> bool:
    kind = types[i]
    if kind in _MESSAGE_LIKE_TYPES:
        return True
    return kind == "message" and _role(path[i]) in _TURN_START_ROLES


def find_valid_cut_points(entries: Sequence[Entry], start: int, end: int) -> list[int]:
    """Indexes in ``[start, end)`` where a kept region may begin (never a tool result or a settings entry)."""
    types = entry_types(entries)
    return [i for i in range(start, end) if _is_cut(entries, types, i)]


def find_turn_start_index(entries: Sequence[Entry], entry_index: int, start_index: int) -> int:
    """The nearest turn start at or before ``entry_index`` (not before ``start_index``), or -1.

    Turn starts are user and bashExecution messages, custom messages and branch summaries.
    """
    types = entry_types(entries)
    for i in range(entry_index, start_index - 1, -1):
        if _is_turn_start(entries, types, i):
            return i
    return -1


@dataclass(frozen=True, slots=True)
class CutPointResult:
    """Where the kept region starts and, when that splits a turn, where the turn began (-1 otherwise)."""

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def _first_cut_at_or_after(entries: Sequence[Entry], types: Sequence[str], i: int, end: int) -> int | None:
    for j in range(i, end):
        if _is_cut(entries, types, j):
            return j
    return None


def _starts_before_user_message(entries: Sequence[Entry], types: Sequence[str], cut: int, end: int) -> bool:
    """True when only plain non-message entries (settings, labels, names, custom state) separate ``cut``
    from a user message."""
    for j in range(cut, end):
        kind = types[j]
        if kind == "message":
            return bool(_role(entries[j]) == "user")
        if kind in _MESSAGE_LIKE_TYPES:
            return False
    return False


def find_cut_point(entries: Sequence[Entry], start: int, end: int, keep_recent_tokens: int) -> CutPointResult:
    """Choose the first kept entry of ``entries[start:end)`` so that about ``keep_recent_tokens`` stay verbatim.

    pi's algorithm: walk back from the newest entry summing the estimates of ``message`` entries; once the
    sum reaches the budget, cut at the first valid cut point at or after that entry (if there is none, keep
    everything from the first cut point); then move back over directly preceding non-message entries so
    they stay with the kept part. A cut that is not a user message splits the turn it falls in.

    One deliberate difference from pi: a cut that lands on non-message entries right before a user message
    does not split a turn (pi reports the whole previous turn as a split-turn prefix there).
    """
    types = entry_types(entries)
    first_cut = _first_cut_at_or_after(entries, types, start, end)
    if first_cut is None:
        return CutPointResult(start, -1, False)

    cut = first_cut
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        if types[i] != "message":
            continue
        message = entries[i].get("message")
        accumulated += estimate_tokens(message) if isinstance(message, dict) else 0
        if accumulated >= keep_recent_tokens:
            found = _first_cut_at_or_after(entries, types, i, end)
            if found is not None:
                cut = found
            break

    while cut > start:
        previous = types[cut - 1]
        if previous in ("compaction", "message"):
            break
        cut -= 1

    if types[cut] == "message" and _role(entries[cut]) == "user":
        return CutPointResult(cut, -1, False)
    if types[cut] != "message" and _starts_before_user_message(entries, types, cut, end):
        return CutPointResult(cut, -1, False)
    turn_start = find_turn_start_index(entries, cut, start)
    return CutPointResult(cut, turn_start, turn_start != -1)
