"""Line scanner for JSONL session bytes: validates every line and extracts the entry envelope and offsets.

It builds no entry dicts and keeps no per-line bytes; it must not interpret anything beyond the envelope.

Validation choice. Every line is checked for complete JSON (a line can be a torn or glued write that merely
starts like an entry). Measured on generated 100k-entry files (58-67 MB), each ratio against the "floor"
(read the bytes + split on ``\\n``) taken in the same run on a shared, noisy 2-core machine: ``orjson.loads``
of every line, dicts discarded at once, costs 1.8-3.2x the floor, because it builds every nested object.
``msgspec.json.Decoder(<4-field Struct>).decode_lines`` over a chunk checks the well-formedness of
every byte the same way (truncated, glued and garbage lines are rejected) but materializes only the four
envelope fields: 0.8-0.9x the floor. ``decode_lines`` reads a stream of values rather than lines, so a
chunk is only taken whole when every line starts with ``{`` and ends with ``}`` (bytes gathered in C) and it
yields exactly one value per line: then value ``k`` is line ``k``. A chunk that fails any check (a bad or
glued line, blank lines, an odd envelope, a second header) is re-scanned line by line, and a line msgspec
rejects gets a second chance with ``_json.loads`` (orjson, then the stdlib), the decoder entries are read
with later, because JavaScript's ``JSON.parse`` also accepts lone-surrogate escapes and out-of-range
numbers. Line offsets come from a ``bytes.find`` loop (about half the cost of splitting into objects).
Without msgspec installed, every line goes through ``orjson`` (sound, 2-3x slower). The store's whole open lands at 1.6-2.9x the floor with msgspec.
"""

from __future__ import annotations

import json
import os
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from operator import attrgetter, itemgetter, sub
from typing import Any

from sessiontree._bulk import bulk_allocation
from sessiontree.format import pi_json as _json
from sessiontree.tree.entry_store import Problem

from ._lines import LineTable

try:  # pragma: no cover - exercised by the environment, both paths are tested
    import msgspec

    class _Envelope(msgspec.Struct, gc=False):
        type: Any = None
        id: Any = None
        parentId: Any = None
        timestamp: Any = None

    class _TypedEnvelope(msgspec.Struct, gc=False):
        # Checked in C for the chunk fast path; any other shape sends the chunk down the line-by-line path.
        type: str
        id: str
        parentId: str | None = None
        timestamp: str | None = None

    _DECODER: Any = msgspec.json.Decoder(_Envelope)
    _CHUNK_DECODER: Any = msgspec.json.Decoder(_TypedEnvelope)
    _DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError,)
except ImportError:  # pragma: no cover
    _DECODER = None
    _CHUNK_DECODER = None
    _DECODE_ERRORS = ()

__all__ = [
    "CHUNK_BYTES",
    "Chunk",
    "ScanResult",
    "fd_chunks",
    "memory_chunks",
    "reader_chunks",
    "scan",
    "use_msgspec",
]

CHUNK_BYTES = 1 << 18
"""Bytes scanned at a time. Each chunk is read, searched for newlines, checked and decoded in turn, so it
should stay in the processor's cache between those passes: a whole open of a 200 MB file took 17% less
time with 1 MiB chunks than with 4 MiB ones (best of 3 fresh processes, 690 ms against 834 ms), and the
first open of a 6.7 MB file (10k entries) 17% less with 256 KiB than with 1 MiB (median of 7 fresh
processes, alternating: 29 against 36 ms; 58 MB: 306 against 312 ms), which also touches 216 fewer fresh
pages for the buffer. Smaller chunks cost more in per-chunk calls (64 KiB: 1% more instructions)."""
_REJECTED: tuple[type[BaseException], ...] = (*_DECODE_ERRORS, RecursionError)  # msgspec recurses per level
_GET_TYPE, _GET_ID = attrgetter("type"), attrgetter("id")
_GET_PARENT, _GET_TIMESTAMP = attrgetter("parentId"), attrgetter("timestamp")
_USE_MSGSPEC = _DECODER is not None


def use_msgspec(enabled: bool) -> bool:
    """Switch the fast validator on or off (tests run both paths); returns the previous setting."""
    global _USE_MSGSPEC
    previous = _USE_MSGSPEC
    _USE_MSGSPEC = enabled and _DECODER is not None
    return previous


