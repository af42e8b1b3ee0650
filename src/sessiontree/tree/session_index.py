"""What a ``SessionManager`` reads and writes through: one session's entries, paths, tree, labels and name.

``SessionIndex`` is the protocol every back end supplies; ``LocalIndex`` implements it for the stores that
hold an envelope index of the whole session in memory (JSONL files, memory, and SQL sessions loaded whole).
It must not decide leaves, labels or contexts (the manager and ``context.py`` do); it only answers lookups.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import repeat
from operator import add, le
from pathlib import Path
from typing import Any, overload

from sessiontree.errors import StorageError
from sessiontree.tree.entry_store import ContextFields, EntryStore, Problem
from sessiontree.tree.tree_index import TreeIndex, TreeNode

__all__ = ["EntryIdInUse", "LocalIndex", "PathView", "SessionIndex"]


class EntryIdInUse(StorageError):
    """The store found the id of a new entry taken when it wrote it (``SessionIndex.new_id_in_use`` had let it
    through unchecked): nothing of the transaction was written; the manager builds the entry again with
    another id."""

    kind = "id_in_use"

    def __init__(self, message: str, entry_id: str) -> None:
        super().__init__(message)
        self.entry_id = entry_id


Entry = dict[str, Any]
_LABEL_AND_NAME = frozenset({"label", "session_info"})


class PathView(Sequence[Entry]):
    """A root-first path whose types, ids and parents are known up front; entries are decoded on demand.

    ``load(i)`` decodes entry ``i`` of the path and ``raw(i)`` gives its exact line; a view may also be
    sparse (only the entries a context needs, in path order), which ``context.py`` cannot tell apart.
    """

    __slots__ = ("_load", "_load_many", "_parents", "_preload", "_raw", "has_type", "ids", "types")

    def __init__(
        self,
        ids: list[str],
        types: list[str],
        parents: list[str | None] | Callable[[], list[str | None]],
        load: Callable[[int], Entry],
        raw: Callable[[int], bytes],
        preload: Callable[[Sequence[int]], None] | None = None,
        load_many: Callable[[Sequence[int]], list[Entry]] | None = None,
        has_type: Callable[[str], bool] | None = None,
    ) -> None:
        self.ids = ids
        self.types = types
        self._parents = parents
        self._load = load
        self._raw = raw
        self._preload = preload
        self._load_many = load_many
        self.has_type = has_type
        """Whether the session may hold an entry of a type (``None``: not known, any may be on the path)."""

    def preload(self, indexes: Sequence[int]) -> None:
        """Decode the entries at these indexes of the path now, in bulk, for a caller about to read them
        all (a file store reads nearby lines together instead of one read per entry)."""
        if self._preload is not None and indexes:
            self._preload(indexes)

    @property
    def parents(self) -> list[str | None]:
        """Every entry's ``parentId`` (computed on first use)."""
        if callable(self._parents):
            self._parents = self._parents()
        return self._parents

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return [self._load(i) for i in range(len(self.ids))[index]]
        if index < 0:
            index += len(self.ids)
        if not 0 <= index < len(self.ids):
            raise IndexError(index)
        return self._load(index)

    def entries_at(self, indexes: Sequence[int]) -> list[Entry]:
        """``[self[i] for i in indexes]`` (non-negative indexes), in one call where the view can."""
        if self._load_many is not None:
            return self._load_many(indexes)
        return [self[i] for i in indexes]

    def raw(self, index: int) -> bytes:
        """The exact line of entry ``index`` (without its newline)."""
        return self._raw(index)


