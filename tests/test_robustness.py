"""Crashes, concurrent writers and damaged files: nothing complete is lost, nothing hangs, nothing is overwritten."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import CorruptSessionError, SessionLockedError, StorageError
from sessiontree.format import pi_json as _json
from sessiontree.session.check import check_session_file
from sessiontree.storage import JsonlStore, repair_session_file
from sessiontree.storage.lock import is_locked
from sessiontree.tree.tree_index import TreeIndex

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}


def msg(entry_id: str, parent: str | None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "x" * 40, "timestamp": 1},
    }


def write(path: Path, *objs: dict[str, Any]) -> bytes:
    data = b"".join(_json.dumps_bytes(o) + b"\n" for o in (HEADER, *objs))
    path.write_bytes(data)
    return data


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=60
    )


def test_a_second_process_is_locked_out(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    store = JsonlStore.open(path)
    store.append(msg("b", "a"))
    assert is_locked(path)
    code = """
        import sys
        from sessiontree.errors import SessionLockedError
        from sessiontree.storage import JsonlStore
        store = JsonlStore.open(sys.argv[1])
        try:
            store.append({"type": "message", "id": "z", "parentId": "a", "timestamp": "t"})
        except SessionLockedError as exc:
            print("LOCKED", exc)
        else:
            print("WROTE")
    """
    result = run_python(code, str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("LOCKED") and str(path) in result.stdout
    store.close()
    assert not is_locked(path)
    result = run_python(code, str(path))
    assert result.stdout.startswith("WROTE"), result.stderr


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    code = """
        import sys, time
        from sessiontree.storage import JsonlStore
        store = JsonlStore.open(sys.argv[1])
        store.append({"type": "message", "id": "b", "parentId": "a", "timestamp": "t"})
        print("READY", flush=True)
        time.sleep(60)
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        other = JsonlStore.open(path)
        with pytest.raises(SessionLockedError):
            other.append(msg("c", "b"))
    finally:
        proc.kill()
        proc.wait()
    other.append(msg("c", "b"))
    other.close()
    assert [JsonlStore.open(path).id_at(i) for i in range(3)] == ["a", "b", "c"]