class ScanResult:
    """Envelopes and positions of the valid entries of a byte range, plus what was wrong with the rest.

    ``problems`` holds what concerns single lines; the blank lines (counted over the whole range), a torn
    or unterminated last line are in the fields after it, and ``all_problems()`` lists them all in the
    order a reader reports them. (A plain class: creating a dataclass costs more at import than a scan of
    a small file spends on it.)
    """

    __slots__ = (
        "blank_first",
        "blank_lines",
        "end_line",
        "ids",
        "known_breaks",
        "needs_newline",
        "parents",
        "problems",
        "table",
        "tail_problems",
        "timestamps",
        "torn_line",
        "torn_offset",
        "types",
    )

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.parents: list[str | None] = []
        self.types: list[str] = []
        self.timestamps: list[str | None] = []
        self.table = LineTable()
        self.problems: list[Problem] = []
        self.torn_offset: int | None = None
        self.torn_line: int | None = None
        self.needs_newline = False
        self.end_line = 0
        self.blank_lines = 0
        self.blank_first: int | None = None
        self.tail_problems: list[Problem] = []
        self.known_breaks: tuple[list[int], int] | None = None
        """The run starts of the first entries when a cache gave them (see ``IndexedStore._install``)."""

    def all_problems(self, where: str) -> list[Problem]:
        """Every problem: the lines' own, then a torn or unterminated last line, then the blank lines."""
        out = [*self.problems, *self.tail_problems]
        if self.blank_lines:
            out.append(
                Problem(
                    "blank_lines",
                    self.blank_first,
                    f"{where}: {self.blank_lines} blank line(s) skipped, the first on line {self.blank_first}",
                )
            )
        return out


class _State:
    __slots__ = ("last_bad", "where")

    def __init__(self, where: str) -> None:
        self.where = where
        self.last_bad: tuple[int, int, Problem] | None = None


Chunk = tuple["bytes | bytearray", int, int, int]
"""``(buf, lo, hi, base)``: scan ``buf[lo:hi]``, whose byte ``k`` is at absolute offset ``base + k``."""


def memory_chunks(buf: bytes, start: int, end: int) -> Iterator[Chunk]:
    """Chunks of an in-memory buffer, each ending at a line boundary (except possibly the last)."""
    pos = start
    while pos < end:
        cut = buf.find(b"\n", min(pos + CHUNK_BYTES, end - 1), end)
        stop = end if cut < 0 else cut + 1
        yield buf, pos, stop, 0
        pos = stop


def reader_chunks(read: Callable[[int, int], bytes], start: int, end: int) -> Iterator[Chunk]:
    """Chunks read with ``read(offset, size)``, each ending at a line boundary (except possibly the last).

    The next read starts where the last complete line ended, so the partial line is read again rather than
    copied onto the next block (a copy of the whole block, every chunk).
    """
    pos = start
    size = CHUNK_BYTES
    while pos < end:
        data = read(pos, min(size, end - pos))
        if not data:
            return
        if pos + len(data) >= end:
            yield data, 0, len(data), pos
            return
        cut = data.rfind(b"\n")
        if cut < 0:  # a line longer than the block: read a bigger one
            size *= 2
            continue
        yield data, 0, cut + 1, pos
        pos += cut + 1
        size = CHUNK_BYTES


def fd_chunks(fd: int, start: int, end: int) -> Iterator[Chunk]:
    """Chunks of the file open as ``fd``, read with ``preadv`` into one reused buffer (no new block of
    memory per chunk); each chunk ends at a line boundary (except possibly the last) and is valid until
    the next one is asked for. The partial line at the end of a block is moved to the buffer's front."""
    if start >= end:
        return
    buf = bytearray(min(CHUNK_BYTES, end - start))  # a few appended lines need no whole block
    view = memoryview(buf)
    pos = start  # the file offset of buf[0]
    held = 0  # bytes of buf holding the file from ``pos``
    while pos + held < end:
        if held == len(buf):  # a line longer than the buffer: grow it
            view.release()
            buf.extend(bytes(len(buf)))
            view = memoryview(buf)
        want = min(len(buf) - held, end - pos - held)
        got = os.preadv(fd, [view[held : held + want]], pos + held)
        if got <= 0:  # the file shrank: scan what was read
            break
        held += got
        if pos + held >= end:
            break
        cut = buf.rfind(b"\n", 0, held)
        if cut < 0:
            continue
        yield buf, 0, cut + 1, pos
        rest = held - cut - 1
        buf[:rest] = view[cut + 1 : held]
        pos += cut + 1
        held = rest
    if held:
        yield buf, 0, held, pos


