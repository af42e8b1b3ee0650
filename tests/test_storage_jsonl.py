"""JsonlStore: reading pi files into the envelope index, appending, locking, durability, odd files."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import (
    CorruptSessionError,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    StorageError,
)
from sessiontree.format import pi_json as _json
from sessiontree.storage import JsonlStore, _scan
from tests.conftest import require_conformance

HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "0197aaaa-0000-7000-8000-000000000001",
    "timestamp": "2025-05-01T10:00:00.000Z",
    "cwd": "/home/user/project",
}


def msg(
    entry_id: str, parent: str | None, text: str = "hi", ts: str = "2025-05-01T10:00:01.000Z"
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
    }


def line(obj: dict[str, Any]) -> bytes:
    return _json.dumps_bytes(obj) + b"\n"


def write(path: Path, *objs: dict[str, Any], tail: bytes = b"") -> bytes:
    data = b"".join(line(o) for o in (HEADER, *objs)) + tail
    path.write_bytes(data)
    return data


@pytest.fixture(params=["msgspec", "orjson"], autouse=True)
def scanner(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run every test with the fast validator and with the fallback."""
    if request.param == "msgspec" and _scan._DECODER is None:
        pytest.skip("msgspec is not installed")
    previous = _scan.use_msgspec(request.param == "msgspec")
    yield request.param
    _scan.use_msgspec(previous)


@pytest.fixture(params=[_scan.CHUNK_BYTES, 300], ids=["big-chunks", "tiny-chunks"])
def chunked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_scan, "CHUNK_BYTES", request.param)
    return int(request.param)


def kinds(store: JsonlStore) -> list[str]:
    return [p.kind for p in store.problems]


# -- reading ----------------------------------------------------------------------------------------------
def test_open_indexes_envelopes_and_decodes_on_demand(tmp_path: Path, chunked: int) -> None:
    custom = {
        "type": "custom",
        "customType": "ext",
        "data": {"n": 1},
        "id": "c1",
        "parentId": "b",
        "timestamp": "t",
    }
    entries = [msg("a", None), msg("b", "a", "ü 日本 \u2028"), custom, msg("d", "c1")]
    write(tmp_path / "s.jsonl", *entries)
    store = JsonlStore.open(tmp_path / "s.jsonl")
    assert len(store) == 4
    assert [store.id_at(i) for i in range(4)] == ["a", "b", "c1", "d"]
    assert [store.parent_at(i) for i in range(4)] == [None, "a", "b", "c1"]
    assert [store.type_at(i) for i in range(4)] == ["message", "message", "custom", "message"]
    assert store.timestamp_at(2) == "t"
    assert store.entries() == entries
    assert store.entry_at(1) is store.entry_at(1)
    assert store.raw_at(2) == _json.dumps_bytes(custom)
    assert store.index_of("c1") == 2 and store.index_of("zz") is None
    assert [store.line_of(i) for i in range(4)] == [2, 3, 4, 5]
    assert store.header == HEADER
    assert store.problems == []
    assert store.is_persisted and store.file_exists


def test_crlf_blank_lines_bom_and_a_bad_middle_line(tmp_path: Path, chunked: int) -> None:
    path = tmp_path / "s.jsonl"
    body = (
        b"\xef\xbb\xbf"
        + _json.dumps_bytes(HEADER)
        + b"\r\n\r\n"
        + _json.dumps_bytes(msg("a", None))
        + b"\r\n   \r\n"
        + b'{"type":"message","id":"broken",\r\n'
        + _json.dumps_bytes(msg("b", "a"))
        + b"\r\n"
    )
    path.write_bytes(body)
    store = JsonlStore.open(path)
    assert [store.id_at(i) for i in range(len(store))] == ["a", "b"]
    assert store.parent_at(1) == "a"
    assert store.raw_at(0) == _json.dumps_bytes(msg("a", None))
    bad = [p for p in store.problems if p.kind == "bad_line"]
    assert [p.line for p in bad] == [5]
    assert str(path) in bad[0].message and "line 5" in bad[0].message
    assert "blank_lines" in kinds(store)
    assert "torn_tail" not in kinds(store)