class _RunPositions:
    """Store positions of a path given as runs, by index along the path, without listing them all."""

    __slots__ = ("_asked", "_last", "_offsets", "_runs")

    def __init__(self, runs: list[tuple[int, int]]) -> None:
        self._runs = runs
        self._offsets: list[int] = []  # the path index of each run's first entry
        total = 0
        for start, stop in runs:
            self._offsets.append(total)
            total += stop - start
        self._last = 0  # the run of the last lookup: reads along a path mostly stay in one run
        self._asked: tuple[list[int], list[int]] | None = None  # the last ``many``: its indexes, its answer

    def __getitem__(self, k: int) -> int:
        j = self._last
        offsets = self._offsets
        if not (offsets[j] <= k and (j + 1 == len(offsets) or k < offsets[j + 1])):
            if not offsets or k < 0:
                raise IndexError(k)
            j = self._last = bisect_right(offsets, k) - 1
        start, stop = self._runs[j]
        position = start + k - offsets[j]
        if position >= stop:
            raise IndexError(k)
        return position

    def __iter__(self) -> Iterator[int]:
        for start, stop in self._runs:
            yield from range(start, stop)

    def many(self, indexes: Sequence[int]) -> list[int]:
        """``[self[k] for k in indexes]`` in one loop (in C per run when the indexes ascend, as a context's do);
        the same indexes again (a context preloads its entries, then reads them) are answered from the last
        call (compared in C)."""
        asked = self._asked
        if asked is not None and asked[0] == indexes:
            return list(asked[1])
        answer = self._many(indexes)
        self._asked = (list(indexes), answer)
        return list(answer)

    def _many(self, indexes: Sequence[int]) -> list[int]:
        if len(indexes) > 1 and all(map(le, indexes, indexes[1:])):
            return self._ascending(indexes)
        runs, offsets = self._runs, self._offsets
        count = len(offsets)
        out: list[int] = []
        add = out.append
        j, low, high = -1, 0, -1  # the current run and the path indexes it covers
        for k in indexes:
            if not low <= k < high:
                if not 0 <= k < (offsets[-1] + runs[-1][1] - runs[-1][0] if count else 0):
                    raise IndexError(k)
                j = bisect_right(offsets, k) - 1
                low = offsets[j]
                high = offsets[j + 1] if j + 1 < count else low + runs[j][1] - runs[j][0]
            add(runs[j][0] + k - low)
        return out

    def _ascending(self, indexes: Sequence[int]) -> list[int]:
        runs, offsets = self._runs, self._offsets
        count = len(offsets)
        total = offsets[-1] + runs[-1][1] - runs[-1][0] if count else 0
        if indexes[0] < 0:
            raise IndexError(indexes[0])
        if indexes[-1] >= total:  # the first one out of range, as the loop in ``many`` would find
            raise IndexError(indexes[bisect_left(indexes, total)])
        out: list[int] = []
        i, n = 0, len(indexes)
        while i < n:
            j = bisect_right(offsets, indexes[i]) - 1
            stop = bisect_left(indexes, offsets[j + 1], i) if j + 1 < count else n
            out += map(add, indexes[i:stop], repeat(runs[j][0] - offsets[j]))
            i = stop
        return out


