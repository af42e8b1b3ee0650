"""The store's promise under hostile input: any byte sequence opens (or fails with a ``SessionError`` naming
the file and line) in bounded time, the index points at the lines it was read from, and nothing is written
anywhere the caller did not ask for. One test (or a few) per defect found by the adversarial run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sessiontree import (
    CorruptSessionError,
    SessionError,
    SessionLockedError,
    SessionManager,
    StorageError,
)
from sessiontree.cli import app
from sessiontree.format import pi_json as _json
from sessiontree.session.check import check_session_file
from sessiontree.storage import JsonlStore, _scan, repair_session_file
from sessiontree.tree.views import tree_rows
from tests.builders import assistant, user
from tests.conftest import require_conformance
from tests.deadline import deadline

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def entry(entry_id: str, parent: str | None, text: str = "x", **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
        **extra,
    }


def lines(*objs: Any) -> bytes:
    return b"".join(_json.dumps_bytes(o) + b"\n" for o in (HEADER, *objs))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.fixture(params=["msgspec", "orjson"])
def scanner(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = _scan.use_msgspec(request.param == "msgspec")
    yield request.param
    _scan.use_msgspec(previous)


# -- 1. glued lines --------------------------------------------------------------------------------------
def test_glued_line_plus_blank_line_maps_every_id_to_its_own_bytes(tmp_path: Path, scanner: str) -> None:
    case = require_conformance() / "cases" / "edge-open-no-trailing-newline"
    path = tmp_path / "s.jsonl"
    path.write_bytes((case / "session.jsonl").read_bytes() + b"\n")
    store = JsonlStore.open(path, read_only=True)
    for i in range(len(store)):
        assert _json.loads(store.raw_at(i))["id"] == store.id_at(i)
        assert store.entry_at(i)["id"] == store.id_at(i)
    manager = SessionManager.open(path, read_only=True)
    # pi's JSON.parse rejects the glued line 3 and skips it: the same three entries survive
    assert [e["id"] for e in manager.get_entries()] == ["u1", "65cb71cc", "fd4ad9f6"]
    assert all(manager.get_entry(i)["id"] == i for i in ("u1", "65cb71cc", "fd4ad9f6"))  # type: ignore[index]
    glued = [p for p in manager.problems if p.kind == "bad_line"]
    assert [p.line for p in glued] == [3]
    assert "glued" in glued[0].message
    assert any(p.kind == "bad_line" for p in check_session_file(path))


def test_glued_lines_inside_a_large_chunk(tmp_path: Path, scanner: str) -> None:
    objs = [entry(f"e{i}", f"e{i - 1}" if i else None) for i in range(400)]
    raw = [_json.dumps_bytes(o) for o in objs]
    body = [*raw[:100], raw[100] + raw[101], *raw[102:300], b"", *raw[300:]]
    path = tmp_path / "s.jsonl"
    path.write_bytes(_json.dumps_bytes(HEADER) + b"\n" + b"\n".join(body) + b"\n")
    store = JsonlStore.open(path, read_only=True)
    assert len(store) == 398
    for i in range(len(store)):
        assert store.entry_at(i)["id"] == store.id_at(i)
    kinds = sorted(p.kind for p in store.problems)
    assert "bad_line" in kinds and "blank_lines" in kinds


@pytest.mark.parametrize(
    "body",
    [
        b'{"type":"message","id":"a",\n"parentId":null,"timestamp":"t"}\n',  # one object over two lines
        b'{"type":"message","id":"a","parentId":null}{"type":"message","id":"b","parentId":"a"}\n \n',
        b' {"type":"message","id":"a","parentId":null}\n{"type":"message","id":"b","parentId":"a"} \n',
    ],
)
def test_values_that_do_not_match_lines_never_take_the_fast_path(
    tmp_path: Path, body: bytes, scanner: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_json.dumps_bytes(HEADER) + b"\n" + body)
    store = JsonlStore.open(path, read_only=True)
    for i in range(len(store)):
        assert _json.loads(store.raw_at(i))["id"] == store.id_at(i)


# -- 2. duplicate ids ------------------------------------------------------------------------------------
def test_every_line_twice_gives_a_linear_tree_view_and_cli(tmp_path: Path) -> None:
    chain = [entry(f"n{i:02d}", f"n{i - 1:02d}" if i else None) for i in range(30)]
    path = tmp_path / "twice.jsonl"
    path.write_bytes(lines(*[o for e in chain for o in (e, e)]))
    assert len(path.read_bytes().splitlines()) == 61
    with deadline(20):
        manager = SessionManager.open(path, read_only=True)
        roots = manager.get_tree()
        rows = tree_rows(roots)
        assert [r.entry["id"] for r in rows] == [e["id"] for e in chain]
        as_json = json.dumps(roots[0].to_dict())
        assert as_json.count('"entry"') == 30
        result = CliRunner().invoke(app, ["tree", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert result.output.count('"n29"') >= 1
    assert sum(p.kind == "duplicate_id" for p in manager.problems) == 30


# -- 3. deep nesting -------------------------------------------------------------------------------------
def _nested(depth: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return entry("deep", "a", details=value)


@pytest.mark.parametrize("depth", [990, 1024, 1100, 20_000])
@pytest.mark.parametrize("read_only", [True, False])
def test_deep_nesting_is_a_bad_line_or_an_entry_never_a_crash(
    tmp_path: Path, depth: int, read_only: bool, scanner: str
) -> None:
    path = tmp_path / "deep.jsonl"
    deep_line = _json.dumps_bytes(_nested(depth))
    path.write_bytes(lines(entry("a", None)) + deep_line + b"\n" + _json.dumps_bytes(entry("b", "a")) + b"\n")
    manager = SessionManager.open(path, read_only=read_only)
    ids = [e["id"] for e in manager.get_entries()]
    if depth <= _json.MAX_DEPTH - 2:  # the entry object and its details key add two levels
        assert ids == ["a", "deep", "b"]
        assert manager.get_entry("deep")["details"] is not None  # type: ignore[index]
    else:
        assert ids == ["a", "b"]
        assert [p.line for p in manager.problems if p.kind == "bad_line"] == [3]
    manager.build_session_context()
    manager.get_tree()[0].to_dict()
    if not read_only:
        manager.append_message(user("after"))
        other = manager.create_branched_session(manager.get_leaf_id() or "")
        assert other is not None and Path(other).exists()
    manager.close()
    check_session_file(path)
    report = repair_session_file(path, new_header_factory=lambda: HEADER)
    assert report.problems is not None


def test_a_deeply_nested_value_can_be_written_and_read_back(tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path / "s")
    value: Any = 1
    for _ in range(5000):
        value = {"k": value}
    manager.append_custom_entry("deep", value)
    assert len(_json.dumps(value)) > 5000 * 6
    manager.close()


# -- 4. header versions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ['"abc"', "null", '"3"', "true", "{}"])
def test_an_invalid_header_version_is_corrupt_and_the_file_untouched(tmp_path: Path, version: str) -> None:
    path = tmp_path / "v.jsonl"
    path.write_bytes(
        f'{{"type":"session","version":{version},"id":"s","timestamp":"t","cwd":"/"}}\n'.encode()
        + _json.dumps_bytes(entry("a", None))
        + b"\n"
    )
    before = snapshot(tmp_path)
    for _ in range(3):
        for read_only in (False, True):
            with pytest.raises(CorruptSessionError, match="unsupported session version") as info:
                SessionManager.open(path, read_only=read_only)
            assert info.value.line == 1 and str(path) in str(info.value)
    assert snapshot(tmp_path) == before  # no rewrite, no .vx.bak
    report = repair_session_file(path, new_header_factory=lambda: HEADER)
    assert report.recovered_entries == 1
    assert [e["id"] for e in SessionManager.open(path, read_only=True).get_entries()] == ["a"]


def test_a_400_digit_version_opens_as_a_current_session(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    header = '{"type":"session","version":' + "9" * 400 + ',"id":"s","timestamp":"t","cwd":"/"}\n'
    path.write_bytes(header.encode() + _json.dumps_bytes(entry("a", None)) + b"\n")
    before = snapshot(tmp_path)
    manager = SessionManager.open(path)
    assert [e["id"] for e in manager.get_entries()] == ["a"]
    manager.close()
    assert snapshot(tmp_path) == before


# -- 5. timestamps ---------------------------------------------------------------------------------------
@pytest.fixture
def east_of_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_odd_timestamps_never_break_the_tree_the_context_or_the_listing(
    tmp_path: Path, east_of_utc: None
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    stamps = ["0001-01-01T00:00:00", "9999-12-31T23:59:59", "2025-01-01T00:00:00.000Z"]
    message_stamps: list[Any] = [1e16, "1e400", int("9" * 400)]
    for n, (stamp, message_stamp) in enumerate(zip(stamps, message_stamps, strict=True)):
        objs = [
            {**entry("r", None), "timestamp": stamp},
            {**entry("a", "r"), "timestamp": stamps[(n + 1) % 3]},
            {**entry("b", "r"), "timestamp": stamps[(n + 2) % 3]},
        ]
        body = lines(*objs).decode().replace('"timestamp":1}', '"timestamp":MS}', 1)
        body = body.replace("MS", message_stamp if isinstance(message_stamp, str) else repr(message_stamp))
        (sessions / f"s{n}.jsonl").write_text(body)
        manager = SessionManager.open(sessions / f"s{n}.jsonl", read_only=True)
        assert {c.id for c in manager.get_tree()[0].children} == {"a", "b"}
        manager.build_session_context()
        manager.close()
    (sessions / "good.jsonl").write_bytes(lines(entry("x", None)))
    infos = SessionManager.list_all(sessions)
    assert sorted(i.path.name for i in infos) == ["good.jsonl", "s0.jsonl", "s1.jsonl", "s2.jsonl"]
    for info in infos:
        info.to_dict()


# -- 8. read-only stays read-only ------------------------------------------------------------------------
def test_a_read_only_manager_opens_the_next_file_read_only(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    first.write_bytes(lines(entry("a", None)))
    v1 = tmp_path / "old.jsonl"
    v1.write_bytes(
        b'{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}\n'
    )
    before = snapshot(tmp_path)
    manager = SessionManager.open(first, read_only=True)
    manager.set_session_file(v1)
    assert len(manager.get_entries()) == 1  # migrated in memory only
    with pytest.raises(SessionError, match="read-only"):
        manager.append_message(user("no"))
    with pytest.raises(SessionError):
        manager.set_session_file(tmp_path / "missing.jsonl")
    assert snapshot(tmp_path) == before


# -- 9. reads beside an append in the same process -------------------------------------------------------
def test_reads_while_another_thread_appends_see_a_consistent_snapshot(tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path / "s")
    manager.append_message(user("root"))
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                roots = manager.get_tree()
                manager.get_branch()
                manager.get_children(roots[0].id)
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows within 3,000 appends
    try:
        for thread in threads:
            thread.start()
        for i in range(3000):
            if i % 7 == 0:
                manager.branch(manager.get_entries()[i // 2]["id"])
            manager.append_message(user(f"m{i}"))
    finally:
        done.set()
        for thread in threads:
            thread.join()
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(manager.get_entries()) == 3001
    manager.close()


# -- 10. many processes race for one session -------------------------------------------------------------
def _open_and_write(path: str) -> SessionManager:
    manager = SessionManager.open(path)
    manager.append_message(user(f"from {os.getpid()}"))
    return manager


def _create_and_write(directory: str) -> SessionManager:
    manager = SessionManager.create(directory, directory, id="same", clock=lambda: 1_735_689_600_000)
    manager.append_message(user(f"from {os.getpid()}"))
    return manager


def _race(how: str, where: str, start: Any, release: Any, results: Any) -> None:
    start.wait()
    try:
        manager = (_open_and_write if how == "open" else _create_and_write)(where)
        results.put("writer")
        release.wait(60)  # hold the writer role until every other process has tried
        manager.close()
    except SessionLockedError:
        results.put("locked")
    except BaseException as exc:  # reported to the parent
        results.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("how", ["open", "create"])
def test_every_loser_of_a_race_to_create_gets_session_locked_error(tmp_path: Path, how: str) -> None:
    ctx = multiprocessing.get_context("fork")
    for n in range(3):
        directory = tmp_path / f"round{n}"
        directory.mkdir()
        where = str(directory / "s.jsonl") if how == "open" else str(directory)
        start, release, results = ctx.Event(), ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(how, where, start, release, results)) for _ in range(8)]
        for proc in procs:
            proc.start()
        start.set()
        outcomes = sorted(results.get(timeout=60) for _ in procs)
        release.set()
        for proc in procs:
            proc.join(30)
        assert outcomes == ["locked"] * 7 + ["writer"], outcomes
        (session,) = directory.iterdir()
        written = SessionManager.open(session, read_only=True)
        assert len(written.get_entries()) == 1 and written.problems == []


def test_a_writer_that_took_the_lock_after_another_appended_reports_its_stale_leaf(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(entry("a", None)))
    for policy, expected_parent in (("branch", "a"), ("latest", None)):
        shutil.copyfile(path, tmp_path / f"{policy}.jsonl")
        target = tmp_path / f"{policy}.jsonl"
        mine = SessionManager.open(target, stale_leaf=policy)
        other = SessionManager.open(target)
        other_id = other.append_message(assistant("other writer"))
        other.close()
        new_id = mine.append_message(user("mine"))
        parent = mine.get_entry(new_id)["parentId"]  # type: ignore[index]
        assert parent == (expected_parent or other_id)
        (note,) = [p for p in mine.problems if p.kind == "stale_leaf"]
        assert note.is_note and ("branches from" if policy == "branch" else "continuing from") in note.message
        mine.close()
    with pytest.raises(ValueError):
        SessionManager.open(path, stale_leaf="sideways")


# -- 11. FIFOs, links, foreign directories, ids ----------------------------------------------------------
def test_a_fifo_named_like_a_session_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "ok.jsonl").write_bytes(lines(entry("a", None)))
    with deadline(10):
        for read_only in (True, False):
            with pytest.raises(StorageError, match="not a regular file"):
                SessionManager.open(fifo, read_only=read_only)
        with pytest.raises(StorageError, match="FIFO"):
            check_session_file(fifo)
        with pytest.raises(StorageError):
            repair_session_file(fifo, new_header_factory=lambda: HEADER)
        assert [i.path.name for i in SessionManager.list_all(tmp_path)] == ["ok.jsonl"]
        assert CliRunner().invoke(app, ["check", str(fifo)]).exit_code != 0


def test_a_dangling_symlink_never_creates_its_target(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "target.jsonl"
    target.parent.mkdir()
    link = tmp_path / "s.jsonl"
    link.symlink_to(target)
    with pytest.raises(StorageError, match="symbolic link"):
        SessionManager.open(link)
    with pytest.raises(StorageError, match="symbolic link"):
        JsonlStore.open(link, missing_ok=True)
    assert not target.exists() and link.is_symlink()


def test_a_symlinked_session_is_resolved_once_for_every_write(tmp_path: Path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "t.jsonl"
    torn = lines(entry("a", None)) + b'{"type":"message","id":"b","par'
    target.write_bytes(torn)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    manager = SessionManager.open(link)
    assert any(p.kind == "symlink" and str(target) in p.message for p in manager.problems)
    assert manager.get_session_file() == str(target)
    manager.append_message(user("after"))
    manager.close()
    assert (real_dir / "t.jsonl.torn-1").exists() and not (tmp_path / "link.jsonl.torn-1").exists()
    # a rewrite-type repair replaces the target, and the link stays a link
    target.write_bytes(lines(entry("a", None)) + b"garbage\n" + _json.dumps_bytes(entry("b", "a")) + b"\n")
    report = repair_session_file(link, new_header_factory=lambda: HEADER)
    assert report.changed and link.is_symlink() and os.readlink(link) == str(target)
    assert [p.parent for p in report.moved_aside] == [real_dir]
    assert [e["id"] for e in SessionManager.open(link, read_only=True).get_entries()] == ["a", "b"]
    # a migration rewrites the target too
    target.write_bytes(
        b'{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}\n'
    )
    SessionManager.open(link).close()
    assert link.is_symlink() and (real_dir / "t.jsonl.v1.bak").exists()


def test_a_world_writable_directory_is_refused_for_writes(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(StorageError, match="writable by every user"):
        SessionManager.create(str(tmp_path), shared).append_message(user("x"))
    (shared / "s.jsonl").write_bytes(lines(entry("a", None)))
    assert len(SessionManager.open(shared / "s.jsonl", read_only=True).get_entries()) == 1  # reading is fine
    with pytest.raises(StorageError, match="refusing to write"):
        SessionManager.open(shared / "s.jsonl").append_message(user("x"))
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)  # like /tmp: others cannot replace our files
    manager = SessionManager.create(str(tmp_path), sticky)
    manager.append_message(user("x"))
    manager.close()
    if os.geteuid() == 0:  # another user's group-writable directory
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        os.chown(foreign, 4242, 4242)
        os.chmod(foreign, 0o775)
        with pytest.raises(StorageError, match="another user"):
            SessionManager.create(str(tmp_path), foreign).append_message(user("x"))


@pytest.mark.parametrize("bad", ["../../../x", "a/b", "", ".hidden", "x" * 5 + "/"])
def test_session_id_factory_output_is_validated(tmp_path: Path, bad: str) -> None:
    sessions = tmp_path / "a" / "b" / "c"
    with pytest.raises(ValueError, match="Session id"):
        SessionManager.create(str(tmp_path), sessions, session_id_factory=lambda: bad)
    good = SessionManager.create(str(tmp_path), sessions)
    good.session_id_factory = lambda: bad
    good.append_message(user("x"))
    with pytest.raises(ValueError, match="Session id"):
        good.new_session()
    with pytest.raises(ValueError, match="Session id"):
        good.create_branched_session(good.get_leaf_id() or "")
    good.close()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [Path(good.store.path or "").name]


# -- 12. a torn first write ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "partial", [b'{"type":"sess', b'{"type":"session","version":3,"id":"x","timest', b"{"]
)
def test_a_file_holding_part_of_a_header_is_a_torn_empty_session(tmp_path: Path, partial: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(partial)
    manager = SessionManager.open(path)
    assert manager.get_entries() == [] and [p.kind for p in manager.problems] == ["torn_tail"]
    manager.append_message(user("first"))
    manager.close()
    assert (tmp_path / "s.jsonl.torn-1").read_bytes() == partial
    reopened = SessionManager.open(path, read_only=True)
    assert [e["message"]["content"] for e in reopened.get_entries()] == ["first"]
    assert reopened.problems == []
