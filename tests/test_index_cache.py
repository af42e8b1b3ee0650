"""The index cache: a re-opened file reads only its new tail and indexes exactly what a whole scan finds.

Each test lowers ``index_cache.MIN_BYTES`` so small real files are cached, and compares the store opened
through the cache with the same file opened with the cache turned off (``SESSIONTREE_INDEX_CACHE=0``):
envelopes, line spans and numbers, problems and the context must all be the same.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.format import pi_json
from sessiontree.storage import body_cache, index_cache, jsonl_reads
from sessiontree.storage.jsonl import JsonlStore
from tests.property.fuzz_store import corpus
from tests.property.mutations import mutate


@pytest.fixture(autouse=True)
def _cache_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    monkeypatch.delenv(index_cache.ENV, raising=False)


def _header() -> bytes:
    return pi_json.dumps_bytes({"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/"})


def _line(entry_id: str, parent: str | None, text: str = "hi", kind: str = "message") -> bytes:
    entry: dict[str, Any] = {
        "type": kind,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:00.000Z",
    }
    if kind == "message":
        entry["message"] = {"role": "user", "content": text, "timestamp": 1}
    return pi_json.dumps_bytes(entry)


def _snapshot(path: Path) -> dict[str, Any]:
    manager = SessionManager.open(path, read_only=True)
    store = manager.store
    assert isinstance(store, JsonlStore)
    out = {
        "index": [
            (
                store.id_at(i),
                store.parent_at(i),
                store.type_at(i),
                store.timestamp_at(i),
                store.line_of(i),
                store.raw_at(i),
            )
            for i in range(len(store))
        ],
        "problems": [p.to_dict() for p in manager.problems],
        "context": manager.build_session_context().to_dict(),
        "leaf": manager.get_leaf_id(),
    }
    manager.close()
    return out


def _uncached(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setenv(index_cache.ENV, "0")
        return _snapshot(path)


def _cache_files() -> list[Path]:
    directory = Path(os.environ["SESSIONTREE_CACHE_DIR"]) / "index"
    return sorted(directory.glob("*.idx")) if directory.is_dir() else []


def _scanned_from(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record where every file scan of a JSONL store starts."""
    starts: list[int] = []
    original = JsonlStore._chunks

    def spy(self: JsonlStore, read: Any, start: int, end: int) -> Any:
        starts.append(start)
        return original(self, read, start, end)

    monkeypatch.setattr(JsonlStore, "_chunks", spy)
    return starts


def test_a_reopened_file_is_read_from_the_cache_and_indexed_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    lines = [_header(), _line("a", None), _line("b", "a"), _line("c", "b", "ünï"), _line("d", "a")]
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected = _uncached(path, monkeypatch)
    assert _cache_files() == []
    first = _snapshot(path)  # scans and writes the cache
    assert len(_cache_files()) == 1
    starts = _scanned_from(monkeypatch)
    second = _snapshot(path)
    assert starts == [path.stat().st_size]  # nothing before the end was read again
    assert first == second == expected


def test_a_grown_file_is_scanned_from_where_the_cache_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    # damage on both sides of the cut: blank lines (counted together), a bad line, a duplicate id, a parent
    # that only the appended part holds
    prefix = [_header(), _line("a", None), b"", _line("b", "a"), b"{not json}", _line("c", "zz"), b"   "]
    path.write_bytes(b"\n".join(prefix) + b"\n")
    _snapshot(path)
    cut = path.stat().st_size
    tail = [_line("zz", "b"), b"", _line("a", "c", "again"), b'{"type":"message"', _line("e", "a")]
    with path.open("ab") as f:
        f.write(b"\n".join(tail) + b"\n")
    starts = _scanned_from(monkeypatch)
    got = _snapshot(path)
    assert starts == [cut]
    expected = _uncached(path, monkeypatch)
    assert got == expected
    kinds = [p["kind"] for p in got["problems"]]
    assert {"bad_line", "blank_lines", "duplicate_id"} <= set(kinds)
    assert next(p for p in got["problems"] if p["kind"] == "blank_lines")["message"].endswith(
        "3 blank line(s) skipped, the first on line 3"
    )


