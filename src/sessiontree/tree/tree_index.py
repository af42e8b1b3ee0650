"""The tree index over a store: cycle-safe paths to the root, children, and pi's ``getTree`` result.

Works on envelope data only (ids, parents, timestamps) and decodes entries lazily; it must not read files,
compute labels or build contexts. Every walk is iterative with visited sets, so cycles and deep chains are safe.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from functools import cmp_to_key
from itertools import compress, islice, repeat
from operator import attrgetter, eq
from typing import Any

import msgspec

from sessiontree._bulk import bulk_allocation
from sessiontree.format.ids import parse_iso_ms
from sessiontree.tree.entry_store import EntryStore, Problem

__all__ = ["TreeIndex", "TreeNode", "preload_entries"]


class TreeNode(msgspec.Struct, eq=False):
    """One node of ``get_tree()``: an entry (decoded on first access), its children, its label.

    ``TreeNode(store, index)``; nodes compare and hash by identity. A struct rather than a class with
    ``__slots__`` because a tree of 100,000 entries makes 100,000 of them: msgspec builds one in C, in half
    the time an ``__init__`` in Python takes (18 against 36 ms per 100,000 here).
    """

    _store: EntryStore
    index: int
    children: list[TreeNode] = msgspec.field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None

    @property
    def entry(self) -> dict[str, Any]:
        """The entry (a plain dict; do not mutate)."""
        return self._store.entry_at(self.index)

    @property
    def id(self) -> str:
        """The entry id, without decoding the entry."""
        return self._store.id_at(self.index)

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape ``{entry, children, label?, labelTimestamp?}`` (built iteratively)."""
        root = self._shell()
        stack: list[tuple[TreeNode, dict[str, Any]]] = [(self, root)]
        while stack:
            node, out = stack.pop()
            for child in node.children:
                child_out = child._shell()
                out["children"].append(child_out)
                stack.append((child, child_out))
        return root

    def _shell(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entry": self.entry, "children": []}
        if self.label is not None:
            out["label"] = self.label
        if self.label_timestamp is not None:
            out["labelTimestamp"] = self.label_timestamp
        return out

    def __repr__(self) -> str:
        return f"TreeNode({self.id!r}, children={len(self.children)})"

    def __rich_repr__(self) -> Iterator[Any]:  # type: ignore[override]  # (rich also takes bare values)
        """What rich's pretty printer shows: the id and the number of children, as ``repr`` does (a struct's
        own would print every field, the store and the whole subtree)."""
        yield self.id
        yield "children", len(self.children)


def preload_entries(roots: list[TreeNode]) -> None:
    """Decode the entry of every node under ``roots`` now, in bulk (a file store reads them in a few large
    reads instead of one per node): for a view about to show the whole tree. The entries stay cached."""
    by_store: dict[int, tuple[EntryStore, list[int]]] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        by_store.setdefault(id(node._store), (node._store, []))[1].append(node.index)
        stack.extend(node.children)
    for store, positions in by_store.values():
        store.preload(positions)


def _compare(a: float, b: float) -> int:
    # JavaScript's comparator `a - b` with NaN for unparseable dates. Python's sort only asks `cmp(x, y) < 0`,
    # so the float difference (NaN included) is returned as is; the annotation is for cmp_to_key's sake.
    diff: Any = a - b
    return diff  # type: ignore[no-any-return]


_SORT_KEY = cmp_to_key(_compare)
_CHILDREN = attrgetter("children")


def _as_runs(positions: list[int]) -> list[tuple[int, int]]:
    """Consecutive positions grouped into ``(start, stop)`` runs, in order."""
    runs: list[tuple[int, int]] = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1] = (runs[-1][0], p + 1)
        else:
            runs.append((p, p + 1))
    return runs


