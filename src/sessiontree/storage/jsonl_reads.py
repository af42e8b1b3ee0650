"""The read side of the JSONL file store: lines read back by offset, decoded on demand, nearby lines together.

A base class of ``JsonlStore`` (``jsonl.py`` holds opening and scanning, ``jsonl_writes.py`` the writes):
entries are read with ``pread`` from a reader descriptor and decoded when asked for; entries an earlier
process decoded come from the body cache (``body_cache.py``) when it holds them, and a whole context an
earlier process built from the same file from the context cache (``context_cache.py``).
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, islice, pairwise, repeat
from operator import gt, lt, sub
from pathlib import Path
from typing import Any

from sessiontree._bulk import bulk_allocation
from sessiontree.tree.context import context_from_path, context_indexes
from sessiontree.tree.entry_store import ContextFields, IndexedStore
from sessiontree.tree.session_index import PathView

from ..errors import SessionError, StorageError
from . import _fileio, body_cache, context_cache, index_cache
from ._lines import LineTable

__all__ = ["JsonlReads"]

_READ_GAP = (
    1 << 15
)  # lines further apart than this are read separately (one pread costs about as much as copying 32 KiB)
_READ_BYTES = 1 << 16
"""At most this much is read at once for a bulk decode (unless one line is longer): reads of this size
stay below the C allocator's threshold for a fresh mapping, so each reuses the memory the last one freed."""
_NEW_BODIES = 16  # a store that decoded fewer entries than this beyond the body cache leaves it as it is
_BODIES_FOR = 128
"""The body cache is read (once) for a bulk decode of at least this many entries: reading and indexing it
costs about as much as decoding a hundred small lines from JSON (the labels of a session, say)."""


