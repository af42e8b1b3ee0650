"""The JSONL store's line table: byte spans and line numbers by position, kept per scanned chunk."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from sessiontree.format import pi_json
from sessiontree.storage import _scan
from sessiontree.storage.jsonl import JsonlStore


def _header() -> bytes:
    return pi_json.dumps_bytes({"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/"})


def _line(entry_id: str, parent: str | None) -> bytes:
    entry: dict[str, Any] = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t"}
    entry["message"] = {"role": "user", "content": entry_id, "timestamp": 1}
    return pi_json.dumps_bytes(entry)


def test_line_spans_in_bulk_are_the_spans_one_by_one(tmp_path: Path) -> None:
    """Chunks found whole and lines found one by one (a bad line, CRLF endings), in any order."""
    path = tmp_path / "s.jsonl"
    lines = [_header(), *(_line(f"e{n}", f"e{n - 1}" if n else None) for n in range(30))]
    lines[10] = b"{bad"
    lines[20] = lines[20] + b"\r"
    path.write_bytes(b"\n".join(lines) + b"\n")
    store = JsonlStore.open(path, read_only=True)
    table = store._table
    order = [*range(len(table)), *reversed(range(len(table))), 3, 3, 27, 0]
    assert table.spans_at(order) == [table.span(i) for i in order]
    with pytest.raises(IndexError):
        table.spans_at([len(table)])
    store.close()


def _many_parts(tmp_path: Path) -> JsonlStore:
    """A store whose line table has many parts: small whole chunks, a chunk indexed line by line (a bad
    line), a line ending in CR, and an appended entry."""
    path = tmp_path / "s.jsonl"
    lines = [_header(), *(_line(f"e{n}", f"e{n - 1}" if n else None) for n in range(400))]
    lines[150] = b"{bad"  # the chunk holding it is indexed line by line
    lines[300] = lines[300] + b"\r"
    path.write_bytes(b"\n".join(lines) + b"\n")
    original = _scan.CHUNK_BYTES
    _scan.CHUNK_BYTES = 2_000  # many small chunks
    try:
        store = JsonlStore.open(path)
    finally:
        _scan.CHUNK_BYTES = original
    store.append({"type": "message", "id": "x", "parentId": "e399", "timestamp": "t", "message": {}})
    return store


def test_line_spans_in_bulk_cover_every_kind_of_part_in_any_order(tmp_path: Path) -> None:
    """Several whole chunks, lines found one by one between them and appended ones, asked for ascending,
    descending, shuffled, repeated and across part boundaries: the same spans as one by one."""
    store = _many_parts(tmp_path)
    table = store._table
    n = len(table)
    assert len(table._parts) > 10
    one_by_one = [table.span(i) for i in range(n)]
    assert table.spans_at(range(n)) == one_by_one
    assert table.spans_at(list(reversed(range(n)))) == one_by_one[::-1]
    shuffled = [*range(n), *range(0, n, 7), 0, n - 1]
    random.Random(5).shuffle(shuffled)
    assert table.spans_at(shuffled) == [one_by_one[i] for i in shuffled]
    assert table.spans_at([]) == []
    for bad in ([n], [-1], [0, n]):
        with pytest.raises(IndexError):
            table.spans_at(bad)
    store.close()


def test_span_lists_are_the_spans_of_ascending_positions(tmp_path: Path) -> None:
    """``span_lists`` (starts and ends gathered per part) gives the spans one by one, for ascending positions
    that start, end and skip anywhere: a part's first entry, single entries, whole parts, explicit parts."""
    store = _many_parts(tmp_path)
    table = store._table
    n = len(table)
    firsts = table._firsts
    assert len(firsts) > 10
    one_by_one = [table.span(i) for i in range(n)]
    rng = random.Random(11)
    cases = [
        list(range(n)),
        [0],
        [n - 1],
        sorted(firsts),  # the first entry of every part
        sorted({f - 1 for f in firsts if f} | {0}),  # the last entry of every part
        [0, 0, 5, 5, n - 1],  # repeats are allowed
        *(sorted(rng.sample(range(n), k)) for k in (2, 17, 120, n // 2)),
    ]
    for positions in cases:
        starts, ends = table.span_lists(positions)
        assert list(zip(starts, ends, strict=True)) == [one_by_one[i] for i in positions]
    assert table.span_lists([]) == ([], [])
    for bad in ([n], [-1], [0, n]):
        with pytest.raises(IndexError):
            table.span_lists(bad)
    store.close()


def test_a_bulk_decode_reads_nearby_lines_together_in_bounded_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``preload`` decodes what decoding one by one gives, reading nearby lines together but never more
    than ``_READ_BYTES`` at a time unless one line alone is longer; distant lines are read apart."""
    from sessiontree.storage import jsonl_reads

    path = tmp_path / "s.jsonl"
    entries: list[dict[str, Any]] = []
    for n in range(300):
        entry: dict[str, Any] = {"type": "message", "id": f"e{n}", "parentId": f"e{n - 1}" if n else None}
        entry["timestamp"] = "t"
        entry["message"] = {"role": "user", "content": "x" * (5_000 if n == 120 else (n * 37) % 400)}
        entries.append(entry)
    lines = [_header(), *map(pi_json.dumps_bytes, entries)]
    lines[200] = b"{bad"  # a chunk indexed line by line
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(jsonl_reads, "_READ_BYTES", 2_000)
    monkeypatch.setattr(jsonl_reads, "_READ_GAP", 3_000)
    original = _scan.CHUNK_BYTES
    _scan.CHUNK_BYTES = 4_000
    try:
        store = JsonlStore.open(path, read_only=True)
    finally:
        _scan.CHUNK_BYTES = original
    expected = [e for k, e in enumerate(entries) if k != 199]
    reads: list[tuple[int, int]] = []
    real = store._read_range
    monkeypatch.setattr(store, "_read_range", lambda a, b: reads.append((a, b)) or real(a, b))
    wanted = [*range(0, 150), *range(150, 290, 9)]
    store.preload(wanted)
    assert [store.entry_at(i) for i in wanted] == [expected[i] for i in wanted]
    assert reads == sorted(reads) and all(b <= c for (_, b), (c, _) in pairwise(reads))
    longest = max(len(line) for line in lines)
    assert all(b - a <= 2_000 or b - a == longest for a, b in reads)
    assert any(b - a == longest for a, b in reads)  # the long line is read alone
    spans = store._table.spans_at(wanted)
    # every line is in exactly one read, and a read never spans a gap wider than _READ_GAP
    for a, b in reads:
        inside = [s for s in spans if a <= s[0] and s[1] <= b]
        assert inside and inside[0][0] == a and inside[-1][1] == b
        assert all(t[0] - s[1] <= 3_000 for s, t in pairwise(inside))
    assert sum(len([s for s in spans if a <= s[0] and s[1] <= b]) for a, b in reads) == len(spans)
    store.close()


def test_raw_views_at_give_each_line_in_any_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``raw_views_at`` (what ``tree --active`` and previews read) gives the exact line of each position,
    for ascending positions (read in bounded groups, the path of a tree) and for any other order (sorted
    first), across every kind of line-table part, with gaps wider than a read and a line longer than one."""
    from sessiontree.storage import jsonl_reads

    store = _many_parts(tmp_path)
    monkeypatch.setattr(jsonl_reads, "_READ_BYTES", 700)
    monkeypatch.setattr(jsonl_reads, "_READ_GAP", 300)
    n = len(store)
    one_by_one = [store.raw_at(i) for i in range(n)]
    rng = random.Random(3)
    reads: list[tuple[int, int]] = []
    real = store._read_range
    monkeypatch.setattr(store, "_read_range", lambda a, b: reads.append((a, b)) or real(a, b))
    cases = [
        list(range(n)),
        [0],
        [n - 1],
        list(range(0, n, 40)),  # gaps wider than _READ_GAP: read apart
        [0, 0, 7, n - 1],  # repeated: not strictly ascending
        list(reversed(range(n))),
        *(rng.sample(range(n), k) for k in (2, 50, n // 2)),
        *(sorted(rng.sample(range(n), k)) for k in (3, 90)),
    ]
    for positions in cases:
        reads.clear()
        views = store.raw_views_at(positions)
        assert [bytes(v) for v in views] == [one_by_one[i] for i in positions]
        assert all(v.readonly for v in views)
        if positions == sorted(set(positions)):  # a path: nearby lines together, at most 700 bytes a read
            assert all(b - a <= 700 for a, b in reads)
        if positions == list(range(n)):
            assert len(reads) < n // 3  # several lines a read
        if positions == list(range(0, n, 40)):
            assert len(reads) == len(positions)  # one read each
    assert store.raw_views_at([]) == []
    with pytest.raises(IndexError):
        store.raw_views_at([0, n])
    store.close()


def test_line_runs_at_give_each_line_and_only_line_endings_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``line_runs_at`` (what ``tree --active`` decodes many lines of at once) gives every position's exact
    line, in the order asked, as runs that hold nothing but line endings between their lines: a bad line,
    a gap in the positions or the read size ends a run; any other order gives a line per block."""
    from sessiontree.storage import jsonl_reads
    from sessiontree.tree.entry_store import EntryStore

    store = _many_parts(tmp_path)
    monkeypatch.setattr(jsonl_reads, "_READ_BYTES", 700)
    n = len(store)
    one_by_one = [store.raw_at(i) for i in range(n)]
    rng = random.Random(4)
    cases = [
        list(range(n)),
        [0],
        [n - 1],
        list(range(0, n, 3)),
        [0, 0, 7, n - 1],
        list(reversed(range(n))),
        rng.sample(range(n), 60),
        sorted(rng.sample(range(n), 120)),
    ]
    for positions in cases:
        blocks = list(store.line_runs_at(positions))
        lines = [bytes(block[a:b]) for block, spans in blocks for a, b in spans]
        assert lines == [one_by_one[i] for i in positions]
        for block, spans in blocks:
            assert spans[0][0] == 0 and spans[-1][1] == len(block)
            assert all(set(block[b:c]) <= {0x0A, 0x0D} for (_, b), (c, _) in pairwise(spans))
            assert len(spans) == 1 or len(block) <= 700
        if positions == list(range(n)):
            assert 1 < len(blocks) < n // 3  # many lines a block, cut at the bad line and the read size
        if positions != sorted(set(positions)):
            assert all(len(spans) == 1 for _, spans in blocks)
    assert list(store.line_runs_at([])) == []
    generic = list(EntryStore.line_runs_at(store, [3, 1]))  # the base class: one line per block
    assert generic == [(one_by_one[3], [(0, len(one_by_one[3]))]), (one_by_one[1], [(0, len(one_by_one[1]))])]
    store.close()
