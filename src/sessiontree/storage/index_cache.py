"""A cache of what the line scanner found in a large session file, so opening it again reads only what
was appended since.

One file per session under ``index/`` in the cache directory (``cache_dir.py``), named by a hash of the
session's resolved path. It is never needed for correctness: a missing, stale, damaged or unwritable cache
only means the file is scanned whole. A cached scan is used only when the session file is the same file
(device and inode), at least as long as it was, and, as far as the cache can tell, unchanged up to there:
the same modification and change times when the size is the same, else the same hash of its first and
of its last 64 KiB as scanned (session files only grow; a file rewritten in place gets a new inode from an
atomic replace, or new times). Only scans that ended with a complete line are kept, so the scan of the
appended bytes continues exactly where the cached one stopped. ``SESSIONTREE_INDEX_CACHE=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import os
from array import array
from pathlib import Path
from typing import Any

import msgspec

from sessiontree._bulk import bulk_allocation
from sessiontree.tree.entry_store import Problem

from . import _fileio
from ._lines import LineTable
from ._scan import ScanResult
from .cache_dir import default_cache_dir

__all__ = ["ENV", "MIN_BYTES", "CachedScan", "cache_file", "digests", "enabled", "lookup", "save"]

ENV = "SESSIONTREE_INDEX_CACHE"
MIN_BYTES = 1 << 20
"""Files (and appended tails) smaller than this are scanned in a few milliseconds: nothing is cached."""
KEEP = 32
"""The most index files kept; the least recently used go first."""
KEEP_BYTES = 1 << 28
"""At most this much (index and body files together) is kept, the most recently used first."""
_FORMAT = 1
_BLOCK = 1 << 16
_SEP = "\x00"
_KINDS = (".idx", ".bodies", ".context")  # an index file and what is kept beside it


class CachedScan:
    """A scan of ``[start, size)`` of a session file, found valid for the file as it is now."""

    __slots__ = ("first_line", "result", "size", "start")

    def __init__(self, result: ScanResult, start: int, first_line: int, size: int) -> None:
        self.result = result
        self.start = start
        self.first_line = first_line
        self.size = size


def enabled() -> bool:
    """Whether the cache is used (``SESSIONTREE_INDEX_CACHE`` is not ``0``, ``off``, ``no`` or ``false``)."""
    return os.environ.get(ENV, "").strip().lower() not in ("0", "off", "no", "false")


def _blake2b(data: bytes) -> Any:
    try:  # CPython's own module: importing hashlib would also load OpenSSL, several ms for one hash
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import blake2b
    return blake2b(data, digest_size=16)


def cache_file(path: Path) -> Path:
    """The index file of the session file ``path`` (a resolved path)."""
    key = _blake2b(str(path).encode("utf-8", "surrogatepass")).hexdigest()
    return default_cache_dir() / "index" / f"{key}.idx"


def digests(fd: int, size: int) -> tuple[bytes, bytes]:
    """Hashes of the first and the last 64 KiB of the file's first ``size`` bytes."""
    head = os.pread(fd, min(size, _BLOCK), 0)
    tail = os.pread(fd, min(size, _BLOCK), max(0, size - _BLOCK))
    return _blake2b(head).digest(), _blake2b(tail).digest()


def lookup(path: Path, fd: int, st: os.stat_result, start: int, first_line: int) -> CachedScan | None:
    """The cached scan of the file ``path`` (open as ``fd``, ``st`` its fstat) when it is still valid and
    began at ``start`` on line ``first_line``; else ``None``."""
    if st.st_size < MIN_BYTES:
        return None
    file = cache_file(path)
    try:
        blob = file.read_bytes()
    except OSError:
        return None
    try:
        # lists of a million strings and a table part per 256 KiB scanned: a collection pass started by
        # the parts would walk the lists whole, for nothing (they hold no cycles)
        with bulk_allocation():
            fields = msgspec.msgpack.decode(blob)
            found = _check(fields, fd, st, start, first_line)
    except (msgspec.DecodeError, ValueError, TypeError, IndexError, OSError):
        return None
    if found is not None:
        with contextlib.suppress(OSError):
            os.utime(file)  # recently used
    return found