def test_a_file_changed_in_place_is_scanned_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None, "one"), _line("b", "a", "two")]) + b"\n")
    _snapshot(path)
    st = path.stat()
    data = path.read_bytes().replace(b'"two"', b'"TWO"')
    with path.open("r+b") as f:  # same inode, same size, modification time set back
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    starts = _scanned_from(monkeypatch)
    got = _snapshot(path)
    assert starts[0] < st.st_size  # the whole file again
    assert got == _uncached(path, monkeypatch)
    assert got["context"]["messages"][-1]["content"] == "TWO"


def test_a_file_grown_after_a_change_near_its_end_is_scanned_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None, "one"), _line("b", "a", "two")]) + b"\n")
    _snapshot(path)
    size = path.stat().st_size
    data = path.read_bytes().replace(b'"two"', b'"TWO"') + _line("c", "b") + b"\n"
    with path.open("r+b") as f:
        f.write(data)
    starts = _scanned_from(monkeypatch)
    got = _snapshot(path)
    assert starts[0] < size
    assert got == _uncached(path, monkeypatch)


def test_a_replaced_file_is_not_read_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None), _line("b", "a")]) + b"\n")
    _snapshot(path)
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"\n".join([_header(), _line("x", None), _line("y", "x")]) + b"\n")
    os.replace(other, path)  # the same size, another inode
    got = _snapshot(path)
    assert [row[0] for row in got["index"]] == ["x", "y"]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "other format"])
def test_a_damaged_cache_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None), _line("b", "a")]) + b"\n")
    expected = _snapshot(path)
    [cache] = _cache_files()
    blob = cache.read_bytes()
    cache.write_bytes(
        {
            "truncated": blob[: len(blob) // 2],
            "garbage": os.urandom(len(blob)),
            "empty": b"",
            "other format": b"\x91\x07",
        }[damage]
    )
    assert _snapshot(path) == expected
    assert cache.read_bytes() == blob  # scanned whole, so the cache was written again


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None)]) + b"\n")
    _uncached(path, monkeypatch)
    assert _cache_files() == []


def test_small_files_and_torn_tails_are_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None), b'{"type":"mess']))
    _snapshot(path)
    assert _cache_files() == []  # the scan did not end with a complete line
    monkeypatch.setattr(index_cache, "MIN_BYTES", 1 << 20)
    path.write_bytes(b"\n".join([_header(), _line("a", None)]) + b"\n")
    _snapshot(path)
    assert _cache_files() == []


def test_only_the_most_recently_used_index_files_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_cache, "KEEP", 3)
    for n in range(5):
        path = tmp_path / f"s{n}.jsonl"
        path.write_bytes(b"\n".join([_header(), _line("a", None)]) + b"\n")
        _snapshot(path)
    assert len(_cache_files()) == 3
    assert index_cache.cache_file((tmp_path / "s4.jsonl").resolve()) in _cache_files()
    assert index_cache.cache_file((tmp_path / "s0.jsonl").resolve()) not in _cache_files()


def test_the_index_files_are_held_to_a_total_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(3):
        path = tmp_path / f"s{n}.jsonl"
        _session_with_odd_values(path)
        _snapshot(path)
    assert len(_cache_files()) == 3 and len(_body_files()) == 3
    one = sum(f.stat().st_size for f in [*_cache_files(), *_body_files()]) // 3
    monkeypatch.setattr(index_cache, "KEEP_BYTES", one * 2 + one // 2)
    path = tmp_path / "s3.jsonl"
    _session_with_odd_values(path)
    _snapshot(path)  # its index is written (its bodies at close): the oldest session's files must go
    assert len(_cache_files()) == 3
    assert index_cache.cache_file((tmp_path / "s0.jsonl").resolve()) not in _cache_files()


def test_a_writer_appends_and_the_next_open_reads_its_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([_header(), _line("a", None), _line("b", "a")]) + b"\n")
    _snapshot(path)
    writer = SessionManager.open(path)
    for n in range(5):
        writer.append_message({"role": "user", "content": f"m{n}", "timestamp": n})
    writer.close()
    assert _snapshot(path) == _uncached(path, monkeypatch)