def scan(
    chunks: Iterable[Chunk], first_line: int, where: str, resume: ScanResult | None = None
) -> ScanResult:
    """Validate and index every line of ``chunks`` (the first begins at physical line ``first_line``).

    With ``resume`` (the result of scanning the bytes before the chunks, which ended with a complete
    line), the lines are added to it: the result is the one a scan of all the bytes would give.
    """
    # millions of small allocations, no cycles: collection passes would only cost time
    with bulk_allocation():
        return _scan(chunks, first_line, where, resume if resume is not None else ScanResult())


def _scan(chunks: Iterable[Chunk], first_line: int, where: str, out: ScanResult) -> ScanResult:
    state = _State(where)
    line_no = first_line
    last: Chunk | None = None
    for chunk in chunks:
        buf, pos, stop, base = chunk
        if stop <= pos:
            continue
        last = chunk
        newlines = _newlines(buf, pos, stop)
        count = len(newlines) + (1 if buf[stop - 1] != 0x0A else 0)
        if _USE_MSGSPEC and _fast_chunk(buf, pos, stop, base, newlines, count, line_no, out):
            state.last_bad = None
        else:
            lines = bytes(buf[pos:stop]).split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            _slow_chunk(lines, base + pos, line_no, out, state)
        line_no += count
    out.end_line = line_no - 1
    if state.last_bad is not None:
        line, offset, problem = state.last_bad
        out.problems.remove(problem)
        out.torn_offset = offset
        out.torn_line = line
        out.tail_problems.append(
            Problem(
                "torn_tail",
                line,
                f"{where}: line {line}: the last line is incomplete (a torn write); it is moved to a "
                "'.torn-<n>' file and cut off at the first write",
            )
        )
    elif last is not None and last[0][last[2] - 1] != 0x0A:
        buf, pos, stop, _ = last
        out.needs_newline = True
        if buf[max(buf.rfind(b"\n", pos, stop) + 1, pos) : stop].strip():
            out.tail_problems.append(
                Problem(
                    "missing_newline",
                    out.end_line,
                    f"{where}: line {out.end_line}: the last line has no final newline; one is written "
                    "before the next entry",
                )
            )
    return out


def _newlines(buf: bytes | bytearray, pos: int, stop: int) -> list[int]:
    """Offsets of every ``\\n`` in ``buf[pos:stop]`` (a find loop: cheaper than splitting into objects)."""
    found: list[int] = []
    add_one = found.append
    find = buf.find
    at = find(b"\n", pos, stop)
    while at >= 0:
        add_one(at)
        at = find(b"\n", at + 1, stop)
    return found


def _bytes_at(buf: bytes | bytearray | memoryview, positions: list[int]) -> tuple[int, ...]:
    """``buf[p]`` for every position, gathered in C."""
    if not positions:
        return ()
    if len(positions) == 1:
        return (buf[positions[0]],)
    got: tuple[int, ...] = itemgetter(*positions)(buf)
    return got


def _line_ends(
    buf: bytes | bytearray, pos: int, stop: int, newlines: list[int], count: int
) -> list[int] | None:
    """Where each line of ``buf[pos:stop]`` ends (before its ``\\n``, and before a ``\\r`` there), when every
    line starts with ``{`` and ends with ``}``; else ``None``.

    ``decode_lines`` reads a stream of values, not lines: a line holding two glued objects and a blank line
    elsewhere give as many values as lines, and an object may span lines. When every line starts with ``{``
    and ends with ``}`` neither can happen (a string cannot hold a raw newline, and after a ``}`` that leaves
    a value open JSON allows only ``,``, ``]`` or ``}``, never ``{``), so value ``k`` is line ``k`` exactly
    when the counts agree. The bytes beside every newline are gathered in C: a small fraction of the decode.
    """
    if buf[pos] != 0x7B:
        return None
    ends_with_newline = count == len(newlines)
    following = newlines[:-1] if ends_with_newline else newlines
    if following:
        view = memoryview(buf)
        try:  # the byte after each newline: buf[n + 1] is view[1:][n]
            firsts = _bytes_at(view[1:], following)
        finally:
            view.release()
        if firsts.count(0x7B) != len(firsts):
            return None
    ends = newlines if ends_with_newline else [*newlines, stop]
    lasts = _bytes_at(buf, list(map(sub, ends, repeat(1))))
    if lasts.count(0x7D) == len(lasts):
        return ends
    before = _bytes_at(buf, [max(pos, e - 2) for e in ends])  # CRLF endings: "}" before the "\r"
    if not all(a == 0x7D or (a == 0x0D and b == 0x7D) for a, b in zip(lasts, before, strict=True)):
        return None
    return [e - 1 if a == 0x0D else e for a, e in zip(lasts, ends, strict=True)]


