"""The text and JSON forms of ``sessiontree tree``: connector lines, folded deep branches, a row limit.

Turns ``views`` rows into lines that fit the terminal; every string from the session goes through the
display-safe previews. Reads the session through the manager only and never writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sessiontree._bulk import bulk_allocation
from sessiontree.format.safe_text import cell_width, cut_to_width, one_line, safe_text
from sessiontree.tree.session_index import LocalIndex
from sessiontree.tree.views import (
    TreeRow,
    connector_prefix,
    decode_for_preview,
    decode_run_for_preview,
    entry_preview,
    entry_role,
    tree_rows,
)

from ._common import Styler

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

    from ..storage import EntryStore

__all__ = ["TreeOptions", "tree_json", "tree_lines"]

_ID_CELLS = 24
_PREVIEW_BATCH = 4096  # rows whose entries are read and previewed together
_LABEL_CELLS = 30
_JSON_PREVIEW_CELLS = 120


@dataclass(frozen=True)
class TreeOptions:
    """What to draw: only the active path, branches nested at most ``depth`` levels, at most ``limit`` rows."""

    active: bool = False
    depth: int | None = None
    limit: int | None = None
    width: int = 100


class _PathNode:
    """An entry of the active path, shaped like a tree node for ``TreeRow``."""

    __slots__ = ("_manager", "children", "id", "label", "label_timestamp")

    def __init__(self, manager: SessionManager, entry_id: str, labels: dict[str, str]) -> None:
        self._manager = manager
        self.id = entry_id
        self.children: list[_PathNode] = []
        self.label = labels.get(entry_id)
        self.label_timestamp = manager.get_label_timestamp(entry_id) if self.label is not None else None

    @property
    def entry(self) -> dict[str, Any]:
        return self._manager.get_entry(self.id) or {"id": self.id}


def _path_ids(manager: SessionManager) -> list[str]:
    view = manager.get_path_view()
    ids = getattr(view, "ids", None)  # the manager's lazy view knows them without decoding entries
    return list(ids) if ids is not None else [str(e.get("id")) for e in view]


def _rows(manager: SessionManager, options: TreeOptions) -> list[TreeRow]:
    if not options.active:
        return tree_rows(manager.get_tree())
    ids = _path_ids(manager)
    labels = manager.get_labels()
    rows: list[TreeRow] = []
    for depth, entry_id in enumerate(ids):
        following = [ids[depth + 1]] if depth + 1 < len(ids) else []
        rows.append(TreeRow(_PathNode(manager, entry_id, labels), depth, 0, following, True))
    return rows


def _local_store(manager: SessionManager) -> EntryStore | None:
    """The manager's in-memory-indexed store (files, memory), whose raw lines are read by position."""
    index = manager.index
    return index.store if isinstance(index, LocalIndex) else None