def test_mutated_pi_files_cut_anywhere_index_the_same_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damaged real files, cached up to a random line and then grown to their whole length."""
    sources = [p for p in corpus() if p.stat().st_size < 200_000]
    if not sources:
        pytest.skip("conformance data not found")
    rng = random.Random(20)
    path = tmp_path / "s.jsonl"
    for _ in range(150):
        data, _names = mutate(rng, rng.choice(sources).read_bytes())
        cuts = [i + 1 for i in range(len(data)) if data[i] == 0x0A]
        if not cuts:
            continue
        cut = rng.choice(cuts)
        for cache in _cache_files():
            cache.unlink()
        path.write_bytes(data[:cut])
        try:
            first = _snapshot(path)
        except Exception:  # a damaged header: not what this test is about
            continue
        if any(p["kind"] == "migrated" for p in first["problems"]):
            continue  # an old format gets new ids at every open
        with path.open("ab") as f:
            f.write(data[cut:])
        try:
            got = _snapshot(path)
        except Exception as exc:
            expected_error = None
            try:
                _uncached(path, monkeypatch)
            except Exception as fresh:
                expected_error = type(fresh)
            assert type(exc) is expected_error
            continue
        assert got == _uncached(path, monkeypatch)


def _body_files() -> list[Path]:
    directory = Path(os.environ["SESSIONTREE_CACHE_DIR"]) / "index"
    return sorted(directory.glob("*.bodies")) if directory.is_dir() else []


def _session_with_odd_values(path: Path) -> None:
    """A message msgpack cannot hold as JSON reads it (a lone surrogate), one with an integer beyond 64 bits
    (JSON reads it as a float), among ordinary ones."""
    lines = [_header(), _line("a", None, "plain")]
    lines.append(
        b'{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:00.000Z",'
        b'"message":{"role":"user","content":"lone \\ud800 surrogate","timestamp":1}}'
    )
    lines.append(
        b'{"type":"message","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:00.000Z",'
        b'"message":{"role":"user","content":"big","timestamp":123456789012345678901234567890}}'
    )
    lines += [_line(f"m{n}", "c" if n == 0 else f"m{n - 1}", f"text {n} ünï") for n in range(40)]
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_entries_decoded_before_come_from_the_body_cache_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_reads, "_BODIES_FOR", 1)  # a context of 42 entries is enough to read it
    path = tmp_path / "s.jsonl"
    _session_with_odd_values(path)
    expected = _uncached(path, monkeypatch)
    assert _body_files() == []
    first = _snapshot(path)  # decodes the context from JSON, keeps it at close
    assert len(_body_files()) == 1
    taken: list[int] = []
    original = body_cache.Bodies.take

    def spy(self: body_cache.Bodies, i: int) -> Any:
        found = original(self, i)
        if found is not None:
            taken.append(i)
        return found

    monkeypatch.setattr(body_cache.Bodies, "take", spy)
    second = _snapshot(path)
    assert first == second == expected
    assert len(taken) == 42  # all but the lone surrogate, which msgpack cannot hold
    assert 1 not in taken


def test_the_body_cache_keeps_what_the_file_says_not_what_a_caller_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session_with_odd_values(path)
    manager = SessionManager.open(path, read_only=True)
    for message in manager.build_session_context().messages:
        message["content"] = "changed by a caller"  # callers must not, but the cache must not keep it
    manager.close()
    assert len(_body_files()) == 1
    assert _snapshot(path) == _uncached(path, monkeypatch)


def test_the_body_cache_is_not_used_for_a_changed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session_with_odd_values(path)
    _snapshot(path)
    data = path.read_bytes().replace(b"text 39", b"TEXT 39")
    with path.open("r+b") as f:  # in place, the same size
        f.write(data)
    got = _snapshot(path)
    assert got["context"]["messages"][-1]["content"] == "TEXT 39 ünï"
    assert got == _uncached(path, monkeypatch)


def test_the_body_cache_holds_at_most_max_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(body_cache, "MAX_BYTES", 2_000)
    path = tmp_path / "s.jsonl"
    _session_with_odd_values(path)
    _snapshot(path)
    [bodies] = _body_files()
    assert bodies.stat().st_size < 3_000
    assert _snapshot(path) == _uncached(path, monkeypatch)


def test_closing_a_store_whose_file_shrank_keeps_no_bodies_and_does_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session_with_odd_values(path)
    manager = SessionManager.open(path, read_only=True)
    manager.build_session_context()
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)
    manager.close()
    assert _body_files() == []


def test_the_body_cache_is_read_for_a_bulk_decode_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the body cache costs about as much as decoding a hundred small lines: a few entries (the
    labels at open, one entry) are decoded from JSON, a context of many from the cache."""
    monkeypatch.setattr(jsonl_reads, "_BODIES_FOR", 20)
    path = tmp_path / "s.jsonl"
    lines = [_header(), _line("a", None, "plain")]
    lines += [_line(f"m{n}", "a" if n == 0 else f"m{n - 1}", f"text {n}") for n in range(40)]
    lines.append(
        pi_json.dumps_bytes(
            {
                "type": "label",
                "id": "l",
                "parentId": "m39",
                "timestamp": "t",
                "targetId": "a",
                "label": "start",
            }
        )
    )
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected = _uncached(path, monkeypatch)
    _snapshot(path)
    assert len(_body_files()) == 1
    reads: list[int] = []
    original = body_cache.load

    def spy(*args: Any) -> Any:
        reads.append(1)
        return original(*args)

    monkeypatch.setattr(body_cache, "load", spy)
    manager = SessionManager.open(path, read_only=True)  # the label: decoded from JSON
    assert manager.get_label("a") == "start" and reads == []
    assert manager.get_entry("m3") is not None and reads == []
    context = manager.build_session_context("m30")  # 32 entries (a path no context was kept for)
    assert reads == [1]
    with monkeypatch.context() as m:
        m.setenv(index_cache.ENV, "0")
        fresh = SessionManager.open(path, read_only=True)
        assert context == fresh.build_session_context("m30")
        fresh.close()
    manager.close()
    assert _snapshot(path) == expected


def test_reading_the_cache_starts_no_collection_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache's lists hold every id and timestamp, and its line table a part per chunk scanned: a
    collection pass started while they are built would walk all of them for nothing (no cycles)."""
    import gc

    from sessiontree.storage import _scan

    path = tmp_path / "s.jsonl"
    lines = [_header(), *(_line(f"e{n}", f"e{n - 1}" if n else None) for n in range(2_000))]
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(_scan, "CHUNK_BYTES", 2_000)  # hundreds of table parts
    JsonlStore.open(path, read_only=True).close()  # writes the cache
    assert len(_cache_files()) == 1
    passes: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    threshold = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.enable()
    gc.set_threshold(50)  # any 50 new containers would start a pass
    gc.callbacks.append(count)
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            found = index_cache.lookup(path.resolve(), fd, os.fstat(fd), len(lines[0]) + 1, 2)
        finally:
            os.close(fd)
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*threshold)
        if not was_enabled:
            gc.disable()
    assert found is not None and len(found.result.ids) == 2_000
    assert len(found.result.table._parts) > 100
    assert passes == []
