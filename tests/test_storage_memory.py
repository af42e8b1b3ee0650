"""MemoryStore: the JSONL store's behaviour without I/O (parity checks against a real file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.errors import SessionError
from sessiontree.format import pi_json as _json
from sessiontree.storage import EntryStore, JsonlStore, MemoryStore

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
ENTRIES: list[dict[str, Any]] = [
    {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": "t1",
        "message": {"role": "user", "content": "x"},
    },
    {"type": "custom", "customType": "c", "data": {"n": 1.5}, "id": "b", "parentId": "a", "timestamp": "t2"},
    {"type": "label", "id": "c", "parentId": "b", "timestamp": "t3", "targetId": "a", "label": "L"},
    {"type": "message", "id": "b", "parentId": "zz", "timestamp": "t4", "message": {"role": "user"}},
    {"type": "future", "id": "f", "parentId": "c"},
]


def _stores(tmp_path: Path) -> tuple[JsonlStore, MemoryStore]:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_json.dumps_bytes(x) + b"\n" for x in [HEADER, *ENTRIES]))
    return JsonlStore.open(path), MemoryStore(HEADER, ENTRIES)


def _view(store: EntryStore) -> dict[str, Any]:
    n = len(store)
    return {
        "len": n,
        "ids": [store.id_at(i) for i in range(n)],
        "parents": [store.parent_at(i) for i in range(n)],
        "types": [store.type_at(i) for i in range(n)],
        "timestamps": [store.timestamp_at(i) for i in range(n)],
        "raw": [store.raw_at(i) for i in range(n)],
        "entries": store.entries(),
        "lines": [store.line_of(i) for i in range(n)],
        "index": {x: store.index_of(x) for x in ("a", "b", "c", "f", "nope")},
        "problems": [(p.kind, p.line, p.entry_id) for p in store.problems],
        "header": store.header,
        "dups": store.has_duplicates,
        "bulk": (store.ids_at(range(n - 1, -1, -1)), store.types_at([0, n - 1] if n else [])),
        "parent_positions": store.parent_positions(),
    }


def test_memory_store_matches_the_file_store(tmp_path: Path) -> None:
    file_store, memory = _stores(tmp_path)
    assert _view(memory) == _view(file_store)
    assert memory.parent_positions() == [-1, 0, 3, -1, 2]  # "b" resolves to its last copy
    assert memory.ids_at([4, 0]) == ["f", "a"] and memory.types_at([2]) == ["label"]
    extra = {"type": "message", "id": "g", "parentId": "f", "timestamp": "t5", "message": {"v": 1.0}}
    file_store.append(extra)
    memory.append(extra)
    assert _view(memory) == _view(file_store)
    assert memory.entry_at(5) == {**extra, "message": {"v": 1}}  # what a reader of the bytes gets
    file_store.close()


def test_bytes_lines_are_kept_verbatim_and_bad_ones_reported() -> None:
    raw = b'{"type":"x","id":"a","parentId":null,"n":1.0}'
    store = MemoryStore(HEADER, [raw + b"\r\n", b"{broken", b'{"type":"y"}', _json.dumps_bytes(HEADER)])
    assert len(store) == 1 and store.raw_at(0) == raw
    assert [(p.kind, p.line) for p in store.problems] == [
        ("bad_line", 3),
        ("bad_line", 4),
        ("extra_header", 5),
    ]


def test_header_and_closing_rules() -> None:
    store = MemoryStore()
    assert store.header is None and not store.file_exists and not store.is_persisted and store.path is None
    store.set_header(HEADER)
    with pytest.raises(SessionError):
        store.set_header(HEADER)
    with pytest.raises(ValueError):
        MemoryStore({"type": "nope", "id": "x"})
    store.append(ENTRIES[0])
    store.sync()
    store.close()
    store.close()
    with pytest.raises(SessionError):
        store.append(ENTRIES[1])
    assert store.entry_at(0) == ENTRIES[0] and store.entry_at(-1) is store.entry_at(0)
    with pytest.raises(ValueError):
        MemoryStore(HEADER).append({"type": "message"})


def test_iter_entries_and_cache_clearing() -> None:
    store = MemoryStore(HEADER, ENTRIES[:3])
    first = store.entry_at(0)
    assert list(store.iter_entries()) == ENTRIES[:3]
    store.clear_cache()
    assert store.entry_at(0) == first and store.entry_at(0) is not first
    assert store.ids() == ["a", "b", "c"]


_ids = st.sampled_from(["a", "b", "c", "d", "e", "f"])
_ops = st.lists(
    st.tuples(
        st.sampled_from(["append", "reopen"]),
        _ids,
        st.one_of(st.none(), _ids, st.just("missing")),
        st.one_of(st.none(), st.text(max_size=3), st.floats(allow_nan=False), st.integers()),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_ops)
def test_random_operation_sequences_agree(tmp_path_factory: pytest.TempPathFactory, ops: list[Any]) -> None:
    path = tmp_path_factory.mktemp("ops") / "s.jsonl"
    file_store = JsonlStore.create(path, HEADER)
    memory = MemoryStore(HEADER)
    expected: list[dict[str, Any]] = []
    for op, entry_id, parent, payload in ops:
        if op == "reopen":
            file_store.close()
            file_store = JsonlStore.open(path) if path.exists() else JsonlStore.create(path, HEADER)
            continue
        entry = {"type": "custom", "id": entry_id, "parentId": parent, "timestamp": "t", "data": payload}
        file_store.append(entry)
        memory.append(entry)
        expected.append(_json.loads(_json.dumps_bytes(entry)))
    assert memory.entries() == expected
    view = _view(memory)
    file_view = _view(file_store)
    for key in (
        "len",
        "ids",
        "parents",
        "types",
        "raw",
        "entries",
        "lines",
        "index",
        "dups",
        "bulk",
        "parent_positions",
    ):
        assert file_view[key] == view[key], key
    assert {p.kind for p in memory.problems} <= {"duplicate_id", "dangling_parent"}
    file_store.close()
    if path.exists():
        reopened = JsonlStore.open(path, read_only=True)
        assert _view(reopened)["raw"] == view["raw"]
        assert sorted(p.kind for p in reopened.problems) == sorted(
            p.kind for p in MemoryStore(HEADER, expected).problems
        )