def test_pi_crlf_case_reads_like_pi(copy_input: Any) -> None:
    case = require_conformance() / "cases" / "edge-open-malformed-crlf"
    path = copy_input(case / "input.jsonl")
    before = path.read_bytes()
    store = JsonlStore.open(path)
    pi_ids = [_json.loads(raw)["id"] for raw in (case / "memory.jsonl").read_bytes().splitlines()[1:]]
    ids = [store.id_at(i) for i in range(len(store))]
    assert ids == pi_ids[: len(ids)]
    assert [p.line for p in store.problems if p.kind == "bad_line"] == [4]
    assert path.read_bytes() == before


def test_a_line_that_merely_starts_like_an_entry_is_not_an_entry(tmp_path: Path, chunked: int) -> None:
    path = tmp_path / "s.jsonl"
    glued = _json.dumps_bytes(msg("a", None))[:-9] + _json.dumps_bytes(msg("x", "a"))
    path.write_bytes(line(HEADER) + glued + b"\n" + line(msg("b", "x")))
    store = JsonlStore.open(path)
    assert [store.id_at(i) for i in range(len(store))] == ["b"]
    assert kinds(store) == ["bad_line", "dangling_parent"]


def test_non_entries_and_extra_headers_are_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        line(HEADER)
        + b"123\n[1,2]\n"
        + b'{"type":"message"}\n'
        + b'{"type":"message","id":7}\n'
        + line(HEADER)
        + line({"type": "leaf", "id": "l", "parentId": 5, "timestamp": "t", "targetId": None})
        + line(msg("a", None))
    )
    store = JsonlStore.open(path)
    assert [store.id_at(i) for i in range(len(store))] == ["l", "a"]
    assert store.parent_at(0) is None
    assert kinds(store) == ["bad_line", "bad_line", "bad_line", "bad_line", "extra_header", "bad_parent"]


def test_lone_surrogates_and_huge_numbers_are_valid_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    odd = b'{"type":"custom","customType":"x","data":{"s":"\\ud800","n":1E400},"id":"a","parentId":null,"timestamp":"t"}'
    path.write_bytes(line(HEADER) + odd + b"\n")
    store = JsonlStore.open(path)
    assert store.problems == []
    assert store.entry_at(0)["data"]["s"] == "\ud800"
    assert store.raw_at(0) == odd


def test_duplicate_ids_last_wins_and_are_reported(tmp_path: Path, chunked: int) -> None:
    write(tmp_path / "s.jsonl", msg("a", None), msg("d", "a", "first"), msg("d", "a", "second"))
    store = JsonlStore.open(tmp_path / "s.jsonl")
    assert len(store) == 3
    assert store.index_of("d") == 2
    assert store.has_duplicates and store.is_duplicate("d")
    dup = [p for p in store.problems if p.kind == "duplicate_id"]
    assert len(dup) == 1 and dup[0].line == 4 and dup[0].entry_id == "d"


def test_dangling_parents_are_reported(tmp_path: Path) -> None:
    write(tmp_path / "s.jsonl", msg("a", None), msg("o", "missing"))
    store = JsonlStore.open(tmp_path / "s.jsonl")
    (problem,) = store.problems
    assert problem.kind == "dangling_parent" and problem.line == 3 and problem.entry_id == "o"
    assert problem.to_dict() == {
        "kind": "dangling_parent",
        "line": 3,
        "message": problem.message,
        "entryId": "o",
    }


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        JsonlStore.open(tmp_path / "nope.jsonl")
    store = JsonlStore.open(tmp_path / "sub" / "nope.jsonl", missing_ok=True)
    assert store.header is None and not store.file_exists
    store.set_header(HEADER)
    store.append(msg("a", None))
    assert (tmp_path / "sub" / "nope.jsonl").read_bytes() == line(HEADER) + line(msg("a", None))
    store.close()


