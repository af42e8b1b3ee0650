"""Entries an earlier process decoded from a large session file, kept as msgpack beside its index cache.

Building a context decodes the entries it needs from JSON, and that is most of its time (a context of a
session with 10,000 entries decodes about 1 MB); msgpack gives the same values back in less than half of
that. When a store closes, the entries it decoded (the context, the labels) are encoded again from the
file's own bytes, never from the dicts callers were given, and written to ``<index>.bodies``; in the next
process, a bulk decode (128 entries or more) of the same file reads them and takes those positions from
there. Valid, like the index cache, only while the file is the same file, at least as long, and has the
same first and last 64 KiB up to where they were taken. A value msgpack cannot hold as JSON read it (a lone
surrogate) is left out.
"""

from __future__ import annotations

import itertools
import os
from array import array
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from sessiontree.format import pi_json as _json

from . import _framed, index_cache

__all__ = ["MAX_BYTES", "Bodies", "load", "save"]

MAX_BYTES = 1 << 24
"""At most this much msgpack is kept per session (the entries read last win)."""
_FORMAT = 2
_DECODER = msgspec.msgpack.Decoder()
_ENCODER = msgspec.msgpack.Encoder()


class Bodies:
    """Packed entries by position, all in one blob: ``take(i)`` decodes one; ``used`` lists those taken."""

    __slots__ = ("_blob", "_spans", "used")

    def __init__(self, blob: memoryview, spans: dict[int, tuple[int, int]]) -> None:
        self._blob = blob
        self._spans = spans
        self.used: set[int] = set()

    def __contains__(self, i: object) -> bool:
        return i in self._spans

    @property
    def held(self) -> frozenset[int]:
        return frozenset(self._spans)

    def take(self, i: int) -> dict[str, Any] | None:
        """Entry ``i`` decoded from its packed bytes, or ``None`` (not held, or not a packed object)."""
        span = self._spans.get(i)
        if span is None:
            return None
        try:
            value = _DECODER.decode(self._blob[span[0] : span[1]])
        except msgspec.DecodeError:
            return None
        if not isinstance(value, dict):
            return None
        self.used.add(i)
        return value


def _file_for(path: Path) -> Path:
    index = index_cache.cache_file(path)
    return index.with_name(index.stem + ".bodies")


def load(path: Path, fd: int, st: os.stat_result, count: int) -> Bodies | None:
    """The packed entries kept for the file ``path`` (open as ``fd``, ``st`` its fstat, ``count`` entries
    indexed), when they are still valid for it.

    The file is a 4-byte length, a msgpack header (format, the session file's identity and digests, the
    positions and where each packed entry ends), then the packed entries one after another.
    """
    if st.st_size < index_cache.MIN_BYTES or not index_cache.enabled():
        return None
    try:
        framed = _framed.read(_file_for(path), 8, _FORMAT)
        if framed is None:
            return None
        (_, dev, ino, size, head, tail, at, ends_raw), blob = framed
        if (dev, ino) != (st.st_dev, st.st_ino) or not isinstance(size, int) or not 0 < size <= st.st_size:
            return None
        if (head, tail) != index_cache.digests(fd, size):
            return None
        positions, ends = array("q"), array("q")
        positions.frombytes(at)
        ends.frombytes(ends_raw)
        if len(positions) != len(ends) or (ends and (ends[-1] != len(blob) or min(ends) < 0)):
            return None
        if positions and (min(positions) < 0 or max(positions) >= count):
            return None
        starts = [0, *ends[:-1]]
        return Bodies(blob, dict(zip(positions, zip(starts, ends, strict=True), strict=True)))
    except (OSError, msgspec.DecodeError, ValueError, TypeError):
        return None


def save(
    path: Path,
    fd: int,
    st: os.stat_result,
    positions: Iterable[int],
    lines: Callable[[list[int]], list[memoryview]],
    decoded: Mapping[int, Any] | None = None,
) -> None:
    """Keep the entries at ``positions`` of the file ``path`` (open as ``fd``, ``st`` its fstat), packed from
    their lines as ``lines(positions)`` reads them from the file (``decoded``: some of them already decoded
    from those lines, by position)."""
    known: Mapping[int, Any] = decoded or {}
    wanted = sorted(positions, reverse=True)  # the latest entries first: those a context reads
    at: list[int] = []
    blobs: list[bytes] = []
    total = 0
    try:
        for start in range(0, len(wanted), 4096):
            part = wanted[start : start + 4096]
            unread = [i for i in part if i not in known]
            read = dict(zip(unread, lines(unread), strict=True))
            for i in part:
                try:
                    value = known[i] if i in known else _json.loads(read[i])
                    blob = _ENCODER.encode(value)
                except (ValueError, msgspec.EncodeError, OverflowError, UnicodeEncodeError, RecursionError):
                    # not kept: text msgpack cannot hold, or a value nested deeper than its encoder goes
                    continue
                total += len(blob)
                if total > MAX_BYTES:
                    break
                at.append(i)
                blobs.append(blob)
            if total > MAX_BYTES:
                break
        head, tail = index_cache.digests(fd, st.st_size)
        ends = list(itertools.accumulate(map(len, blobs)))
        header = [
            _FORMAT,
            st.st_dev,
            st.st_ino,
            st.st_size,
            head,
            tail,
            array("q", at).tobytes(),
            array("q", ends).tobytes(),
        ]
        _framed.write(_file_for(path), header, blobs)
    except (OSError, msgspec.EncodeError):
        return
