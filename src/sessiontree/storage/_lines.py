"""Where each entry's line is in a session file: byte span and physical line number, by position.

The scanner finds every ``\\n`` of a chunk anyway; a chunk whose lines are all entries is kept as those
newline offsets alone (relative to the chunk, with the chunk's base offset and first line number), so
opening a file builds no per-entry start, end or line arrays. Lines found one by one (a chunk with bad
lines, CRLF endings, appends) are kept explicitly. Knows nothing about JSON or entries.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import add, itemgetter, sub

__all__ = ["LineTable"]


class _Chunk:
    """Consecutive entries on consecutive lines: entry ``j`` ends at ``base + ends[j]`` and starts just
    after the previous one's newline (the first at ``base + first``), on line ``first_line + j``."""

    __slots__ = ("base", "ends", "first", "first_line")

    def __init__(self, base: int, first: int, ends: array[int], first_line: int) -> None:
        self.base = base
        self.first = first
        self.ends = ends
        self.first_line = first_line


class _Explicit:
    """Entries whose spans and line numbers are each stored (absolute offsets)."""

    __slots__ = ("ends", "lines", "starts")

    def __init__(self) -> None:
        self.starts: array[int] = array("q")
        self.ends: array[int] = array("q")
        self.lines: array[int] = array("q")