# -- damaged headers and empty files ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content",
    [
        b'{"type":"message","id":"u1","parentId":null}\n' + line(HEADER),
        b"not json at all\n" + line(msg("a", None)),
        b'{"type":"session","id":5}\n',
        b'{"type":"session","version":"3","id":"x","timestamp":"t","cwd":"/"}\n',
        b"[1]\n",
    ],
)
@pytest.mark.parametrize("read_only", [False, True])
def test_damaged_header_raises_and_never_touches_the_file(
    tmp_path: Path, content: bytes, read_only: bool
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n" + content)
    with pytest.raises(CorruptSessionError) as info:
        JsonlStore.open(path, read_only=read_only)
    assert str(path) in str(info.value) and "line 2" in str(info.value)
    assert info.value.line == 2
    assert path.read_bytes() == b"\n" + content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_pi_invalid_header_case_is_left_alone(copy_input: Any) -> None:
    path = copy_input(require_conformance() / "cases" / "edge-open-invalid-header" / "input.jsonl")
    before = path.read_bytes()
    with pytest.raises(CorruptSessionError):
        JsonlStore.open(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [b"", b"\n  \n", b"   "])
def test_empty_or_blank_file_is_a_new_session(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    store = JsonlStore.open(path)
    assert store.header is None and len(store) == 0 and not store.is_persisted
    with pytest.raises(SessionError):
        store.append(msg("a", None))
    store.set_header(HEADER)
    with pytest.raises(SessionError):
        store.set_header(HEADER)
    store.append(msg("a", None))
    store.append(msg("b", "a"))
    assert path.read_bytes() == line(HEADER) + line(msg("a", None)) + line(msg("b", "a"))
    assert [store.line_of(0), store.line_of(1)] == [2, 3]
    store.close()
    assert len(JsonlStore.open(path, read_only=True)) == 2


# -- the end of the file ------------------------------------------------------------------------------------
def test_missing_final_newline_is_written_before_the_next_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write(path, msg("a", None), msg("b", "a"))[:-1]
    path.write_bytes(data)
    store = JsonlStore.open(path)
    assert len(store) == 2 and kinds(store) == ["missing_newline"]
    store.append(msg("c", "b"))
    store.close()
    assert path.read_bytes() == data + b"\n" + line(msg("c", "b"))
    again = JsonlStore.open(path, read_only=True)
    assert [again.id_at(i) for i in range(3)] == ["a", "b", "c"] and again.problems == []


def test_header_only_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_json.dumps_bytes(HEADER))
    store = JsonlStore.open(path)
    assert kinds(store) == ["missing_newline"]
    store.append(msg("a", None))
    store.close()
    assert path.read_bytes() == line(HEADER) + line(msg("a", None))


def test_pi_no_trailing_newline_case_keeps_both_entries(copy_input: Any) -> None:
    case = require_conformance() / "cases" / "edge-open-no-trailing-newline"
    path = copy_input(case / "input.jsonl")
    store = JsonlStore.open(path)
    last = store.id_at(len(store) - 1)
    store.append(msg("new1", last))
    store.close()
    again = JsonlStore.open(path, read_only=True)
    assert again.id_at(len(again) - 2) == last and again.id_at(len(again) - 1) == "new1"
    assert again.problems == []


def test_torn_tail_is_reported_then_moved_aside_and_cut_at_the_first_write(
    tmp_path: Path, chunked: int
) -> None:
    path = tmp_path / "s.jsonl"
    good = write(path, msg("a", None), msg("b", "a"))
    torn = _json.dumps_bytes(msg("c", "b"))[:-25]
    path.write_bytes(good + torn)
    store = JsonlStore.open(path)
    assert len(store) == 2
    (problem,) = store.problems
    assert problem.kind == "torn_tail" and problem.line == 4 and str(path) in problem.message
    assert path.read_bytes() == good + torn  # nothing happens before the first write
    store.append(msg("d", "b"))
    assert (tmp_path / "s.jsonl.torn-1").read_bytes() == torn
    assert path.read_bytes() == good + line(msg("d", "b"))
    assert store.line_of(2) == 4
    assert "torn_tail_moved" in kinds(store)
    store.close()
    again = JsonlStore.open(path)
    assert again.problems == [] and len(again) == 3


def test_a_second_torn_tail_gets_the_next_free_name(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    (tmp_path / "s.jsonl.torn-1").write_bytes(b"older")
    good = write(path, msg("a", None))
    path.write_bytes(good + b'{"type":"mess\n\n')
    store = JsonlStore.open(path)
    assert kinds(store) == ["torn_tail", "blank_lines"]
    store.append(msg("b", "a"))
    store.close()
    assert (tmp_path / "s.jsonl.torn-2").read_bytes() == b'{"type":"mess\n\n'
    assert (tmp_path / "s.jsonl.torn-1").read_bytes() == b"older"
    assert path.read_bytes() == good + line(msg("b", "a"))


def test_read_only_open_never_modifies_anything(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(write(path, msg("a", None)) + b'{"type":')
    before = path.read_bytes()
    store = JsonlStore.open(path, read_only=True)
    assert kinds(store) == ["torn_tail"]
    with pytest.raises(SessionError) as info:
        store.append(msg("b", "a"))
    assert info.value.kind == "read_only"
    store.close()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


# -- writing ----------------------------------------------------------------------------------------------
def test_create_writes_nothing_until_the_first_entry_then_header_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "s.jsonl"
    store = JsonlStore.create(path, HEADER)
    assert not path.exists() and not store.is_persisted
    store.append(msg("a", None))
    assert path.read_bytes() == line(HEADER) + line(msg("a", None))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    store.append(msg("b", "a"))
    assert store.entry_at(1) == msg("b", "a") and store.raw_at(1) == _json.dumps_bytes(msg("b", "a"))
    assert store.index_of("b") == 1 and store.line_of(1) == 3
    store.close()
    store.close()  # idempotent
    with pytest.raises(SessionError):
        store.append(msg("c", "b"))
    assert store.entry_at(0)["id"] == "a"  # reads keep working
    with pytest.raises(StorageError):
        JsonlStore.create(path, HEADER)


def test_append_validates_the_envelope(tmp_path: Path) -> None:
    store = JsonlStore.create(tmp_path / "s.jsonl", HEADER)
    for bad in ({"type": "message"}, {"id": "x"}, {"type": "m", "id": "x", "parentId": 3}, dict(HEADER)):
        with pytest.raises(ValueError):
            store.append(bad)
    assert not (tmp_path / "s.jsonl").exists()


def test_each_entry_is_one_write_on_an_append_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    store = JsonlStore.open(path)
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: Any) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    store.append(msg("b", "a"))
    store.append(msg("c", "b"))
    assert writes == [line(msg("b", "a")), line(msg("c", "b"))]
    assert store._fd is not None and os.get_blocking(store._fd)
    import fcntl

    assert fcntl.fcntl(store._fd, fcntl.F_GETFL) & os.O_APPEND
    store.close()


@pytest.mark.parametrize(
    ("durability", "fsyncs_after_two", "fsyncs_after_sync"),
    [
        ("flush", 0, 0),
        ("fsync", 2, 2),
        ("batch", 0, 1),
    ],
)
def test_durability_modes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    durability: Any,
    fsyncs_after_two: int,
    fsyncs_after_sync: int,
) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    store = JsonlStore.open(path, durability=durability)
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    file_fsyncs = lambda: sum(1 for fd in calls if fd == store._fd)  # noqa: E731
    store.append(msg("b", "a"))
    store.append(msg("c", "b"))
    assert file_fsyncs() == fsyncs_after_two
    store.sync()
    assert file_fsyncs() == fsyncs_after_sync
    store.close()
    assert len(JsonlStore.open(path, read_only=True)) == 3
    with pytest.raises(ValueError):
        JsonlStore.open(path, durability="sometimes")  # type: ignore[arg-type]


def test_write_new_copies_bytes_verbatim_and_holds_the_lock(tmp_path: Path) -> None:
    unknown = b'{"type":"future_thing","id":"u","parentId":"a","timestamp":"t","x":1.0,"y":"\\u00e9"}'
    path = tmp_path / "new" / "fork.jsonl"
    store = JsonlStore.write_new(path, HEADER, [msg("a", None), unknown + b"\r\n"])
    assert path.read_bytes() == line(HEADER) + line(msg("a", None)) + unknown + b"\n"
    assert store.raw_at(1) == unknown and store.type_at(1) == "future_thing"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["fork.jsonl"]  # no temp file left
    other = JsonlStore.open(path)
    with pytest.raises(SessionLockedError):
        other.append(msg("b", "u"))
    store.append(msg("b", "u"))
    store.close()
    with pytest.raises(StorageError):
        JsonlStore.write_new(path, HEADER, [])
    copy = JsonlStore.write_new(tmp_path / "copy.jsonl", HEADER, [store.raw_at(i) for i in range(len(store))])
    assert (tmp_path / "copy.jsonl").read_bytes() == path.read_bytes()
    copy.close()
    other.close()


def test_second_store_in_the_same_process_is_locked_out(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    first = JsonlStore.open(path)
    second = JsonlStore.open(path)
    first.append(msg("b", "a"))
    with pytest.raises(SessionLockedError) as info:
        second.append(msg("c", "a"))
    assert str(path) in str(info.value) and info.value.kind == "locked"
    first.close()
    # the file grew after `second` read it: it is indexed again under the lock before writing
    generation = second.generation
    second.append(msg("c", "b"))
    assert second.generation == generation + 1
    assert "changed_on_disk" in kinds(second)
    assert [second.id_at(i) for i in range(len(second))] == ["a", "b", "c"]
    second.close()
    assert len(JsonlStore.open(path, read_only=True)) == 3


def test_read_only_store_does_not_take_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    reader = JsonlStore.open(path, read_only=True)
    writer = JsonlStore.open(path)
    writer.append(msg("b", "a"))
    writer.close()
    reader.close()


def test_lines_longer_than_a_read_chunk(tmp_path: Path, chunked: int) -> None:
    long_text = "long " * 2000
    entries = [msg("a", None, long_text), msg("b", "a"), msg("c", "b", long_text)]
    write(tmp_path / "s.jsonl", *entries)
    store = JsonlStore.open(tmp_path / "s.jsonl")
    assert store.entries() == entries and store.problems == []
    assert store.entry_at(2)["message"]["content"][0]["text"] == long_text


def test_entries_are_read_back_from_the_file_not_kept_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None), msg("b", "a"))
    store = JsonlStore.open(path)
    assert not hasattr(store, "_extra") and store._buf is None
    store.append(msg("c", "b"))
    assert store.raw_at(2) == _json.dumps_bytes(msg("c", "b"))
    store.close()
    assert store.raw_at(0) == _json.dumps_bytes(msg("a", None))  # reopened lazily after close
    store.close()