def _check(fields: Any, fd: int, st: os.stat_result, start: int, first_line: int) -> CachedScan | None:
    if not isinstance(fields, list) or len(fields) != 22 or fields[0] != _FORMAT:
        return None
    (
        _,
        dev,
        ino,
        size,
        mtime,
        ctime,
        head,
        tail,
        cached_start,
        cached_first,
        end_line,
        ids_text,
        count,
        names,
        codes,
        break_at,
        break_parents,
        stamps_text,
        no_stamp,
        table_parts,
        problems,
        blanks,
    ) = fields
    if (dev, ino) != (st.st_dev, st.st_ino) or (cached_start, cached_first) != (start, first_line):
        return None
    if not isinstance(size, int) or not start <= size <= st.st_size:
        return None
    if size == st.st_size and (mtime, ctime) != (st.st_mtime_ns, st.st_ctime_ns):
        return None
    if (head, tail) != digests(fd, size):
        return None
    result = ScanResult()
    result.end_line = int(end_line)
    ids: list[str] = ids_text.split(_SEP) if count else []
    types = list(map(names.__getitem__, codes))
    stamps: list[str | None] = stamps_text.split(_SEP) if count else []
    if not len(ids) == len(types) == len(stamps) == count:
        return None
    for i in _positions(no_stamp):
        if not 0 <= i < count:
            return None
        stamps[i] = None
    parents: list[str | None] = [None] if count else []
    parents += ids[:-1]
    breaks = _positions(break_at)
    if breaks and (breaks[0] < 0 or breaks[-1] >= count):
        return None
    for i, parent in zip(breaks, break_parents, strict=True):
        parents[i] = parent
    result.known_breaks = (breaks.tolist(), count)
    result.table = LineTable.load(table_parts)
    if len(result.table) != count or (count and result.table.end() > size):
        return None
    result.ids, result.parents, result.types, result.timestamps = ids, parents, types, stamps
    result.problems = [Problem(kind, line, message, entry_id) for kind, line, message, entry_id in problems]
    result.blank_lines, result.blank_first = blanks
    return CachedScan(result, start, first_line, size)


def _positions(raw: bytes) -> array[int]:
    out = array("q")
    out.frombytes(raw)
    return out


def save(
    path: Path,
    fd: int,
    st: os.stat_result,
    start: int,
    first_line: int,
    result: ScanResult,
    breaks: list[int],
) -> None:
    """Keep ``result`` (the scan of ``[start, st.st_size)`` of the file ``path`` open as ``fd``) for the next
    open; ``breaks`` are the positions whose parent is not the entry before (``IndexedStore.run_starts``).
    Does nothing for a scan that did not end with a complete line, or that the format cannot hold."""
    size = st.st_size
    if result.torn_offset is not None or result.needs_newline or result.tail_problems:
        return
    count = len(result.ids)
    ids_text = _SEP.join(result.ids)
    names = list(dict.fromkeys(result.types))
    stamps = result.timestamps
    no_stamp = [i for i, s in enumerate(stamps) if s is None] if None in stamps else []
    stamps_text = _SEP.join("" if s is None else s for s in stamps) if no_stamp else _SEP.join(stamps)  # type: ignore[arg-type]
    if count and (ids_text.count(_SEP) != count - 1 or stamps_text.count(_SEP) != count - 1):
        return  # an id or a timestamp holds the separator
    if len(names) > 255:
        return
    code_of = {name: k for k, name in enumerate(names)}
    parents = result.parents
    head, tail = digests(fd, size)
    fields = [
        _FORMAT,
        st.st_dev,
        st.st_ino,
        size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        head,
        tail,
        start,
        first_line,
        result.end_line,
        ids_text,
        count,
        names,
        bytes(map(code_of.__getitem__, result.types)),
        array("q", breaks).tobytes(),
        [parents[i] for i in breaks],
        stamps_text,
        array("q", no_stamp).tobytes(),
        result.table.dump(),
        [[p.kind, p.line, p.message, p.entry_id] for p in result.problems],
        [result.blank_lines, result.blank_first],
    ]
    file = cache_file(path)
    try:
        blob = msgspec.msgpack.encode(fields)
        _fileio.ensure_dir(file.parent)
        temp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        temp.write_bytes(blob)
        os.replace(temp, file)
    except (OSError, msgspec.EncodeError, UnicodeEncodeError):
        with contextlib.suppress(OSError, UnboundLocalError):
            temp.unlink()
        return
    _prune(file.parent)


def _prune(directory: Path) -> None:
    """Remove the least recently used index files (and their body and context files) beyond ``KEEP`` files
    or ``KEEP_BYTES`` bytes together."""
    try:
        found = {e.name: e.stat() for e in os.scandir(directory) if e.name.endswith(_KINDS)}
    except OSError:
        return
    indexes = sorted(
        ((st.st_mtime_ns, name) for name, st in found.items() if name.endswith(".idx")), reverse=True
    )
    total = 0
    for rank, (_, name) in enumerate(indexes):
        kept = [name[: -len(".idx")] + kind for kind in _KINDS]
        total += sum(found[k].st_size for k in kept if k in found)
        if rank >= KEEP or (rank and total > KEEP_BYTES):
            for stale in kept:
                with contextlib.suppress(OSError):
                    os.unlink(directory / stale)