class TreeIndex:
    """Parent/child relations of a store's entries. Call ``on_append(i)`` after each ``store.append``.

    Problems found while walking (cycles) are collected in ``problems``, each reported once.
    """

    def __init__(self, store: EntryStore) -> None:
        self.store = store
        self.problems: list[Problem] = []
        self._reported: set[tuple[str, str]] = set()
        self._generation = store.generation
        self._ppos: list[int] | None = None
        self._dangling: set[str | None] | None = None  # parent ids not in the store; None: not asked yet
        # The path to the last leaf asked for, as runs of consecutive positions (a cache: the next leaf is
        # usually a child of it), and the number of entries it was computed over.
        self._last_runs: list[tuple[int, int]] = []
        self._last_max = -1
        self._known = len(store)
        self._run_starts: list[int] = []  # positions whose parent is not the entry just before them
        self._runs_upto = 0  # how many positions ``_run_starts`` covers
        self._children: dict[str | None, list[int]] | None = None
        self._times: dict[int, float] = {}

    def _invalidate(self) -> None:
        self._ppos = None
        self._children = None
        self._last_runs = []

    def _check_generation(self) -> None:
        if self._generation != self.store.generation:
            self._generation = self.store.generation
            self._invalidate()
            self._dangling = None
            self._run_starts, self._runs_upto = [], 0
            self._known = len(self.store)
            self._times = {}

    def on_append(self, i: int) -> None:
        """Keep the index current after ``store.append`` added entry ``i``."""
        self._check_generation()
        store = self.store
        if self._known == i:
            self._known = i + 1
        entry_id = store.id_at(i)
        if store.is_duplicate(entry_id) or entry_id in self._awaited():
            self._invalidate()  # a reused or awaited id re-points existing edges: rebuild lazily
            self._dangling = None
            return
        parent = store.parent_at(i)
        if parent and not store.has_id(parent):
            self._awaited().add(parent)
        if self._ppos is not None:
            if len(self._ppos) == i:
                self._ppos.extend(store.parent_positions(i))
            else:
                self._ppos = None
        if self._children is not None:
            self._children.setdefault(store.parent_at(i), []).append(i)

    def _awaited(self) -> set[str | None]:
        """Parent ids that no entry has yet (appending one re-points the entries that name it)."""
        if self._dangling is None:
            self._dangling = set(self.store.missing_parents())
        return self._dangling

    def _parent_positions(self) -> list[int]:
        ppos = self._ppos
        n = len(self.store)
        if ppos is None or len(ppos) < n:  # first use, or appends the caller did not announce
            ppos = self._ppos = self.store.parent_positions()
            _, parents = self.store.envelope_lists()
            # parent ids not (yet) in the store: appending one of them re-points its children
            self._dangling = set(compress(parents, map(eq, ppos, repeat(-1))))
            self._dangling.discard(None)
        return ppos

    # -- paths ---------------------------------------------------------------------------------------
    def path_to_root(self, i: int) -> list[int]:
        """Positions from the root down to entry ``i``; stops at a null/missing parent or a cycle."""
        out: list[int] = []
        for start, stop in self.path_runs(i):
            out.extend(range(start, stop))
        return out

    def path_runs(self, i: int) -> list[tuple[int, int]]:
        """The path root -> entry ``i`` as runs ``(start, stop)`` of consecutive positions, root first.

        In a session file nearly every entry's parent is the entry just before it, so a path of a hundred
        thousand entries is a few hundred runs: the walk jumps from the start of a run to its parent.
        """
        self._check_generation()
        store = self.store
        n = len(store)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"no entry at position {i}")
        if n != self._known:  # appends the caller did not announce: derived data may be stale
            self._invalidate()
            self._known = n
        cached = self._last_runs
        if cached:
            last = cached[-1][1] - 1
            if i == last:
                return list(cached)
            if i > self._last_max and self._parent_position(i) == last:  # a child of the last leaf
                start, stop = cached[-1]
                if stop == i:
                    cached[-1] = (start, i + 1)
                else:
                    cached.append((i, i + 1))
                self._last_max = i
                return list(cached)
        runs = self._walk_runs(i)
        if runs is None:  # duplicated ids, an entry with the id "", or a parent after its child
            runs = _as_runs(self._walk_positions(i))
        self._awaited()  # known before any append: an awaited id arriving makes the cached path stale
        self._last_runs, self._last_max = runs, max(stop for _, stop in runs) - 1
        return list(runs)

    def _parent_position(self, i: int) -> int:
        parent = self.store.parent_at(i)
        j = self.store.index_of(parent) if parent else None
        return -1 if j is None else j

    def _starts(self) -> list[int]:
        """``_run_starts`` brought up to date with the store."""
        n = len(self.store)
        if self._runs_upto < n:
            self._run_starts.extend(self.store.run_starts(self._runs_upto))
            self._runs_upto = n
        return self._run_starts

    def _walk_runs(self, i: int) -> list[tuple[int, int]] | None:
        """The run walk (``None`` when ids are not unique or a parent comes later in the file: such a
        path may hold a cycle, and the position walk decides)."""
        store = self.store
        if store.has_duplicates or store.index_of("") is not None:
            return None
        starts = self._starts()
        parent_at, index_before = store.parent_at, store.index_before
        runs: list[tuple[int, int]] = []
        current = i
        while True:
            start = starts[bisect_right(starts, current) - 1]
            runs.append((start, current + 1))
            parent = parent_at(start)
            j = index_before(parent, start) if parent else None  # an empty parentId ends a walk, as in pi
            if j is None:
                break
            if j >= start:
                return None
            current = j
        runs.reverse()
        return runs

    def _walk_positions(self, i: int) -> list[int]:
        """The walk over every entry's parent position, root first; stops at the first repeat (a cycle)."""
        ppos = self._parent_positions()
        n = len(ppos)
        path: list[int] = []
        append = path.append
        current = i
        for _ in range(n):
            append(current)
            current = ppos[current]
            if current < 0:
                break
        else:  # more steps than entries: a cycle; walk again, stopping at the first repeat
            path = []
            seen: set[int] = set()
            current = i
            while current >= 0 and current not in seen:
                seen.add(current)
                path.append(current)
                current = ppos[current]
            self._report_cycle(min(path[path.index(current) :]))  # the cycle's first entry, as find_cycles
        path.reverse()
        return path

    def find_cycles(self) -> list[list[int]]:
        """Every parent cycle (positions, in walk order), each reported once as a ``cycle`` problem."""
        self._check_generation()
        if self.store.ordered_parents() is not None:  # every parent before its child: no cycle to find
            return []
        ppos = self._parent_positions()
        state = bytearray(len(ppos))  # 0 unseen, 1 on the current walk, 2 finished
        cycles: list[list[int]] = []
        for start in range(len(ppos)):
            if state[start]:
                continue
            walk: list[int] = []
            current = start
            while current >= 0 and not state[current]:
                state[current] = 1
                walk.append(current)
                current = ppos[current]
            if current >= 0 and state[current] == 1:
                cycle = walk[walk.index(current) :]
                cycles.append(cycle)
                self._report_cycle(min(cycle))
            for position in walk:
                state[position] = 2
        return cycles

    def _report_cycle(self, i: int) -> None:
        entry_id = self.store.id_at(i)
        if ("cycle", entry_id) in self._reported:
            return
        self._reported.add(("cycle", entry_id))
        line = self.store.line_of(i)
        # a store without a file may name where it lives (a database store's session: its URL)
        where = (
            str(self.store.path)
            if self.store.path is not None
            else getattr(self.store, "location", "<memory>")
        )
        self.problems.append(
            Problem(
                "cycle",
                line,
                f"{where}: line {line}: entry {entry_id!r} is part of a parent cycle; walks stop there",
                entry_id,
            )
        )

    # -- children ------------------------------------------------------------------------------------
    def _build_children(self) -> dict[str | None, list[int]]:
        store = self.store
        children: dict[str | None, list[int]] = {}
        if not store.has_duplicates:
            _, parents = store.envelope_lists()
            for i, parent in enumerate(parents):
                children.setdefault(parent, []).append(i)
            return children
        # pi iterates its id map: one entry per id (the last copy), in order of the id's first appearance
        seen: set[str] = set()
        for i in range(len(store)):
            entry_id = store.id_at(i)
            if entry_id in seen:
                continue
            seen.add(entry_id)
            last = store.index_of(entry_id)
            assert last is not None
            children.setdefault(store.parent_at(last), []).append(last)
        return children

    def children_of(self, entry_id: str | None) -> list[int]:
        """Positions of the entries whose ``parentId`` is ``entry_id``, in insertion order (pi's getChildren)."""
        self._check_generation()
        if self._children is None:
            self._children = self._build_children()
        return list(self._children.get(entry_id, ()))

    # -- get_tree ------------------------------------------------------------------------------------
    def _time(self, i: int) -> float:
        value = self._times.get(i)
        if value is None:
            parsed = parse_iso_ms(self.store.timestamp_at(i))
            value = math.nan if parsed is None else parsed
            self._times[i] = value
        return value

    def get_tree(self, labels: Mapping[str, tuple[str, str | None]] | None = None) -> list[TreeNode]:
        """pi's ``getTree()``: one node per id (the last copy wins), roots in file order, children by timestamp.

        ``labels`` maps an entry id to ``(label, labelTimestamp)``. Entries caught in a parent cycle are
        still listed: the cycle's first entry in file order becomes an extra root (a ``cycle`` problem).
        """
        self._check_generation()
        # one node object per entry and no garbage cycles: no collection passes meanwhile, and the nodes filed
        # as old objects at the end (re-enabling the collector alone left them young, for the next young
        # collection to walk all of them: about 20 ms at 100k entries)
        with bulk_allocation():
            fast = None if self.store.has_duplicates else self._fast_tree()
            if fast is None:
                roots, by_id = self._pi_tree()
                lookup: Callable[[str], TreeNode | None] = by_id.get
            else:
                roots, by_position = fast
                found = self.store.last_positions(labels) if labels else {}

                def lookup(entry_id: str) -> TreeNode | None:
                    j = found.get(entry_id)
                    return None if j is None else by_position[j]

        if labels:
            for entry_id, (label, stamp) in labels.items():
                labelled = lookup(entry_id)
                if labelled is not None:
                    labelled.label, labelled.label_timestamp = label, stamp
        return roots

    def _fast_tree(self) -> tuple[list[TreeNode], list[TreeNode]] | None:
        """Unique ids: a node per position, parents by position. ``None`` when a cycle needs the full walk."""
        store = self.store
        ordered = store.ordered_parents()
        if ordered is not None:
            return self._ordered_tree(*ordered)
        ppos = self._parent_positions()
        nodes = [TreeNode(store, i) for i in range(len(ppos))]
        roots: list[TreeNode] = []
        for i, p in enumerate(ppos):
            if p < 0 or p == i:
                roots.append(nodes[i])
            else:
                nodes[p].children.append(nodes[i])
        stack = list(roots)
        visited = 0
        sort = self._sort_children
        while stack:
            node = stack.pop()
            visited += 1
            children = node.children
            if children:
                if len(children) > 1:
                    sort(node)
                stack.extend(children)
        if visited != len(nodes):
            return None
        return roots, nodes

    def _ordered_tree(self, starts: list[int], parents: list[int]) -> tuple[list[TreeNode], list[TreeNode]]:
        """Every parent before its child (``ordered_parents``): no cycle, so no walk. Each position that does
        not start a run is the first child of the one before it (linked in C loops); each start is then added
        to its parent's children, so children are in position order, and sorted where a node has more than
        one (only a run's start has a parent with another child)."""
        store = self.store
        n = len(store)
        with bulk_allocation():  # filed as old objects: the next young collection does not walk them
            nodes = list(map(TreeNode, repeat(store, n), range(n)))
        follows = bytearray(b"\x01") * n  # whether position i's parent is i - 1
        for start in starts:
            follows[start] = 0
        after = follows[1:]
        deque(
            map(list.append, map(_CHILDREN, compress(nodes, after)), compress(islice(nodes, 1, None), after)),
            0,
        )
        roots: list[TreeNode] = []
        branched: set[int] = set()
        for start, parent in zip(starts, parents, strict=True):
            if parent < 0:
                roots.append(nodes[start])
            else:
                nodes[parent].children.append(nodes[start])
                branched.add(parent)
        sort = self._sort_children
        for parent in branched:
            sort(nodes[parent])
        return roots, nodes

    def _pi_tree(self) -> tuple[list[TreeNode], dict[str, TreeNode]]:
        """pi's construction keyed by id, cycle-safe; a duplicated id is one node, placed by its last copy.

        pi pushes a duplicated id's (single) node under the parent of every copy, so its tree holds the node
        several times and any walk over it grows as 2^depth; here each id appears exactly once.
        """
        store = self.store
        ids, parents = store.envelope_lists()
        nodes: dict[str, TreeNode] = {}
        for i, entry_id in enumerate(ids):
            nodes[entry_id] = TreeNode(store, i)
        roots: list[TreeNode] = []
        for i, entry_id in enumerate(ids):
            node = nodes[entry_id]
            if node.index != i:  # an earlier copy of a duplicated id: only the last copy is placed
                continue
            parent = parents[i]
            holder = nodes.get(parent) if parent is not None and parent != entry_id else None
            if holder is None:
                roots.append(node)
            else:
                holder.children.append(node)
        state: dict[int, int] = {}  # id(node) -> 1 while on the DFS stack, 2 when done
        for root in roots:
            self._settle(root, state)
        if len(state) < len(nodes):
            for i, entry_id in enumerate(ids):
                node = nodes[entry_id]
                if id(node) not in state and node.index == i:
                    start = self._cycle_root(node, nodes, state)
                    self._report_cycle(start.index)
                    roots.append(start)
                    self._settle(start, state)
        return roots, nodes

    def _cycle_root(self, node: TreeNode, nodes: dict[str, TreeNode], state: dict[int, int]) -> TreeNode:
        """The first entry (file order) of the cycle above an unreachable ``node``."""
        store = self.store
        order: list[TreeNode] = []
        position: dict[int, int] = {}
        current = node
        while id(current) not in position:
            position[id(current)] = len(order)
            order.append(current)
            parent = store.parent_at(current.index)
            above = nodes.get(parent) if parent is not None else None
            if above is None or id(above) in state:
                return current
            current = above
        cycle = order[position[id(current)] :]
        return min(cycle, key=lambda c: c.index)

    def _settle(self, root: TreeNode, state: dict[int, int]) -> None:
        """Sort children by time and cut edges that close a cycle (iterative DFS from ``root``)."""
        if id(root) in state:
            return
        stack: list[tuple[TreeNode, int]] = [(root, 0)]
        state[id(root)] = 1
        self._sort_children(root)
        while stack:
            node, k = stack[-1]
            if k >= len(node.children):
                state[id(node)] = 2
                stack.pop()
                continue
            stack[-1] = (node, k + 1)
            child = node.children[k]
            mark = state.get(id(child))
            if mark == 1:  # back edge: the child is an ancestor; report the cycle by its first entry
                del node.children[k]
                stack[-1] = (node, k)
                on_stack = [n for n, _ in stack]
                members = on_stack[next(j for j, n in enumerate(on_stack) if n is child) :]
                self._report_cycle(min(n.index for n in members))
            elif mark is None:
                state[id(child)] = 1
                self._sort_children(child)
                stack.append((child, 0))

    def _sort_children(self, node: TreeNode) -> None:
        children = node.children
        if len(children) > 1:
            time = self._time
            children.sort(key=lambda c: _SORT_KEY(time(c.index)))