def _max_levels(width: int) -> int:
    return max(2, width // 9)  # branch lines take at most a third of the width


def _previewed(manager: SessionManager, row: TreeRow) -> tuple[str, Any]:
    """The row's id and its entry decoded for the preview only (no full decode, nothing cached)."""
    node = row.node
    entry_id = getattr(node, "id", None)
    store = _local_store(manager)
    position = getattr(node, "index", None)
    if store is not None and position is None and isinstance(entry_id, str):
        position = store.index_of(entry_id)
    if store is not None and isinstance(entry_id, str) and isinstance(position, int):
        return entry_id, decode_for_preview(store.raw_at(position))
    entry = row.entry
    raw_id = entry.get("id")
    return (raw_id if isinstance(raw_id, str) else repr(raw_id)), entry


_Decor = tuple[str, str, str, int]
_Shown = tuple[str, _Decor, str]
"""A row's entry id, ``_decor`` and preview, made before the row is drawn (``_prefetched``)."""


def _decor(row: TreeRow, entry_id: str, options: TreeOptions) -> _Decor:
    """The row's branch lines, shown id and label, and the cells left for its preview."""
    prefix = connector_prefix(row.guides, row.branch_start, _max_levels(options.width))
    shown_id = (
        entry_id
        if len(entry_id) <= 16 and entry_id.isalnum()
        else cut_to_width(safe_text(entry_id), _ID_CELLS)
    )
    label = f" [{one_line(row.label, _LABEL_CELLS)}]" if row.label else ""
    used = cell_width(prefix) + 2 + cell_width(shown_id) + cell_width(label) + 1
    return prefix, shown_id, label, max(1, options.width - used)


def _line(
    manager: SessionManager,
    row: TreeRow,
    leaf: str | None,
    active: set[str],
    options: TreeOptions,
    style: Styler,
    previews: dict[int, _Shown],
) -> str:
    ready = previews.get(id(row))
    if ready is not None:
        entry_id, (prefix, shown_id, label, _), preview = ready
    else:
        entry_id, entry = _previewed(manager, row)
        prefix, shown_id, label, room = _decor(row, entry_id, options)
        preview = entry_preview(entry, line_width=room)
    on_path = entry_id in active
    marker = "●" if entry_id == leaf else ("•" if on_path else " ")
    if on_path:
        return f"{marker} {prefix}{style(shown_id, 'bold')}{style(label, 'yellow')} {preview}"
    return style(f"{marker} {prefix}{shown_id}", "dim") + style(label, "yellow") + " " + style(preview, "dim")


def _fold(first_hidden: TreeRow, count: int, depth: int, options: TreeOptions, style: Styler) -> str:
    # drawn where the first hidden row would be: one level below the row above it (under an active path
    # deeper than the limit, that is deeper than depth + 1)
    prefix = connector_prefix(first_hidden.guides, first_hidden.branch_start, _max_levels(options.width))
    what = "entry" if count == 1 else "entries"
    return style(f"  {prefix}… {count} {what} in branches nested deeper than {depth}", "dim")


def _shown(row: TreeRow, depth: int | None, active: set[str]) -> bool:
    """Whether ``row`` is drawn under ``--depth``: nested at most ``depth`` levels, or on the active path
    (which no depth hides: the leaf and the way to it are what the tree is read for)."""
    return depth is None or row.indent <= depth or getattr(row.node, "id", None) in active


def _visible(rows: list[TreeRow], options: TreeOptions, active: set[str]) -> Iterator[tuple[TreeRow, int]]:
    """Rows to draw; a run of hidden rows (nested deeper than ``depth``, off the active path) comes as (its
    first row, its length)."""
    depth = options.depth
    i, n = 0, len(rows)
    while i < n:
        row = rows[i]
        if _shown(row, depth, active):
            yield row, 0
            i += 1
            continue
        j = i
        while j < n and not _shown(rows[j], depth, active):
            j += 1
        yield row, j - i
        i = j


def _prefetched(
    manager: SessionManager, pairs: Iterator[tuple[TreeRow, int]], options: TreeOptions
) -> Iterator[tuple[TreeRow, int, dict[int, _Shown]]]:
    """``pairs`` (rows to draw, see ``_visible``), each with the previews of its batch (by ``id(row)``): the
    lines of a batch of rows are read in file order, nearby ones at once, instead of one read per row, and
    each entry is previewed as soon as it is decoded, so a batch holds its previews, not its entries (a batch
    stops at the row after ``--limit``, so a short listing decodes no more)."""
    store = _local_store(manager)
    limit = options.limit
    taken = 0
    while True:
        size = _PREVIEW_BATCH if limit is None else max(1, min(_PREVIEW_BATCH, limit + 1 - taken))
        batch = list(islice(pairs, size))
        if not batch:
            return
        previews: dict[int, _Shown] = {}  # by id(row)
        if store is not None:
            wanted: list[tuple[int, TreeRow, str]] = []
            for row, folded in batch:
                position, entry_id = getattr(row.node, "index", None), getattr(row.node, "id", None)
                if folded or not isinstance(position, int) or not isinstance(entry_id, str):
                    continue
                if 0 <= position < len(store):
                    wanted.append((position, row, entry_id))
            wanted.sort(key=itemgetter(0))
            positions = [w[0] for w in wanted]
            for (_, row, entry_id), entry in zip(wanted, _path_entries(store, positions), strict=True):
                decor = _decor(row, entry_id, options)
                previews[id(row)] = (entry_id, decor, entry_preview(entry, line_width=decor[3]))
        for row, folded in batch:
            yield row, folded, previews
        taken += len(batch)


def _path_entries(store: EntryStore, positions: list[int], chunk: int = 8192) -> Iterator[Any]:
    """The entries at store ``positions`` decoded for previews, read a chunk at a time (a path of 100,000
    entries costs a few hundred kilobytes at once, not the whole file)."""
    for start in range(0, len(positions), chunk):
        part = positions[start : start + chunk]
        types = store.types_at(part)
        done = 0
        for block, spans in store.line_runs_at(part):
            yield from decode_run_for_preview(block, spans, types[done : done + len(spans)])
            done += len(spans)


def _path_lines(
    manager: SessionManager, ids: list[str], options: TreeOptions, style: Styler
) -> Iterator[str]:
    """``--active``: one line per entry of the path, built without tree rows (long paths print fast)."""
    index = manager.index
    labels = manager.get_labels()
    leaf = manager.get_leaf_id()
    width = options.width
    shown = ids if options.limit is None else ids[: options.limit]
    positions = index.positions(leaf) if isinstance(index, LocalIndex) else None
    entries: Iterator[Any]
    if isinstance(index, LocalIndex) and positions is not None and len(positions) == len(ids):
        # raw lines by the path's own positions (no id looked up): previews without decoding whole entries
        entries = _path_entries(index.store, positions[: len(shown)])
    else:
        view = manager.get_path_view()
        entries = (view[k] for k in range(len(shown)))
    styled = style.enabled
    labels_get = labels.get if labels else None
    for entry_id, entry in zip(shown, entries, strict=True):
        if len(entry_id) <= 16 and entry_id.isascii() and entry_id.isalnum():
            shown_id, used = entry_id, 3 + len(entry_id)  # pi's ids: shown as they are
        else:
            shown_id = cut_to_width(safe_text(entry_id), _ID_CELLS)
            used = 3 + cell_width(shown_id)
        label = labels_get(entry_id) if labels_get is not None else None
        if label:
            tag = f" [{one_line(label, _LABEL_CELLS)}]"
            used += cell_width(tag)
        else:
            tag = ""
        preview = entry_preview(entry, line_width=width - used if width - used > 1 else 1)
        if styled:
            shown_id, tag = style(shown_id, "bold"), style(tag, "yellow")
        yield f"{'●' if entry_id == leaf else '•'} {shown_id}{tag} {preview}"
    if len(shown) < len(ids):
        rest = len(ids) - len(shown)
        yield style(f"… {rest} more {'entry' if rest == 1 else 'entries'} (raise --limit to see them)", "dim")


def tree_lines(manager: SessionManager, options: TreeOptions, style: Styler) -> Iterator[str]:
    """The lines of ``sessiontree tree``, then a blank line and a summary."""
    if options.active:
        ids = _path_ids(manager)
        yield from _path_lines(manager, ids, options, style)
        yield from _summary(manager, f"{len(ids)} entries on the active path of {len(manager.index)}")
        return
    rows = _rows(manager, options)
    leaf = manager.get_leaf_id()
    active = set(_path_ids(manager))
    consumed = 0
    visible = _prefetched(manager, _visible(rows, options, active), options)
    for shown, (row, folded, previews) in enumerate(visible):
        if options.limit is not None and shown >= options.limit:
            rest = len(rows) - consumed
            yield style(
                f"… {rest} more {'entry' if rest == 1 else 'entries'} (raise --limit to see them)", "dim"
            )
            break
        if folded:
            yield _fold(row, folded, options.depth or 0, options, style)
        else:
            yield _line(manager, row, leaf, active, options, style, previews)
        consumed += folded or 1
    yield from _summary(manager, f"{len(manager.index)} entries")


def _summary(manager: SessionManager, scope: str) -> Iterator[str]:
    leaf = manager.get_leaf_id()
    name = manager.get_session_name()
    yield ""
    yield f"{scope}, leaf {safe_text(leaf) if leaf else '(none)'}" + (
        f", name {one_line(name, 60)!r}" if name else ""
    )


def tree_json(manager: SessionManager, options: TreeOptions) -> dict[str, Any]:
    """``tree --json``: the leaf, the roots and the rows (conformance ``tree.json`` nodes plus role, preview
    and timestamp); ``--active`` and ``--limit`` select rows as in the text form. Built with the collector
    paused (a node per row and every entry decoded: a heap the collector's passes would walk again and again
    while it grows)."""
    with bulk_allocation():
        return _tree_json(manager, options)


def _tree_json(manager: SessionManager, options: TreeOptions) -> dict[str, Any]:
    rows = _rows(manager, options)
    if options.depth is not None:
        active = set(_path_ids(manager))
        rows = [r for r in rows if _shown(r, options.depth, active)]
    if options.limit is not None:
        rows = rows[: options.limit]
    nodes = []
    for row in rows:
        entry = row.entry
        node = row.to_dict()
        node["role"] = entry_role(entry)
        node["timestamp"] = entry.get("timestamp")
        node["preview"] = entry_preview(entry, _JSON_PREVIEW_CELLS)
        nodes.append(node)
    roots = [str(r.entry.get("id")) for r in rows if r.depth == 0]
    return {"leafId": manager.get_leaf_id(), "roots": roots, "nodes": nodes}