class LineTable:
    """Byte spans (line without ``\\n`` and a trailing ``\\r``) and line numbers of entries, by position."""

    __slots__ = ("_firsts", "_n", "_parts")

    def __init__(self) -> None:
        self._firsts: list[int] = []  # the position of each part's first entry
        self._parts: list[_Chunk | _Explicit] = []
        self._n = 0

    def __len__(self) -> int:
        return self._n

    # -- building ------------------------------------------------------------------------------------
    def add_chunk(self, base: int, first: int, ends: array[int], first_line: int) -> None:
        """``len(ends)`` entries on consecutive lines from ``first_line``: the first starts at ``base +
        first``, entry ``j`` ends at ``base + ends[j]`` and the next starts one byte later."""
        if not ends:
            return
        self._firsts.append(self._n)
        self._parts.append(_Chunk(base, first, ends, first_line))
        self._n += len(ends)

    def add(self, start: int, end: int, line: int) -> None:
        """One entry at ``[start, end)`` on ``line``."""
        part = self._parts[-1] if self._parts else None
        if not isinstance(part, _Explicit):
            part = _Explicit()
            self._firsts.append(self._n)
            self._parts.append(part)
        part.starts.append(start)
        part.ends.append(end)
        part.lines.append(line)
        self._n += 1

    def extend(self, other: LineTable) -> None:
        """Append every entry of ``other`` (its parts are shared, not copied)."""
        for first, part in zip(other._firsts, other._parts, strict=True):
            self._firsts.append(self._n + first)
            self._parts.append(part)
        self._n += other._n

    # -- reading -------------------------------------------------------------------------------------
    def _locate(self, i: int) -> tuple[_Chunk | _Explicit, int]:
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect_right(self._firsts, i) - 1
        return self._parts[k], i - self._firsts[k]

    def span(self, i: int) -> tuple[int, int]:
        """``(start, end)`` of entry ``i``'s line."""
        part, j = self._locate(i)
        if isinstance(part, _Chunk):
            ends = part.ends
            return part.base + (part.first if j == 0 else ends[j - 1] + 1), part.base + ends[j]
        return part.starts[j], part.ends[j]

    def spans_at(self, positions: Sequence[int]) -> list[tuple[int, int]]:
        """``[span(i) for i in positions]`` in one loop (fastest when the positions mostly ascend)."""
        firsts, parts, n = self._firsts, self._parts, self._n
        out: list[tuple[int, int]] = []
        add = out.append
        low, high = 0, -1  # the positions the current part holds
        part: _Chunk | _Explicit | None = None
        for i in positions:
            if not low <= i < high:
                if not 0 <= i < n:
                    raise IndexError(i)
                k = bisect_right(firsts, i) - 1
                part, low = parts[k], firsts[k]
                high = firsts[k + 1] if k + 1 < len(firsts) else n
            j = i - low
            if isinstance(part, _Chunk):
                ends, base = part.ends, part.base
                add((base + (part.first if j == 0 else ends[j - 1] + 1), base + ends[j]))
            else:
                assert part is not None
                add((part.starts[j], part.ends[j]))
        return out

    def span_lists(self, positions: Sequence[int]) -> tuple[list[int], list[int]]:
        """``spans_at(positions)`` as two lists, starts and ends, for ascending ``positions``: per part, the
        offsets are gathered in C rather than looked up one by one (a context's thousands of lines)."""
        firsts, parts, n = self._firsts, self._parts, self._n
        starts: list[int] = []
        ends: list[int] = []
        i, count = 0, len(positions)
        while i < count:
            p = positions[i]
            if not 0 <= p < n:
                raise IndexError(p)
            k = bisect_right(firsts, p) - 1
            low = firsts[k]
            stop = bisect_left(positions, firsts[k + 1], i) if k + 1 < len(firsts) else count
            if positions[stop - 1] >= n:
                raise IndexError(positions[stop - 1])
            local = list(map(sub, positions[i:stop], repeat(low)))
            part = parts[k]
            if isinstance(part, _Chunk):
                base = part.base
                ends += map(add, _gather(part.ends, local), repeat(base))
                at = len(starts)
                starts += map(add, _gather(part.ends, list(map(sub, local, repeat(1)))), repeat(base + 1))
                if local[0] == 0:  # the part's first entry starts where the part does (ascending: in front)
                    zeros = local.count(0)
                    starts[at : at + zeros] = [base + part.first] * zeros
            else:
                starts += _gather(part.starts, local)
                ends += _gather(part.ends, local)
            i = stop
        return starts, ends

    def line(self, i: int) -> int:
        """The 1-based physical line number of entry ``i``."""
        part, j = self._locate(i)
        if isinstance(part, _Chunk):
            return part.first_line + j
        return part.lines[j]

    def end(self) -> int:
        """Where the last entry's line ends (0 when there are none)."""
        return self.span(self._n - 1)[1] if self._n else 0

    def spans(self) -> Iterator[tuple[int, int]]:
        """``span(i)`` for every position, in order."""
        for part in self._parts:
            if isinstance(part, _Chunk):
                base = part.base
                start = base + part.first
                for end in part.ends:
                    yield start, base + end
                    start = base + end + 1
            else:
                yield from zip(part.starts, part.ends, strict=True)

    # -- the index cache -------------------------------------------------------------------------------
    def dump(self) -> list[list[int | bytes]]:
        """The table as plain values (see ``load``)."""
        out: list[list[int | bytes]] = []
        for part in self._parts:
            if isinstance(part, _Chunk):
                out.append([part.base, part.first, part.first_line, part.ends.tobytes()])
            else:
                out.append([part.starts.tobytes(), part.ends.tobytes(), part.lines.tobytes()])
        return out

    @classmethod
    def load(cls, parts: list[list[int | bytes]]) -> LineTable:
        """The table ``dump`` gave; raises ``ValueError`` on values it cannot have given."""
        table = cls()
        for values in parts:
            if len(values) == 4:
                base, first, first_line, raw = values
                if not (isinstance(base, int) and isinstance(first, int) and isinstance(first_line, int)):
                    raise ValueError("bad chunk")
                table.add_chunk(base, first, _array(raw), first_line)
            elif len(values) == 3:
                part = _Explicit()
                part.starts, part.ends, part.lines = (_array(v) for v in values)
                if not len(part.starts) == len(part.ends) == len(part.lines) or not part.starts:
                    raise ValueError("bad explicit part")
                table._firsts.append(table._n)
                table._parts.append(part)
                table._n += len(part.starts)
            else:
                raise ValueError("bad part")
        return table


def _gather(values: array[int], indexes: list[int]) -> list[int]:
    """``[values[j] for j in indexes]`` in C (``indexes`` not empty)."""
    if len(indexes) == 1:
        return [values[indexes[0]]]
    return list(itemgetter(*indexes)(values))


def _array(raw: int | bytes) -> array[int]:
    if not isinstance(raw, bytes) or len(raw) % 8:
        raise ValueError("bad offsets")
    out = array("q")
    out.frombytes(raw)
    return out
