"""The context an earlier process built from a large session file, kept whole beside its index cache.

Resuming a session opens the file and builds the context at its leaf, and the context is most of that
time once the index comes from the cache: at 10,000 entries it is about 1 MB of messages, 40,000 objects.
One msgpack decode of the whole context costs about what decoding its entries alone did, and none of the
work around that (finding and reading their lines, applying the context rules). When a
store closes, the context of the last path it was asked for is built again from the file's own bytes
(never from the dicts callers were given) and written to ``<index>.context``; the next process building
the context of the same path of the same file gets it back with one decode.

It holds one context per session file and is used only when nothing it depends on can have changed: the
same file (device and inode), exactly as long, with the same modification and change times and the same
hashes of its first and last 64 KiB, the same number of entries indexed, and the very same path (the runs
of positions from the root to the leaf). Anything else, and any damage to the file, means the context is
built as always. A context msgpack cannot hold as JSON read it (a lone surrogate, an integer beyond 64 bits)
is not kept, nor is one of more than ``MAX_BYTES`` of JSON (the first build of a session never compacted).
"""

from __future__ import annotations

import os
from array import array
from binascii import crc32
from collections.abc import Sequence
from pathlib import Path

import msgspec

from sessiontree.tree.entry_store import ContextFields

from . import _framed, index_cache

__all__ = ["MAX_BYTES", "load", "save"]

MAX_BYTES = 1 << 24
"""A context whose entries' lines hold more than this much JSON is not kept (nor decoded again at close)."""
_FORMAT = 1
_DECODER = msgspec.msgpack.Decoder()


def _file_for(path: Path) -> Path:
    index = index_cache.cache_file(path)
    return index.with_name(index.stem + ".context")


def _runs_key(runs: Sequence[tuple[int, int]]) -> bytes:
    return array("q", [p for run in runs for p in run]).tobytes()


def _identity(st: os.stat_result, count: int) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, count]


def load(
    path: Path, fd: int, st: os.stat_result, count: int, runs: Sequence[tuple[int, int]]
) -> ContextFields | None:
    """The kept context of the path ``runs`` of the file ``path`` (open as ``fd``; ``st`` its fstat when
    ``count`` entries were indexed from it), when it is still valid; else ``None``.

    The file is a 4-byte length, a msgpack header (format, the session file's identity and digests, the
    number of entries, the path's runs, the CRC-32 of what follows), then the context as one msgpack array.
    """
    if st.st_size < index_cache.MIN_BYTES or not index_cache.enabled():
        return None
    try:
        framed = _framed.read(_file_for(path), 6, _FORMAT)
        if framed is None:
            return None
        (_, identity, head, tail, key, check), body = framed
        if identity != _identity(st, count) or key != _runs_key(runs):
            return None
        if check != crc32(body) or (head, tail) != index_cache.digests(fd, st.st_size):
            return None
        value = _DECODER.decode(body)
    except (OSError, msgspec.DecodeError, ValueError, TypeError):
        return None
    if not (isinstance(value, list) and len(value) == 4 and isinstance(value[0], list)):
        return None
    messages, thinking, model, tools = value
    if not all(isinstance(m, dict) for m in messages):
        return None
    if not (model is None or isinstance(model, dict)) or not (tools is None or isinstance(tools, list)):
        return None
    return messages, thinking, model, tools


def save(
    path: Path,
    fd: int,
    st: os.stat_result,
    count: int,
    runs: Sequence[tuple[int, int]],
    context: ContextFields,
) -> None:
    """Keep ``context``, built from the file's bytes for the path ``runs`` when ``count`` entries were indexed
    from the file ``path`` (open as ``fd``, ``st`` its fstat then)."""
    try:
        body = msgspec.msgpack.encode(list(context))
    except (msgspec.EncodeError, OverflowError, UnicodeEncodeError, RecursionError, TypeError):
        return  # text or numbers msgpack cannot hold as JSON read them: nothing is kept
    try:
        head, tail = index_cache.digests(fd, st.st_size)
        header = [_FORMAT, _identity(st, count), head, tail, _runs_key(runs), crc32(body)]
        _framed.write(_file_for(path), header, [body])
    except OSError:
        return