class SessionIndex(ABC):
    """One session as the manager sees it. Reads are answered from the back end; writes append entries.

    ``generation`` changes when the back end re-reads the session because another writer changed it; the
    manager then asks for labels and the leaf again.
    """

    path: Path | None
    read_only: bool
    atomic: bool = False
    """Whether ``transaction()`` is all-or-nothing (SQL stores); file and memory stores write as they go."""

    @property
    @abstractmethod
    def header(self) -> dict[str, Any] | None:
        """The session header (``None`` for a new session that has none yet)."""

    @property
    @abstractmethod
    def problems(self) -> list[Problem]:
        """Problems found while loading or writing (the manager adds reference problems and cycles)."""

    @property
    @abstractmethod
    def generation(self) -> int:
        """Changes whenever the session was read again from scratch."""

    @property
    def remote(self) -> bool:
        """Whether calls can wait on a network: async callers run them in a worker thread."""
        return False

    durable_on_commit: bool = False
    """Whether every write is as durable as it gets once it returns (``sync`` does nothing; callers may skip it)."""

    @property
    def change_reason(self) -> str:
        """Why the session was last read again (``generation`` changed), as the manager's note says it."""
        return "another writer appended meanwhile"

    @property
    def location(self) -> str | None:
        """Where the session lives, as a header's ``parentSession`` names it (a file path, a store URL)."""
        return str(self.path) if self.path is not None else None

    @property
    @abstractmethod
    def is_persisted(self) -> bool:
        """Whether the header has been written."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of entries (duplicate ids included)."""

    @abstractmethod
    def last_leaf(self) -> str | None:
        """The leaf after replaying the session: the last entry's id (a ``leaf`` entry's target)."""

    @abstractmethod
    def contains(self, entry_id: str) -> bool:
        """Whether some entry has this id."""

    def new_id_in_use(self, entry_id: str) -> bool:
        """Whether a random id drawn for the next entry is taken (``contains``). A store that checks it as it
        writes that entry may answer from what it knows without asking, and then refuses a taken id with
        ``EntryIdInUse``, writing nothing."""
        return self.contains(entry_id)

    @abstractmethod
    def get_entry(self, entry_id: str) -> Entry | None:
        """The entry with this id (its last copy), decoded."""

    @abstractmethod
    def position(self, entry_id: str) -> int | None:
        """The append-order position (0-based) of the entry with this id (its last copy)."""

    @abstractmethod
    def entries(self) -> list[Entry]:
        """Every entry in append order."""

    @abstractmethod
    def envelopes(self) -> tuple[list[str], list[str | None], list[str]]:
        """Ids, parent ids and types of every entry, in append order."""

    @abstractmethod
    def raw_lines(self) -> Iterator[bytes]:
        """Every entry's line (without its newline and a trailing ``\r``), in append order."""

    @abstractmethod
    def ids_starting_with(self, prefix: str) -> list[str]:
        """The distinct ids that start with ``prefix``, in order of first appearance."""

    @abstractmethod
    def path_view(self, leaf_id: str | None) -> PathView:
        """The whole path root -> ``leaf_id`` (empty for ``None`` or an unknown id)."""

    def context_view(self, leaf_id: str | None) -> PathView:
        """The entries of the path that building the context at ``leaf_id`` needs (the whole path here)."""
        return self.path_view(leaf_id)

    def cached_context(self, leaf_id: str | None) -> ContextFields | None:
        """The context at ``leaf_id`` as the back end kept it from an earlier build over the same content
        (the JSONL store's context cache), or ``None``: then it is built from ``context_view``."""
        return None

    @abstractmethod
    def children(self, entry_id: str) -> list[Entry]:
        """Entries whose parent is ``entry_id`` (pi's ``getChildren``)."""

    @abstractmethod
    def tree(self, labels: Mapping[str, tuple[str, str | None]]) -> list[TreeNode]:
        """pi's ``getTree()`` with these labels."""

    @abstractmethod
    def cycle_problems(self) -> list[Problem]:
        """Problems found by walking the tree (cycles), each reported once."""

    @abstractmethod
    def label_and_name_entries(self) -> list[Entry]:
        """Every ``label`` and ``session_info`` entry, in append order."""

    @abstractmethod
    def append(self, entry: Mapping[str, Any]) -> None:
        """Persist one entry as the next in append order."""

    @abstractmethod
    def prepare_write(self) -> None:
        """Take the writer role before an entry is built (see ``EntryStore.prepare_write``)."""

    @abstractmethod
    def set_header(self, header: Mapping[str, Any]) -> None:
        """The header of a new session (written with the first entry)."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group appends: one transaction where the back end has them (SQL); nothing to do for files."""
        yield

    @abstractmethod
    def sync(self) -> None:
        """Make every appended entry durable now."""

    @abstractmethod
    def close(self) -> None:
        """Release the writer role and connections; idempotent."""