def test_a_writer_killed_mid_stream_loses_no_complete_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    code = """
        import sys
        from sessiontree.storage import JsonlStore
        header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}
        store = JsonlStore.create(sys.argv[1], header)
        parent = None
        i = 0
        while True:
            entry_id = f"e{i}"
            store.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t",
                          "message": {"role": "user", "content": "y" * (i % 900), "timestamp": i}})
            parent = entry_id
            i += 1
            if i == 200:
                print("GO", flush=True)
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "GO"
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    data = path.read_bytes()
    complete = data.count(b"\n") - 1  # header excluded
    store = JsonlStore.open(path)
    assert complete >= 200
    assert len(store) == complete
    assert [store.id_at(i) for i in range(len(store))] == [f"e{i}" for i in range(complete)]
    assert {p.kind for p in store.problems} <= {"torn_tail"}
    store.append(msg("after", store.id_at(len(store) - 1)))
    store.close()
    again = JsonlStore.open(path, read_only=True)
    assert again.problems == [] and len(again) == complete + 1
    assert TreeIndex(again).path_to_root(len(again) - 1) == list(range(complete + 1))


def test_every_truncation_point_opens_with_all_complete_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    full = write(
        path,
        msg("a", None),
        msg("b", "a"),
        {"type": "custom", "customType": "c", "id": "c", "parentId": "b", "timestamp": "t"},
    )
    header_end = full.index(b"\n") + 1
    ends = [i + 1 for i, byte in enumerate(full) if byte == 0x0A]
    for cut in range(header_end, len(full) + 1):
        path.write_bytes(full[:cut])
        store = JsonlStore.open(path, read_only=True)
        complete = sum(1 for end in ends[1:] if end <= cut)
        at_line_end = cut + 1 in ends  # everything but the final newline: a complete entry
        assert len(store) == complete + (1 if at_line_end else 0), cut
        tail_kinds = {p.kind for p in store.problems}
        if cut in ends:
            assert tail_kinds == set()
        elif at_line_end:
            assert tail_kinds == {"missing_newline"}
        else:
            assert tail_kinds == {"torn_tail"}


def test_damaged_header_is_repaired_into_a_new_file_and_the_original_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = write(path, msg("a", None), msg("b", "a"))
    damaged = b'{"type":"sess' + good[good.index(b"\n") :] + b"{torn"
    path.write_bytes(damaged)
    problems = check_session_file(path)
    assert [p.kind for p in problems] == ["bad_header"]
    assert path.read_bytes() == damaged
    new_header = {**HEADER, "id": "fresh"}
    report = repair_session_file(path, new_header_factory=lambda: new_header)
    assert report.changed and report.recovered_entries == 2 and report.dropped_lines == [1, 4]
    assert report.moved_aside == [tmp_path / "s.jsonl.corrupt-1"]
    assert (tmp_path / "s.jsonl.corrupt-1").read_bytes() == damaged
    store = JsonlStore.open(path)
    assert store.header == new_header and [store.id_at(i) for i in range(2)] == ["a", "b"]
    assert store.problems == []
    assert report.to_dict()["movedAside"] == [str(tmp_path / "s.jsonl.corrupt-1")]


def test_repair_of_bad_middle_lines_torn_tails_and_missing_newlines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = write(path, msg("a", None))
    path.write_bytes(good + b"garbage\n" + _json.dumps_bytes(msg("b", "a")) + b"\n")
    report = repair_session_file(path, new_header_factory=lambda: HEADER)
    assert report.dropped_lines == [3] and (tmp_path / "s.jsonl.corrupt-1").exists()
    assert path.read_bytes() == good + _json.dumps_bytes(msg("b", "a")) + b"\n"

    clean = path.read_bytes()
    path.write_bytes(clean + b'{"type":"mess')
    report = repair_session_file(path, new_header_factory=lambda: HEADER)
    assert report.moved_aside == [tmp_path / "s.jsonl.torn-1"] and path.read_bytes() == clean

    path.write_bytes(clean[:-1])
    report = repair_session_file(path, new_header_factory=lambda: HEADER)
    assert report.actions == ["wrote the missing final newline"] and path.read_bytes() == clean

    report = repair_session_file(path, new_header_factory=lambda: HEADER)
    assert not report.changed and report.problems == []


def test_repair_refuses_a_locked_file_and_migrates_old_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None))
    holder = JsonlStore.open(path)
    holder.append(msg("b", "a"))
    with pytest.raises(SessionLockedError):
        repair_session_file(path, new_header_factory=lambda: HEADER)
    holder.close()
    old = tmp_path / "old.jsonl"
    old.write_bytes(b'{"type":"session","id":"s","timestamp":"t","cwd":"/"}\n{"type":"message","n":1}\n')
    report = repair_session_file(old, new_header_factory=lambda: HEADER)
    assert report.actions[0].startswith("migrated to version 3")
    assert (tmp_path / "old.jsonl.v1.bak").exists()
    assert JsonlStore.open(old).header["version"] == 3  # type: ignore[index]


def test_check_reports_cycles_duplicates_and_dangling_parents(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None), msg("x", "y"), msg("y", "x"), msg("s", "s"), msg("a", "gone"))
    kinds = sorted(p.kind for p in check_session_file(path))
    assert kinds == ["cycle", "cycle", "dangling_parent", "duplicate_id"]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"{}\n")
    with pytest.raises(CorruptSessionError):
        JsonlStore.open(bad)
    assert [p.kind for p in check_session_file(bad)] == ["bad_header"]


def test_a_file_replaced_or_shrunk_under_a_reader_is_an_error_not_garbage(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, msg("a", None), msg("b", "a"))
    store = JsonlStore.open(path, read_only=True)
    store.close()
    replacement = tmp_path / "other.jsonl"
    write(replacement, msg("x", None))
    os.replace(replacement, path)
    with pytest.raises(StorageError, match="replaced"):
        store.raw_at(1)
    shrinking = tmp_path / "t.jsonl"
    write(shrinking, msg("a", None), msg("b", "a"))
    reader = JsonlStore.open(shrinking, read_only=True)
    with open(shrinking, "r+b") as handle:
        handle.truncate(len(_json.dumps_bytes(HEADER)) + 6)
    with pytest.raises(StorageError, match="shrank"):
        reader.entry_at(1)
    reader.close()


def test_a_pending_header_survives_a_blank_file_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    store = JsonlStore.open(path)
    store.set_header(HEADER)
    path.write_bytes(b"\n\n")
    store.append(msg("a", None))
    store.close()
    assert path.read_bytes() == _json.dumps_bytes(HEADER) + b"\n" + _json.dumps_bytes(msg("a", None)) + b"\n"