def test_entries_reads_the_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    entries = [msg(f"e{i}", f"e{i - 1}" if i else None) for i in range(50)]
    write(path, *entries)
    store = JsonlStore.open(path, read_only=True)
    calls: list[int] = []
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, off: (calls.append(n), real(fd, n, off))[1])
    assert store.entries() == entries
    assert len(calls) == 1
    store.close()


def test_raws_at_gives_the_same_lines_as_raw_at(tmp_path: Path) -> None:
    from sessiontree import SessionManager

    manager = SessionManager.create(str(tmp_path), tmp_path / "s")
    for i in range(20):
        manager.append_message({"role": "user", "content": f"message {i} " + "é" * i, "timestamp": i})
    store = manager.store
    positions = [7, 3, 19, 0, 3]
    assert store.raws_at(positions) == [store.raw_at(i) for i in positions]
    assert store.raws_at([]) == []
    manager.close()


def test_preload_decodes_every_node_of_a_tree_in_bulk_and_equals_reading_one_by_one(tmp_path: Path) -> None:
    from sessiontree import SessionManager
    from sessiontree.tree.tree_index import preload_entries

    path = tmp_path / "s.jsonl"
    writer = SessionManager.open(path)
    first = writer.append_message({"role": "user", "content": "a", "timestamp": 1})
    for i in range(20_000):  # more than one chunk of preloading, and a branch
        writer.append_message({"role": "user", "content": f"m{i} " + "é" * (i % 7), "timestamp": i})
    writer.branch(first)
    writer.append_message({"role": "user", "content": "other branch", "timestamp": 2})
    writer.close()
    manager = SessionManager.open(path, read_only=True)
    store = manager.store
    roots = manager.get_tree()
    preload_entries(roots)
    assert len(store._cache) == len(store)  # every entry decoded, no read per entry later
    fresh = SessionManager.open(path, read_only=True).store
    assert [store.entry_at(i) for i in range(len(store))] == [fresh.entry_at(i) for i in range(len(fresh))]
    store.preload([3, 3, 5])  # cached already: nothing changes
    assert store.entry_at(3) == fresh.entry_at(3)
