"""The store protocol every back end implements, the ``Problem`` record, and the shared envelope index.

Knows only the entry envelope (``type``, ``id``, ``parentId``, ``timestamp``) and raw lines; it must not
interpret messages, labels or leaves (that is the manager's and the context builder's job).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import ne
from pathlib import Path
from typing import Any, Literal

from sessiontree._bulk import bulk_allocation
from sessiontree.errors import CorruptSessionError, SessionError
from sessiontree.format import pi_json as _json

__all__ = [
    "DURABILITY_MODES",
    "NOTE_KINDS",
    "ContextFields",
    "Durability",
    "EntryStore",
    "IndexedStore",
    "Problem",
    "check_envelope",
]

_NEAR_SEARCH = 1 << 14
"""The most ids ``IndexedStore.index_before`` compares in its last window before it builds the id map."""

NOTE_KINDS = frozenset({"migrated", "symlink", "changed_on_disk", "stale_leaf", "torn_tail_moved"})
"""Problem kinds that describe what sessiontree did or noticed rather than damage in the file."""

Durability = Literal["flush", "fsync", "batch"]
DURABILITY_MODES: tuple[str, ...] = ("flush", "fsync", "batch")
ContextFields = tuple[list[dict[str, Any]], Any, dict[str, Any] | None, list[str] | None]
"""A built context as ``(messages, thinking level, model, active tool names)`` (``SessionContext``'s fields)."""


@dataclass(slots=True)
class Problem:
    """Something found while loading or writing a session that did not stop the work.

    ``kind`` is one of ``bad_header``, ``bad_line``, ``torn_tail``, ``torn_tail_moved``, ``missing_newline``,
    ``blank_lines``, ``extra_header``, ``duplicate_id``, ``dangling_parent``, ``cycle``, ``migrated``,
    ``changed_on_disk``, ``symlink``, ``stale_leaf`` (back ends and the manager may add their own; the kinds
    in ``NOTE_KINDS`` are notes, not damage). ``line`` is the 1-based physical line
    number in the file (``None`` when it does not apply); ``message`` names the file and the line.
    """

    kind: str
    line: int | None
    message: str
    entry_id: str | None = None

    @property
    def is_note(self) -> bool:
        """Whether this records something done or noticed (a migration, a link followed), not damage."""
        return self.kind in NOTE_KINDS

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``entryId`` omitted when unknown)."""
        out: dict[str, Any] = {"kind": self.kind, "line": self.line, "message": self.message}
        if self.entry_id is not None:
            out["entryId"] = self.entry_id
        return out


def check_envelope(entry: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless ``entry`` has a string ``type``/``id`` and a string-or-null ``parentId``."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"an entry must be a JSON object, not {type(entry).__name__}")
    if not isinstance(entry.get("type"), str) or not isinstance(entry.get("id"), str):
        raise ValueError("an entry needs a string 'type' and a string 'id'")
    if entry.get("type") == "session":
        raise ValueError("a 'session' header cannot be appended as an entry")
    parent = entry.get("parentId")
    if parent is not None and not isinstance(parent, str):
        raise ValueError("an entry's 'parentId' must be a string or null")


class EntryStore(ABC):
    """An append-only sequence of session entries plus the header: what the tree and the manager build on.

    Positions ``i`` run over valid entries in file order (header excluded, duplicate ids included).
    ``generation`` changes when the index is rebuilt from scratch (a file that changed on disk), so
    derived indexes (``TreeIndex``) know to rebuild.
    """

    path: Path | None
    header: dict[str, Any] | None
    problems: list[Problem]
    read_only: bool
    generation: int
    remote: bool = False
    """Whether calls can wait on a network (SQL servers): async callers run them in a worker thread."""
    durable_on_commit: bool = False
    """Whether every write is as durable as it will get once it returns (``sync`` then does nothing), so
    callers can skip calling it (a worker-thread hop per save point for a remote store)."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of valid entries (duplicate ids included, header excluded)."""

    @abstractmethod
    def id_at(self, i: int) -> str:
        """The ``id`` of entry ``i``."""

    @abstractmethod
    def parent_at(self, i: int) -> str | None:
        """The ``parentId`` of entry ``i`` (``None`` when null, missing or not a string)."""

    @abstractmethod
    def type_at(self, i: int) -> str:
        """The ``type`` of entry ``i``."""

    @abstractmethod
    def timestamp_at(self, i: int) -> str | None:
        """The ``timestamp`` of entry ``i`` (``None`` when missing or not a string)."""

    @abstractmethod
    def entry_at(self, i: int) -> dict[str, Any]:
        """Entry ``i`` decoded (cached; callers must not mutate it)."""

    def entries_at(self, positions: Sequence[int]) -> list[dict[str, Any]]:
        """``[entry_at(i) for i in positions]``."""
        return list(map(self.entry_at, positions))

    def has_type(self, kind: str) -> bool:
        """Whether an entry of the session may have the type ``kind`` (``False``: none has; a store that does
        not keep track says ``True``)."""
        return True

    @abstractmethod
    def raw_at(self, i: int) -> bytes:
        """The exact bytes of entry ``i``'s line, without ``\\n`` and a trailing ``\\r``."""

    @abstractmethod
    def index_of(self, entry_id: str) -> int | None:
        """Position of the LAST entry with this id (pi's index behaviour), or ``None``."""

    def has_id(self, entry_id: str) -> bool:
        """Whether some entry has this id."""
        return self.index_of(entry_id) is not None

    def index_before(self, entry_id: str, before: int) -> int | None:
        """``index_of(entry_id)``, asked by a caller that expects the answer shortly before position
        ``before`` (a run's parent in a path walk); a store may search there first."""
        return self.index_of(entry_id)

    @abstractmethod
    def line_of(self, i: int) -> int | None:
        """1-based physical line number of entry ``i`` (``None`` when the store has no file lines)."""

    @abstractmethod
    def entries(self) -> list[dict[str, Any]]:
        """All entries decoded, in file order (entries not yet cached are decoded without caching)."""

    @abstractmethod
    def append(self, entry: Mapping[str, Any]) -> None:
        """Persist one entry (according to the durability setting) and add it to the index."""

    def prepare_write(self) -> None:  # noqa: B027 - an optional hook: stores that need nothing keep the no-op
        """Take the writer role now (the lock, a clean file end) so a caller can look before it appends.

        If the file changed on disk since it was indexed, it is indexed again first (``generation`` moves
        on), so what the caller reads next is what its entry will follow. Raises ``SessionLockedError`` when
        another writer holds the session; a no-op for stores that need nothing.
        """

    @abstractmethod
    def set_header(self, header: Mapping[str, Any]) -> None:
        """Give a store that has no header yet its header (written together with the first entry)."""

    @abstractmethod
    def sync(self) -> None:
        """Make every appended entry durable (fsync in ``batch`` mode; no-op where nothing is pending)."""

    @abstractmethod
    def close(self) -> None:
        """Release the writer lock and file handles; idempotent. Reads keep working afterwards."""

    @property
    @abstractmethod
    def file_exists(self) -> bool:
        """Whether the backing file exists on disk (always ``False`` for memory stores)."""

    @property
    @abstractmethod
    def is_persisted(self) -> bool:
        """Whether the header has been written (a file store with entries on disk)."""

    @property
    def has_duplicates(self) -> bool:
        """Whether some id occurs more than once."""
        return False

    def is_duplicate(self, entry_id: str) -> bool:
        """Whether ``entry_id`` occurs more than once."""
        return False

    def envelope_lists(self) -> tuple[list[str], list[str | None]]:
        """Ids and parent ids of all positions (read-only views for fast whole-tree passes)."""
        n = len(self)
        return [self.id_at(i) for i in range(n)], [self.parent_at(i) for i in range(n)]

    def ids_at(self, positions: Iterable[int]) -> list[str]:
        """``[id_at(i) for i in positions]``, done in one call (cheap for long paths)."""
        return [self.id_at(i) for i in positions]

    def raws_at(self, positions: Sequence[int]) -> list[bytes]:
        """``[raw_at(i) for i in positions]``, done in one call (a file store reads the bytes once)."""
        return [self.raw_at(i) for i in positions]

    def preload(self, positions: Iterable[int]) -> None:
        """Decode and cache the entries at ``positions`` now, for a caller about to read them all (a file
        store reads them in a few large reads instead of one per entry)."""
        for i in positions:
            self.entry_at(i)

    def raw_views_at(self, positions: Sequence[int]) -> Sequence[bytes | memoryview]:
        """The lines of ``raws_at`` as read-only buffers that may share one read (no copy per line): for
        decoders that take any buffer; valid while the result is referenced."""
        return self.raws_at(positions)

    def line_runs_at(self, positions: Sequence[int]) -> Iterator[tuple[bytes, list[tuple[int, int]]]]:
        """The lines at ``positions``, in that order, as blocks, each with the ``(start, end)`` of its lines in it:
        a block holds lines with nothing but line endings between them (here: one line per block; a file
        store reads runs of neighbouring lines at once), for decoders of many values per call."""
        for raw in self.raws_at(positions):
            yield raw, [(0, len(raw))]

    def types_at(self, positions: Iterable[int]) -> list[str]:
        """``[type_at(i) for i in positions]``, done in one call (cheap for long paths)."""
        return [self.type_at(i) for i in positions]

    def positions_of(self, kinds: frozenset[str]) -> list[int]:
        """The positions, in order, of the entries whose ``type`` is one of ``kinds``."""
        return [i for i in range(len(self)) if self.type_at(i) in kinds]

    def run_starts(self, start: int = 0) -> list[int]:
        """The positions from ``start`` on whose ``parentId`` is not the id of the entry just before them
        (position 0 always): where the runs of consecutive parent links start."""
        return [i for i in range(start, len(self)) if i == 0 or self.parent_at(i) != self.id_at(i - 1)]

    def missing_parents(self) -> set[str]:
        """The parent ids (null aside) that no entry of the store has: entries awaiting them are roots until
        one is appended. Only a run's start can have one (any other entry's parent is the entry before)."""
        parents = {self.parent_at(i) for i in self.run_starts()}
        return {p for p in parents if p is not None and self.index_of(p) is None}

    def ids_in(self, runs: Iterable[tuple[int, int]]) -> list[str]:
        """The ids of the positions ``range(start, stop)`` of every run, in order."""
        return [self.id_at(i) for start, stop in runs for i in range(start, stop)]

    def types_in(self, runs: Iterable[tuple[int, int]]) -> list[str]:
        """The types of the positions ``range(start, stop)`` of every run, in order."""
        return [self.type_at(i) for start, stop in runs for i in range(start, stop)]

    def parent_positions(self, start: int = 0) -> list[int]:
        """For each position from ``start``: the position of its parent (last copy), or -1 (null/missing)."""
        out: list[int] = []
        for i in range(start, len(self)):
            parent = self.parent_at(i)
            j = self.index_of(parent) if parent else None
            out.append(-1 if j is None else j)
        return out

    def ordered_parents(self) -> tuple[list[int], list[int]] | None:
        """When every entry's parent is known to come before it and no id repeats (a store that read its parent
        positions with its rows): the positions whose parent is not the entry just before (``run_starts``)
        and their parents' positions (-1: none); the tree then has no cycle to look for. ``None`` otherwise."""
        return None

    def last_positions(self, entry_ids: Iterable[str]) -> dict[str, int]:
        """``{entry_id: index_of(entry_id)}`` for those of ``entry_ids`` in the store, asked in one call."""
        found = {entry_id: self.index_of(entry_id) for entry_id in entry_ids}
        return {k: v for k, v in found.items() if v is not None}

    def note_context(self, runs: Sequence[tuple[int, int]]) -> None:  # noqa: B027 - an optional hook
        """A context is about to be built from the path ``runs`` (positions, root first): a store that keeps
        contexts for the next process (the JSONL store's context cache) remembers which."""

    def cached_context(self, runs: Sequence[tuple[int, int]]) -> ContextFields | None:
        """The context of the path ``runs`` as an earlier process built it from the same content, when the
        store kept one that is still valid; ``None`` otherwise (the context is then built as always)."""
        return None

    def __enter__(self) -> EntryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class IndexedStore(EntryStore):
    """The envelope index shared by the file and memory stores: compact lists, a last-wins id map, a cache.

    Subclasses provide ``raw_at`` and ``line_of``; everything else lives here.
    """

    def __init__(self) -> None:
        self.path = None
        self.header = None
        self.problems = []
        self.read_only = False
        self.generation = 0
        self._lock = threading.RLock()
        self._reset_index()

    def _reset_index(self) -> None:
        self._ids: list[str] = []
        self._parents: list[str | None] = []
        self._types: list[str] = []
        self._timestamps: list[str | None] = []
        self._index_map: dict[str, int] | None = {}
        self._id_set: set[str] | None = None  # while ``_index_map`` is not built: the ids, all distinct
        self._cache: dict[int, dict[str, Any]] = {}
        self._duplicates: set[str] = set()
        self._type_names: dict[str, str] = {}
        self._kinds: set[str] | None = None  # the types of the entries, once asked for (``has_type``)
        self._breaks: list[int] = []  # ``run_starts()``: positions whose parent is not the entry before

    # -- reads ---------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._ids)

    def id_at(self, i: int) -> str:
        return self._ids[i]

    def parent_at(self, i: int) -> str | None:
        return self._parents[i]

    def type_at(self, i: int) -> str:
        return self._types[i]

    def timestamp_at(self, i: int) -> str | None:
        return self._timestamps[i]

    @property
    def _index(self) -> dict[str, int]:
        """The id -> last position map, built on first use after a whole index was installed."""
        index = self._index_map
        if index is None:
            with self._lock:  # as appends are: a reader building it does not lose a new id
                index = self._index_map
                if index is None:
                    index = dict(zip(self._ids, range(len(self._ids)), strict=True))
                    self._index_map, self._id_set = index, None
        return index

    def index_of(self, entry_id: str) -> int | None:
        id_set = self._id_set
        if id_set is not None:  # no map yet: the ids are distinct, the last one is found without it
            if entry_id not in id_set:
                return None
            ids = self._ids
            if ids[-1] == entry_id:
                return len(ids) - 1
        return self._index.get(entry_id)

    def has_id(self, entry_id: str) -> bool:
        id_set = self._id_set
        return entry_id in id_set if id_set is not None else entry_id in self._index

    def index_before(self, entry_id: str, before: int) -> int | None:
        # until the id map is built, the ids just before ``before`` are searched, in growing windows
        id_set = self._id_set
        if id_set is not None:
            if entry_id not in id_set:
                return None
            ids = self._ids
            high = min(before, len(ids))
            width = 64
            while high > 0 and width <= _NEAR_SEARCH:
                low = max(0, high - width)
                try:
                    return ids.index(entry_id, low, high)  # the only copy: the ids are distinct
                except ValueError:
                    high, width = low, width * 4
        return self.index_of(entry_id)

    @property
    def has_duplicates(self) -> bool:
        return bool(self._duplicates)

    def is_duplicate(self, entry_id: str) -> bool:
        return entry_id in self._duplicates

    def envelope_lists(self) -> tuple[list[str], list[str | None]]:
        n = len(self._ids)
        return self._ids[:n], self._parents[:n]

    def ids_at(self, positions: Iterable[int]) -> list[str]:
        return list(map(self._ids.__getitem__, positions))

    def types_at(self, positions: Iterable[int]) -> list[str]:
        return list(map(self._types.__getitem__, positions))

    def positions_of(self, kinds: frozenset[str]) -> list[int]:
        # list.index searches in C from the last hit on: one pass over the types per kind, one call per hit
        found: list[int] = []
        index = self._types.index
        for kind in kinds:
            i = -1
            try:
                while True:
                    i = index(kind, i + 1)
                    found.append(i)
            except ValueError:
                pass
        found.sort()
        return found

    def run_starts(self, start: int = 0) -> list[int]:
        breaks = self._breaks
        return breaks[bisect_left(breaks, start) :] if start else list(breaks)

    def missing_parents(self) -> set[str]:
        parents = self._parents
        wanted = {parents[i] for i in self._breaks}
        return {p for p in wanted if p is not None and not self.has_id(p)}

    def ids_in(self, runs: Iterable[tuple[int, int]]) -> list[str]:
        ids = self._ids
        out: list[str] = []
        for start, stop in runs:
            out += ids[start:stop]
        return out

    def types_in(self, runs: Iterable[tuple[int, int]]) -> list[str]:
        types = self._types
        out: list[str] = []
        for start, stop in runs:
            out += types[start:stop]
        return out

    def ordered_parents(self) -> tuple[list[int], list[int]] | None:
        # only the runs' starts have a parent that is not the entry before: each is looked for just before
        # its run (no id map is built); a parent at or after its child leaves the tree to the walk that
        # looks for cycles
        if self._duplicates:
            return None
        starts = self.run_starts()
        parents = self._parents
        found: list[int] = []
        for start in starts:
            parent = parents[start]
            j = None if parent is None or parent == "" else self.index_before(parent, start)
            if j is None:  # no parent, an empty one (which ends a walk, as in pi) or one not in the store
                found.append(-1)
            elif j >= start:
                return None
            else:
                found.append(j)
        return starts, found

    def parent_positions(self, start: int = 0) -> list[int]:
        parents = self._parents[start : len(self._ids)]
        lookup: Callable[[str | None, int], int] = self._index.get  # type: ignore[assignment]
        out = list(map(lookup, parents, repeat(-1)))
        if (
            self.index_of("") is not None
        ):  # an empty parentId ends a walk, as in pi, even if some entry has the id ""
            out = [-1 if p == "" else j for p, j in zip(parents, out, strict=True)]
        return out

    def last_positions(self, entry_ids: Iterable[str]) -> dict[str, int]:
        wanted = set(entry_ids)
        ids = self._ids
        if self._index_map is not None or len(wanted) * 64 > len(ids):
            return super().last_positions(wanted)
        # a few ids and no id map yet: one pass over the ids finds them (in C), the last copy winning
        return {ids[i]: i for i in compress(range(len(ids)), map(wanted.__contains__, ids))}

    @property
    def duplicate_ids(self) -> frozenset[str]:
        """Ids that occur more than once."""
        return frozenset(self._duplicates)

    def ids(self) -> list[str]:
        """All ids in file order (a copy)."""
        return list(self._ids)

    def entry_at(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += len(self._ids)
        cached = self._cache.get(i)
        if cached is None:
            cached = self._decode(i)
            self._cache[i] = cached
        return cached

    def has_type(self, kind: str) -> bool:
        """Whether an entry has the type ``kind``: the set of the types, made on the first question (one loop in
        C) and kept with every append. A context build asks for the kinds it looks for from the leaf back,
        so that it does not search a whole path for one that no entry has (pi's sessions hold no
        ``active_tools_change``)."""
        with self._lock:
            kinds = self._kinds
            if kinds is None:
                kinds = self._kinds = set(self._types)
            return kind in kinds

    def entries_at(self, positions: Sequence[int]) -> list[dict[str, Any]]:
        """``[entry_at(i) for i in positions]``: those decoded already taken from the cache in one loop in C."""
        found: list[Any] = list(map(self._cache.get, positions))
        if not all(found):  # (an entry is never an empty dict but for a damaged line: then it is looked up)
            entry_at = self.entry_at
            for k, value in enumerate(found):
                if value is None:
                    found[k] = entry_at(positions[k])
        return found

    def entries(self) -> list[dict[str, Any]]:
        cache = self._cache
        return [cache.get(i) or self._decode(i) for i in range(len(self._ids))]

    def iter_entries(self) -> Iterator[dict[str, Any]]:
        """Entries decoded one by one, in file order, without filling the cache."""
        for i in range(len(self._ids)):
            yield self._cache.get(i) or self._decode(i)

    def clear_cache(self) -> None:
        """Drop every decoded entry (they are decoded again on demand)."""
        self._cache.clear()

    def _decode(self, i: int) -> dict[str, Any]:
        return self._decode_raw(i, self.raw_at(i))

    def _decode_raws(self, positions: Sequence[int], raws: Sequence[memoryview]) -> list[dict[str, Any]]:
        """``[_decode_raw(i, raw) for ...]``: in one loop in C when every line parses as an object."""
        values = _json.loads_objects(raws)
        if values is None:
            return [self._decode_raw(i, raw) for i, raw in zip(positions, raws, strict=True)]
        return values

    def _decode_raw(self, i: int, raw: bytes | memoryview) -> dict[str, Any]:
        try:
            value = _json.loads(raw)
        except ValueError as exc:
            raise CorruptSessionError(
                f"{self._where()}: line {self.line_of(i)}: entry no longer parses: {exc}",
                path=str(self.path) if self.path else None,
                line=self.line_of(i),
            ) from exc
        if not isinstance(value, dict):
            raise CorruptSessionError(f"{self._where()}: line {self.line_of(i)}: entry is not an object")
        return value

    def _where(self) -> str:
        return str(self.path) if self.path is not None else "<memory>"

    # -- index maintenance ---------------------------------------------------------------------------
    def _add(self, entry_id: str, parent: str | None, kind: str, timestamp: str | None) -> int:
        """Add one envelope to the index; returns its position and reports a duplicate id."""
        i = len(self._ids)
        if not i or parent != self._ids[i - 1]:
            self._breaks.append(i)
        self._parents.append(parent)
        self._types.append(self._type_names.setdefault(kind, kind))
        if self._kinds is not None:
            self._kinds.add(kind)
        self._timestamps.append(timestamp)
        index = self._index  # built before the new id is listed
        self._ids.append(entry_id)  # last: readers use len(self._ids)
        if entry_id in index:
            self._report_duplicate(entry_id, i, index[entry_id])
        index[entry_id] = i
        return i

    def _report_duplicate(self, entry_id: str, i: int, earlier: int) -> None:
        """Record that the envelope at ``i`` repeats the id of the one at ``earlier`` (the later one wins)."""
        self._duplicates.add(entry_id)
        self.problems.append(
            Problem(
                "duplicate_id",
                self.line_of(i),
                f"{self._where()}: line {self.line_of(i)}: duplicate entry id {entry_id!r} "
                f"(also on line {self.line_of(earlier)}; the later entry wins)",
                entry_id,
            )
        )

    def _install(
        self,
        ids: list[str],
        parents: list[str | None],
        types: list[str],
        timestamps: list[str | None],
        known_breaks: tuple[list[int], int] | None = None,
    ) -> None:
        """Take over a whole scanned index (positions 0..n-1) and report duplicate and dangling ids.

        ``known_breaks`` (from an index cache): ``(run_starts of the first positions, how many positions)``;
        only the positions after those are compared.
        """
        # large containers of untracked objects: collection passes would only cost time
        with bulk_allocation():
            self._install_index(ids, parents, types, timestamps, known_breaks)

    def _install_index(
        self,
        ids: list[str],
        parents: list[str | None],
        types: list[str],
        timestamps: list[str | None],
        known_breaks: tuple[list[int], int] | None,
    ) -> None:
        self._ids, self._parents, self._types, self._timestamps = ids, parents, types, timestamps
        self._kinds = None
        # The id map (a dict of n ints) is built on first use: a set finds duplicates and dangling parents
        # at about half the cost, and a path walk finds a run's parent just before it (``index_before``).
        id_set = set(ids)
        self._cache = {}
        if len(id_set) != len(ids):
            self._index_map, self._id_set = dict(zip(ids, range(len(ids)), strict=True)), None
            first: dict[str, int] = {}
            for i, entry_id in enumerate(ids):
                if entry_id in first:
                    self._report_duplicate(entry_id, i, first[entry_id])
                first[entry_id] = i
        else:
            self._index_map, self._id_set = None, id_set
        self._report_dangling(known_breaks, id_set)

    def _report_dangling(
        self, known_breaks: tuple[list[int], int] | None = None, id_set: set[str] | None = None
    ) -> None:
        """Report entries whose parent id is not in the store (and note where the runs start, see
        ``_install`` for ``known_breaks``); ``id_set``: the store's ids, when the caller has them."""
        index: set[str] | dict[str, int] = self._index if id_set is None else id_set
        parents = self._parents
        ids = self._ids
        n = len(parents)
        breaks, covered = (
            ([], 0) if known_breaks is None else (list(known_breaks[0]), min(known_breaks[1], n))
        )
        if covered == 0 and n:
            breaks, covered = [0], 1
        # Most entries point at the entry just before them: only the others start a run (compared in C).
        changed = map(ne, parents[covered:n], ids[covered - 1 : n - 1]) if covered else iter(())
        breaks += compress(range(covered, n), changed)
        self._breaks = breaks
        candidates = {parents[b] for b in breaks}
        missing = candidates.difference(index)
        missing.discard(None)
        if not missing:
            return
        for i in range(n):
            p = parents[i]
            if p is not None and p in missing:
                self.problems.append(
                    Problem(
                        "dangling_parent",
                        self.line_of(i),
                        f"{self._where()}: line {self.line_of(i)}: entry {self._ids[i]!r} has parent "
                        f"{p!r}, which is not in the session (it becomes a root)",
                        self._ids[i],
                    )
                )

    def _check_new_header(self, header: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(header, Mapping) or header.get("type") != "session":
            raise ValueError("a session header needs type 'session'")
        if not isinstance(header.get("id"), str):
            raise ValueError("a session header needs a string 'id'")
        if self.header is not None:
            raise SessionError(f"{self._where()}: the session already has a header", kind="invalid_argument")
        return dict(header)
