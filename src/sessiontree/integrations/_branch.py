"""What a branch holds for an adapter: the sources of its framework items (messages, the latest compaction's
summary and kept part, the adapter's custom entries), in item order. Pure; reads a path, writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree.tree.context import (
    compaction_summary_message,
    get_latest_compaction_index,
    path_ids,
    path_types,
    session_entry_to_context_messages,
)

from ._records import Source

__all__ = ["Branch", "branch_sources"]

Entry = dict[str, Any]


@dataclass(slots=True)
class Branch:
    """The sources of a branch in item order (compaction summary, kept part, what follows) and the latest
    compaction on it."""

    sources: list[Source]
    compaction: Entry | None


def _range_sources(
    path: Sequence[Entry],
    types: Sequence[str],
    start: int,
    end: int,
    custom_types: frozenset[str],
    kept: bool,
) -> list[Source]:
    ids = path_ids(path)
    out: list[Source] = []
    for i in range(start, end):
        kind = types[i]
        if kind == "custom":
            entry = path[i]
            if entry.get("customType") in custom_types:
                out.append(Source("custom", entry, ids[i], kept))
        elif kind in ("message", "custom_message", "branch_summary"):
            for message in session_entry_to_context_messages(path[i]):
                out.append(Source("message", message, ids[i], kept))
    return out


def branch_sources(path: Sequence[Entry], custom_types: frozenset[str]) -> Branch:
    """What a root-first path holds for an adapter, honouring its latest compaction.

    The kept part is read from the path (with its custom entries and entry ids) when ``firstKeptEntryId``
    is on it and gives the same messages as the compaction's ``retainedTail``; otherwise from
    ``retainedTail`` (which readers prefer), else nothing (pi's reader).
    """
    types = path_types(path)
    c = get_latest_compaction_index(path)
    if c is None:
        return Branch(_range_sources(path, types, 0, len(path), custom_types, False), None)
    compaction = path[c]
    sources = [Source("summary", compaction_summary_message(compaction), str(compaction.get("id")))]
    first_kept = compaction.get("firstKeptEntryId")
    tail = compaction.get("retainedTail")
    kept: list[Source] | None = None
    ids = list(path_ids(path)[:c])
    if isinstance(first_kept, str) and first_kept in ids:
        start = ids.index(first_kept)
        kept = _range_sources(path, types, start, c, custom_types, True)
        if isinstance(tail, list) and [s.payload for s in kept if s.kind == "message"] != tail:
            kept = None
    if kept is None and isinstance(tail, list):
        kept = [Source("message", m, None, True) for m in tail if isinstance(m, dict)]
    sources.extend(kept or [])
    sources.extend(_range_sources(path, types, c + 1, len(path), custom_types, False))
    return Branch(sources, compaction)