class JsonlReads(IndexedStore):
    """Reading a pi session file's entries by position (the base of ``JsonlStore``)."""

    path: Path
    _path: Path
    _lock: threading.RLock
    _table: LineTable
    _rfd: int | None
    _buf: bytes | None
    _identity: tuple[int, int, int] | None
    _bodies: body_cache.Bodies | None
    _bodies_pending: tuple[os.stat_result, int] | None  # (fstat, entries) at open, until the cache is read
    _context_runs: list[tuple[int, int]] | None  # the path of the last context built (``note_context``)
    _context_hit: list[tuple[int, int]] | None  # the path whose context came from the context cache

    def _reader(self) -> int:
        if self._rfd is not None:
            return self._rfd
        with self._lock:
            if self._rfd is not None:
                return self._rfd
            fd = _fileio.open_regular(self._path)
            st = os.fstat(fd)
            if self._identity is not None and (st.st_dev, st.st_ino) != self._identity[:2]:
                os.close(fd)
                raise StorageError(
                    f"{self.path}: the file was replaced on disk; open it again", path=str(self.path)
                )
            self._rfd = fd
            return fd

    def _drop_reader(self) -> None:
        if self._rfd is not None:
            os.close(self._rfd)
            self._rfd = None

    def _pread(self, offset: int, size: int) -> bytes:
        return os.pread(self._reader(), size, offset)

    def _read_range(self, start: int, end: int) -> bytes:
        if self._buf is not None:
            return self._buf[start:end]
        data = self._pread(start, end - start)
        if len(data) != end - start:
            raise StorageError(f"{self.path}: the file shrank on disk; open it again", path=str(self.path))
        return data

    def raw_at(self, i: int) -> bytes:
        if i < 0:
            i += len(self._ids)
        return self._read_range(*self._table.span(i))

    def raws_at(self, positions: Sequence[int]) -> list[bytes]:
        return [bytes(view) for view in self.raw_views_at(positions)]

    def _decode(self, i: int) -> dict[str, Any]:
        bodies = self._bodies
        if bodies is not None:
            found = bodies.take(i)
            if found is not None:
                return found
        return super()._decode(i)

    def preload(self, positions: Iterable[int]) -> None:
        cache = self._cache
        missing = sorted({i for i in positions if i not in cache})
        with bulk_allocation():  # thousands of new dicts and lists, no cycles: no collection passes
            bodies = self._read_bodies() if len(missing) >= _BODIES_FOR else self._bodies
            if bodies is not None:  # what an earlier process decoded
                left = []
                for i in missing:
                    found = bodies.take(i) if i in bodies else None
                    if found is None:
                        left.append(i)
                    else:
                        cache[i] = found
                missing = left
            self._decode_into(cache, missing)

    def _decode_into(self, into: dict[int, Any], positions: list[int]) -> None:
        """Decode the lines at ``positions`` (ascending) into ``into``, by position, a group of nearby lines
        at a time (``_view_groups``): the memory one read took is used again by the next instead of every
        line's bytes being held at once."""
        for part, views in self._view_groups(positions):
            into.update(zip(part, self._decode_raws(part, views), strict=True))
            del views

    def _view_groups(self, positions: Sequence[int]) -> Iterator[tuple[Sequence[int], list[memoryview]]]:
        """The lines at ``positions`` (ascending), as runs of positions and their lines: each run is nearby
        lines read at once (``_READ_GAP`` apart at most, ``_READ_BYTES`` long at most)."""
        if not positions:
            return
        starts, ends = self._table.span_lists(positions)
        for a, stop in _groups(starts, ends, _READ_GAP):
            low, high = starts[a], ends[stop - 1]
            blob = memoryview(self._read_range(low, high)).toreadonly()
            views = list(
                map(
                    blob.__getitem__,
                    map(slice, map(sub, starts[a:stop], repeat(low)), map(sub, ends[a:stop], repeat(low))),
                )
            )
            yield positions[a:stop], views
            del views, blob

    def line_runs_at(self, positions: Sequence[int]) -> Iterator[tuple[bytes, list[tuple[int, int]]]]:
        # lines with only their line ending between them (2 bytes at most: CRLF), each run one read
        if not positions:
            return
        if not all(map(lt, positions, islice(positions, 1, None))):  # not in file order: a line at a time
            for view in self.raw_views_at(positions):
                yield bytes(view), [(0, len(view))]
            return
        starts, ends = self._table.span_lists(positions)
        for a, stop in _groups(starts, ends, 2):
            low = starts[a]
            block = self._read_range(low, ends[stop - 1])
            lows = repeat(low)
            yield block, list(zip(map(sub, starts[a:stop], lows), map(sub, ends[a:stop], lows), strict=True))

    def raw_views_at(self, positions: Sequence[int]) -> list[memoryview]:
        """The lines at ``positions``; lines close to each other in the file share one read, so a few
        distant lines do not read everything between them."""
        if not positions:
            return []
        if all(map(lt, positions, islice(positions, 1, None))):  # a path in file order: grouped in C
            out_views: list[memoryview] = []
            for _, views in self._view_groups(positions):
                out_views += views
            return out_views
        spans = self._table.spans_at(positions)
        order = sorted(range(len(spans)), key=spans.__getitem__)
        out: list[memoryview] = [memoryview(b"")] * len(spans)
        group: list[int] = []
        group_end = -1
        for k in order:
            start, end = spans[k]
            if group and start - group_end > _READ_GAP:
                self._read_group(spans, group, out)
                group = []
            group.append(k)
            group_end = max(group_end, end)
        self._read_group(spans, group, out)
        return out

    def _read_group(self, spans: list[tuple[int, int]], group: list[int], out: list[memoryview]) -> None:
        low = spans[group[0]][0]
        high = max(spans[k][1] for k in group)
        blob = memoryview(self._read_range(low, high)).toreadonly()
        for k in group:
            start, end = spans[k]
            out[k] = blob[start - low : end - low]

    def entries(self) -> list[dict[str, Any]]:
        # one read for the whole file instead of a pread per entry
        n = len(self._ids)
        if not n:
            return []
        blob = self._read_range(0, self._table.end())
        cache = self._cache
        return [
            cache.get(i) or self._decode_raw(i, blob[start:end])
            for i, (start, end) in enumerate(self._table.spans())
        ]

    def line_of(self, i: int) -> int | None:
        if i < 0:
            i += len(self._ids)
        return self._table.line(i) if 0 <= i < len(self._table) else None

    def _load_bodies(self, st: os.stat_result) -> None:
        """Note that what an earlier process decoded from this file (``body_cache``) may be taken up: it is
        read when a bulk decode first needs it (``_read_bodies``)."""
        self._bodies, self._bodies_pending = None, (st, len(self._ids))

    def _read_bodies(self) -> body_cache.Bodies | None:
        """The body cache, read now if it was not yet (``None`` when there is none or it is not valid)."""
        pending = self._bodies_pending
        if pending is not None:
            self._bodies_pending = None
            st, count = pending
            try:
                self._bodies = body_cache.load(self._path, self._reader(), st, count)
            except (OSError, SessionError):  # the file went away meanwhile: decode from it as always
                self._bodies = None
        return self._bodies

    # -- the context cache ------------------------------------------------------------------------------
    def note_context(self, runs: Sequence[tuple[int, int]]) -> None:
        self._context_runs = list(runs)

    def _cacheable_stat(self) -> os.stat_result | None:
        """The file's fstat when the caches may describe it: a large file, on disk, as this store indexed it."""
        if self._buf is not None or self._rfd is None or not index_cache.enabled():
            return None
        st = os.fstat(self._rfd)
        if st.st_size < index_cache.MIN_BYTES or (st.st_dev, st.st_ino, st.st_size) != self._identity:
            return None
        return st

    def cached_context(self, runs: Sequence[tuple[int, int]]) -> ContextFields | None:
        with self._lock:
            st = self._cacheable_stat()
            if st is None:
                return None
            with bulk_allocation():  # tens of thousands of new dicts and lists, no cycles
                found = context_cache.load(self._path, self._reader(), st, len(self._ids), runs)
            if found is not None:
                self._context_hit = list(runs)
            return found

    def _fresh_entries(self, fresh: dict[int, Any], positions: Sequence[int]) -> list[dict[str, Any]]:
        """The entries at ``positions`` decoded from the file's bytes (kept in ``fresh``), never from the
        dicts callers were given."""
        self._decode_into(fresh, sorted({p for p in positions if p not in fresh}))
        return [fresh[p] for p in positions]

    def _save_context(self, fresh: dict[int, Any]) -> None:
        """Keep the context of the last path asked for, built again from the file's bytes (at close)."""
        runs = self._context_runs
        if not runs or runs == self._context_hit or runs[-1][1] > len(self._ids):
            return
        st = self._cacheable_stat()
        if st is None:
            return
        positions = [p for start, stop in runs for p in range(start, stop)]

        def many(indexes: Sequence[int]) -> list[dict[str, Any]]:
            return self._fresh_entries(fresh, [positions[k] for k in indexes])

        def preload(indexes: Sequence[int]) -> None:
            many(indexes)

        view = PathView(
            self.ids_in(runs),
            self.types_in(runs),
            lambda: [self._parents[p] for p in positions],
            lambda k: many([k])[0],
            lambda k: self.raw_at(positions[k]),
            preload,
            many,
        )
        try:
            needed = [positions[k] for k in context_indexes(view)]  # decodes the latest compaction only
            if sum(end - start for start, end in self._table.spans_at(needed)) > context_cache.MAX_BYTES:
                return  # a context this large (a session never compacted) is not decoded again at close
            built = context_from_path(view)
        except (OSError, SessionError):  # the file changed or went away meanwhile: nothing to keep
            return
        fields = (built.messages, built.thinking_level, built.model, built.active_tool_names)
        context_cache.save(self._path, self._reader(), st, len(self._ids), runs, fields)

    def _save_bodies(self, fresh: dict[int, Any] | None = None) -> None:
        """Keep the entries decoded here for the next process (at close), when there are new ones
        (``fresh``: entries already decoded again from the file's bytes, by position)."""
        if self._buf is not None or self._rfd is None or len(self._cache) < _NEW_BODIES:
            return
        bodies = self._read_bodies()  # what the file holds now is kept unless there is more to keep
        held = bodies.held if bodies is not None else frozenset()
        decoded = self._cache.keys()
        if len(decoded - held) < _NEW_BODIES:
            return
        st = os.fstat(self._rfd)
        if st.st_size < index_cache.MIN_BYTES or not index_cache.enabled():
            return
        used = bodies.used if bodies is not None else set()
        try:
            body_cache.save(self._path, self._rfd, st, {*decoded, *used}, self.raw_views_at, fresh)
        except (OSError, SessionError):  # a file that shrank or went away meanwhile: nothing to keep
            return


def _groups(starts: list[int], ends: list[int], gap: int) -> Iterator[tuple[int, int]]:
    """``(a, stop)`` index ranges of the lines spanning ``starts[k]:ends[k]`` (ascending) to read together:
    a new range where the gap to the line before is wider than ``gap``, or the range would pass
    ``_READ_BYTES`` (a single longer line is a range of its own)."""
    cuts = [0, *compress(range(1, len(starts)), map(gt, map(sub, starts[1:], ends), repeat(gap)))]
    cuts.append(len(starts))
    for a, b in pairwise(cuts):
        while a < b:
            stop = min(b, max(a + 1, bisect_right(ends, starts[a] + _READ_BYTES, a, b)))
            yield a, stop
            a = stop
