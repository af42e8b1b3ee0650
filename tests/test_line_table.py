"""The JSONL store's line table: byte spans and line numbers by position, kept per scanned chunk."""

from __future__ import annotations

import random
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


def test_line_spans_in_bulk_cover_every_kind_of_part_in_any_order(tmp_path: Path) -> None:
    """Several whole chunks, lines found one by one between them and appended ones, asked for ascending,
    descending, shuffled, repeated and across part boundaries: the same spans as one by one."""
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