class LocalIndex(SessionIndex):
    """``SessionIndex`` over a store that indexes every envelope in memory, with a ``TreeIndex`` beside it."""

    def __init__(self, store: EntryStore) -> None:
        self.store = store
        self.path = store.path
        self.read_only = store.read_only
        self.tree_index = TreeIndex(store)

    @property
    def header(self) -> dict[str, Any] | None:
        return self.store.header

    @property
    def problems(self) -> list[Problem]:
        return self.store.problems

    @property
    def generation(self) -> int:
        return self.store.generation

    @property
    def remote(self) -> bool:
        return self.store.remote

    @property
    def is_persisted(self) -> bool:
        return self.store.is_persisted

    def __len__(self) -> int:
        return len(self.store)

    def last_leaf(self) -> str | None:
        store = self.store
        if not len(store):
            return None
        last = len(store) - 1
        if store.type_at(last) == "leaf":
            target = store.entry_at(last).get("targetId")
            return target if isinstance(target, str) else None
        return store.id_at(last)

    def contains(self, entry_id: str) -> bool:
        return self.store.has_id(entry_id)

    def get_entry(self, entry_id: str) -> Entry | None:
        i = self.store.index_of(entry_id)
        return None if i is None else self.store.entry_at(i)

    def position(self, entry_id: str) -> int | None:
        return self.store.index_of(entry_id)

    def entries(self) -> list[Entry]:
        return self.store.entries()

    def envelopes(self) -> tuple[list[str], list[str | None], list[str]]:
        ids, parents = self.store.envelope_lists()
        return list(ids), list(parents), self.store.types_at(range(len(ids)))

    def raw_lines(self) -> Iterator[bytes]:
        store = self.store
        for i in range(len(store)):
            yield store.raw_at(i)

    def ids_starting_with(self, prefix: str) -> list[str]:
        ids, _ = self.store.envelope_lists()
        return list(dict.fromkeys(i for i in ids if i.startswith(prefix)))

    def positions(self, leaf_id: str | None) -> list[int]:
        """Store positions of the path root -> ``leaf_id``."""
        if leaf_id is None:
            return []
        i = self.store.index_of(leaf_id)
        return [] if i is None else self.tree_index.path_to_root(i)

    def _runs(self, leaf_id: str | None) -> list[tuple[int, int]]:
        i = None if leaf_id is None else self.store.index_of(leaf_id)
        return [] if i is None else self.tree_index.path_runs(i)

    def path_view(self, leaf_id: str | None) -> PathView:
        return self._view(self._runs(leaf_id))

    def context_view(self, leaf_id: str | None) -> PathView:
        runs = self._runs(leaf_id)
        if runs:
            self.store.note_context(runs)
        return self._view(runs)

    def cached_context(self, leaf_id: str | None) -> ContextFields | None:
        runs = self._runs(leaf_id)
        return self.store.cached_context(runs) if runs else None

    def _view(self, runs: list[tuple[int, int]]) -> PathView:
        store = self.store
        positions = _RunPositions(runs)
        return PathView(
            store.ids_in(runs),
            store.types_in(runs),
            lambda: [store.parent_at(p) for p in positions],
            lambda i: store.entry_at(positions[i]),
            lambda i: store.raw_at(positions[i]),
            lambda indexes: store.preload(positions.many(indexes)),
            lambda indexes: store.entries_at(positions.many(indexes)),
            store.has_type,
        )

    def children(self, entry_id: str) -> list[Entry]:
        return [self.store.entry_at(i) for i in self.tree_index.children_of(entry_id)]

    def tree(self, labels: Mapping[str, tuple[str, str | None]]) -> list[TreeNode]:
        return self.tree_index.get_tree(labels)

    def cycle_problems(self) -> list[Problem]:
        self.tree_index.find_cycles()
        return self.tree_index.problems

    def label_and_name_entries(self) -> list[Entry]:
        store = self.store
        positions = store.positions_of(_LABEL_AND_NAME)
        store.preload(positions)  # nearby lines read together, not one read per entry
        return [store.entry_at(i) for i in positions]

    def append(self, entry: Mapping[str, Any]) -> None:
        self.store.append(entry)
        self.tree_index.on_append(len(self.store) - 1)

    def prepare_write(self) -> None:
        self.store.prepare_write()

    def set_header(self, header: Mapping[str, Any]) -> None:
        self.store.set_header(header)

    def sync(self) -> None:
        self.store.sync()

    def close(self) -> None:
        self.store.close()