def _fast_chunk(
    buf: bytes | bytearray,
    pos: int,
    stop: int,
    base: int,
    newlines: list[int],
    count: int,
    line_no: int,
    out: ScanResult,
) -> bool:
    """Validate and index a whole chunk in C; ``False`` when anything needs the line-by-line path."""
    ends = _line_ends(buf, pos, stop, newlines, count)
    if ends is None:
        return False
    view = memoryview(buf)
    try:
        envs = _CHUNK_DECODER.decode_lines(view[pos:stop])
    except _REJECTED:
        return False
    finally:
        view.release()
    if len(envs) != count:  # two values glued on one line
        return False
    types = list(map(sys.intern, map(_GET_TYPE, envs)))  # one list, each type name stored once
    if "session" in types:
        return False
    if ends is newlines or ends[:-1] == newlines[: count - 1]:  # every line but the last ends at its newline
        out.table.add_chunk(base, pos, array("q", ends), line_no)
    else:  # CRLF: the spans end before the "\r"
        starts = [pos, *(n + 1 for n in newlines[: count - 1])]
        for k, (start, end) in enumerate(zip(starts, ends, strict=True)):
            out.table.add(base + start, base + max(end, start), line_no + k)
    out.types += types
    out.ids.extend(map(_GET_ID, envs))
    out.parents.extend(map(_GET_PARENT, envs))
    out.timestamps.extend(map(_GET_TIMESTAMP, envs))
    return True


def _envelope(line: bytes) -> tuple[bool, Any, Any, Any, Any]:
    """``(parses, type, id, parentId, timestamp)`` of one line, as JavaScript's ``JSON.parse`` would see it."""
    if _USE_MSGSPEC:
        try:
            env = _DECODER.decode(line)
            return True, env.type, env.id, env.parentId, env.timestamp
        except _REJECTED:
            pass
    value: Any
    try:
        value = _json.loads(
            line
        )  # the decoder entries are read with later: its verdict is the one that counts
    except ValueError:
        return False, None, None, None, None
    if not isinstance(value, dict):
        return True, None, None, None, None
    return True, value.get("type"), value.get("id"), value.get("parentId"), value.get("timestamp")


def _why_not_json(line: bytes) -> str:
    """Why a line is not one JSON value, naming the glued-writes case (a torn write, then an append)."""
    try:
        _, end = json.JSONDecoder().raw_decode(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return "not valid JSON"
    return (
        f"not valid JSON (a complete object ends at column {end + 1} and another value follows it: "
        "two writes glued on one line, as after a torn write)"
    )


def _slow_chunk(lines: list[bytes], base: int, line_no: int, out: ScanResult, state: _State) -> None:
    where = state.where
    pos = base
    bad: Callable[[int, str], Problem] = lambda n, why: Problem(  # noqa: E731
        "bad_line", n, f"{where}: line {n}: {why}; the line is skipped"
    )
    for line in lines:
        start = pos
        pos += len(line) + 1
        n = line_no
        line_no += 1
        if not line or (line[0] != 0x7B and not line.strip()):
            out.blank_lines += 1
            if out.blank_first is None:
                out.blank_first = n
            continue
        parses, kind, entry_id, parent, stamp = _envelope(line)
        if not parses:
            problem = bad(n, _why_not_json(line))
            out.problems.append(problem)
            state.last_bad = (n, start, problem)
            continue
        state.last_bad = None
        if kind == "session":
            out.problems.append(
                Problem("extra_header", n, f"{where}: line {n}: a second session header; it is ignored")
            )
            continue
        if not isinstance(kind, str) or not isinstance(entry_id, str):
            out.problems.append(bad(n, "not a session entry (needs a string 'type' and 'id')"))
            continue
        if parent is not None and not isinstance(parent, str):
            out.problems.append(
                Problem(
                    "bad_parent",
                    n,
                    f"{where}: line {n}: entry {entry_id!r} has a parentId that is not a string; "
                    "it is treated as a root",
                    entry_id,
                )
            )
            parent = None
        out.types.append(sys.intern(kind))
        out.ids.append(entry_id)
        out.parents.append(parent)
        out.timestamps.append(stamp if isinstance(stamp, str) else None)
        out.table.add(start, start + len(line) - (1 if line.endswith(b"\r") else 0), n)
