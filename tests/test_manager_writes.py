"""Writing through the manager: one writer per file, read-only opens, close(), durability, persisted leaves,
active tools. All on real files in ``tmp_path`` (SPEC A1, A3; pi's harness session/storage tests for leaves).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionError, SessionLockedError, SessionManager
from sessiontree.format.pi_json import loads
from sessiontree.storage import lock
from tests.builders import assistant

HEADER = '{"type":"session","version":3,"id":"sess-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}\n'


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def message_line(entry_id: str, parent: str | None, text: str = "x") -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}\n'
    )


def lines_of(path: Path | str) -> list[dict[str, Any]]:
    return [loads(line) for line in Path(path).read_bytes().split(b"\n") if line]


def new_session(tmp_path: Path, **options: Any) -> tuple[SessionManager, Path]:
    m = SessionManager.create(str(tmp_path / "proj"), tmp_path / "sessions", **options)
    m.append_message(user("first"))
    path = m.get_session_file()
    assert path is not None
    return m, Path(path)


# -- one writer per file ----------------------------------------------------------------------------------
def test_a_second_writer_in_the_same_process_gets_session_locked_error(tmp_path: Path) -> None:
    first, path = new_session(tmp_path)
    second = SessionManager.open(path)
    leaf_before = second.get_leaf_id()
    bytes_before = path.read_bytes()
    with pytest.raises(SessionLockedError) as info:
        second.append_message(user("intruder"))
    assert info.value.kind == "locked"
    assert str(path) in str(info.value)
    # the refused append changed nothing, on disk or in the second manager
    assert path.read_bytes() == bytes_before
    assert second.get_leaf_id() == leaf_before
    assert len(second.get_entries()) == 1
    for move in (
        lambda: second.append_label_change(leaf_before or "", "x"),
        lambda: second.append_session_info("n"),
    ):
        with pytest.raises(SessionLockedError):
            move()
    assert second.get_label(leaf_before or "") is None and second.get_session_name() is None
    first.append_message(assistant("the owner still writes"))
    first.close()
    second.close()


def test_close_releases_the_lock(tmp_path: Path) -> None:
    first, path = new_session(tmp_path)
    assert lock.is_locked(path)
    first.close()
    assert not lock.is_locked(path)
    second = SessionManager.open(path)
    added = second.append_message(assistant("now mine"))
    assert [o.get("id") for o in lines_of(path)][-1] == added
    second.close()


def test_the_context_manager_closes(tmp_path: Path) -> None:
    with SessionManager.create(str(tmp_path), tmp_path / "sessions") as m:
        m.append_message(user("q"))
        path = m.get_session_file()
        assert path is not None and lock.is_locked(path)
    assert not lock.is_locked(path)


def test_writing_after_close_raises(tmp_path: Path) -> None:
    m, path = new_session(tmp_path)
    m.close()
    before = path.read_bytes()
    with pytest.raises(SessionError) as info:
        m.append_message(user("late"))
    assert info.value.kind == "invalid_state"
    assert path.read_bytes() == before
    m.close()  # closing twice is harmless


def test_a_writer_that_waited_sees_the_other_writers_labels_and_name(tmp_path: Path) -> None:
    first, path = new_session(tmp_path)
    root = first.get_leaf_id()
    assert root is not None
    second = SessionManager.open(path)
    first.append_label_change(root, "from-first")
    first.append_session_info("named by first")
    first.close()
    added = second.append_message(user("second writes after first closed"))
    # the file changed on disk after `second` read it: it was indexed again before the write
    assert "changed_on_disk" in [p.kind for p in second.problems]
    assert len(second.get_entries()) == 4
    assert second.get_label(root) == "from-first"
    assert second.get_session_name() == "named by first"
    assert second.get_entry(added)["parentId"] == root  # type: ignore[index]
    second.close()
    reopened = SessionManager.open(path, read_only=True)
    assert (reopened.get_label(root), reopened.get_session_name()) == ("from-first", "named by first")


# -- read-only opens --------------------------------------------------------------------------------------
def _snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.iterdir()}


@pytest.mark.parametrize(
    "content",
    [
        HEADER + message_line("a", None) + message_line("b", "a"),
        HEADER + message_line("a", None) + message_line("b", "a")[:-25],  # torn tail
        HEADER + message_line("a", None).rstrip("\n"),  # no final newline
        HEADER + message_line("a", None) + "garbage\n" + message_line("b", "a"),  # bad middle line
        '{"type":"session","id":"v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}\n',
        "",
    ],
    ids=["healthy", "torn-tail", "no-final-newline", "bad-middle-line", "v1", "empty"],
)
def test_read_only_open_never_locks_or_writes(tmp_path: Path, content: str) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    path = directory / "s.jsonl"
    path.write_text(content)
    os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    before = _snapshot(directory)
    m = SessionManager.open(path, read_only=True)
    assert not lock.is_locked(path)
    m.build_session_context()
    m.get_tree()
    assert isinstance(m.problems, list)
    leaf = m.get_leaf_id()
    with pytest.raises(SessionError) as info:
        m.append_message(user("nope"))
    assert info.value.kind == "read_only"
    assert m.get_leaf_id() == leaf
    if leaf is not None:
        m.branch(leaf)  # navigation is in memory only
    m.reset_leaf()
    m.sync()
    m.close()
    assert _snapshot(directory) == before


def test_a_read_only_manager_does_not_block_a_writer(tmp_path: Path) -> None:
    writer, path = new_session(tmp_path)
    writer.close()
    reader = SessionManager.open(path, read_only=True)
    other = SessionManager.open(path)
    other.append_message(assistant("written while a reader is open"))
    other.close()
    assert len(lines_of(path)) == 3
    assert len(reader.get_entries()) == 1  # the reader keeps the view it opened
    reader.close()


# -- durability -------------------------------------------------------------------------------------------
def _count_file_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the inode of every fsync'ed descriptor."""
    inodes: list[int] = []
    real = os.fsync

    def recording(fd: int) -> None:
        inodes.append(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return inodes


@pytest.mark.parametrize(
    ("durability", "after_appends", "after_sync", "after_second_sync"),
    # the first entry creates the file, fsynced before it appears (so a new session is never lost)
    [("flush", 1, 1, 1), ("fsync", 3, 3, 3), ("batch", 1, 2, 2)],
)
def test_durability_modes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    durability: Any,
    after_appends: int,
    after_sync: int,
    after_second_sync: int,
) -> None:
    inodes = _count_file_fsyncs(monkeypatch)
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions", durability=durability)
    m.append_message(user("1"))  # creates the file
    m.append_message(assistant("2"))
    m.append_message(user("3"))
    path = m.get_session_file()
    assert path is not None
    inode = os.stat(path).st_ino
    file_fsyncs = lambda: inodes.count(inode)  # noqa: E731
    assert file_fsyncs() == after_appends
    m.sync()
    assert file_fsyncs() == after_sync
    m.sync()  # nothing pending
    assert file_fsyncs() == after_second_sync
    m.close()
    assert len(lines_of(path)) == 4


def test_batch_mode_fsyncs_pending_writes_on_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inodes = _count_file_fsyncs(monkeypatch)
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions", durability="batch")
    m.append_message(user("1"))
    path = m.get_session_file()
    assert path is not None
    assert inodes.count(os.stat(path).st_ino) == 1  # the file's creation
    m.append_message(user("2"))
    assert inodes.count(os.stat(path).st_ino) == 1
    m.close()
    assert inodes.count(os.stat(path).st_ino) == 2


def test_durability_carries_over_to_branched_and_new_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions", durability="fsync")
    m.append_message(user("1"))
    a = m.append_message(assistant("2"))
    m.create_branched_session(a)
    inodes = _count_file_fsyncs(monkeypatch)
    m.append_message(user("3"))
    branched = m.get_session_file()
    assert branched is not None and inodes.count(os.stat(branched).st_ino) == 1
    m.new_session()
    m.append_message(user("4"))
    fresh = m.get_session_file()
    assert fresh is not None and inodes.count(os.stat(fresh).st_ino) == 1
    m.close()


def test_unknown_durability_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER)
    with pytest.raises(ValueError, match="durability"):
        SessionManager.open(path, durability="sometimes")
    with pytest.raises(TypeError, match="unexpected option"):
        SessionManager.open(path, durabilty="fsync")


# -- persisted leaves (harness format, opt-in) ------------------------------------------------------------
def test_persist_leaf_writes_leaf_entries_that_a_reopen_honours(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions", persist_leaf=True)
    u1 = m.append_message(user("1"))
    a1 = m.append_message(assistant("1"))
    m.append_message(user("2"))
    m.branch(u1)
    path = m.get_session_file()
    assert path is not None
    last = lines_of(path)[-1]
    assert {k: last[k] for k in ("type", "targetId")} == {"type": "leaf", "targetId": u1}
    assert list(last) == ["type", "id", "parentId", "timestamp", "targetId"]
    m.close()
    reopened = SessionManager.open(path)
    assert reopened.get_leaf_id() == u1
    assert [e["id"] for e in reopened.get_branch()] == [u1]
    assert [x["role"] for x in reopened.build_session_context().messages] == ["user"]
    # new entries hang under the target, never under the leaf entry
    new = reopened.append_message(assistant("branch"))
    assert reopened.get_entry(new)["parentId"] == u1  # type: ignore[index]
    assert [e["id"] for e in reopened.get_branch()] == [u1, new]
    assert a1 in [c["id"] for c in reopened.get_children(u1)]
    reopened.close()


def test_persist_leaf_records_a_reset_to_before_the_first_entry(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions", persist_leaf=True)
    u1 = m.append_message(user("1"))
    m.reset_leaf()
    path = m.get_session_file()
    assert path is not None
    last = lines_of(path)[-1]
    assert (last["type"], last["parentId"], last["targetId"]) == ("leaf", u1, None)
    m.close()
    reopened = SessionManager.open(path, read_only=True)
    assert reopened.get_leaf_id() is None
    assert reopened.build_session_context().messages == []


def test_persist_leaf_writes_nothing_when_the_leaf_does_not_move(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions", persist_leaf=True)
    m.append_message(user("1"))
    a1 = m.append_message(assistant("1"))
    m.branch(a1)
    path = m.get_session_file()
    assert path is not None
    assert [o["type"] for o in lines_of(path)] == ["session", "message", "message"]
    m.close()


def test_without_persist_leaf_no_leaf_entries_are_written(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    u1 = m.append_message(user("1"))
    a1 = m.append_message(assistant("1"))
    m.branch(u1)
    m.reset_leaf()
    m.branch(u1)
    path = m.get_session_file()
    assert path is not None
    assert [o["type"] for o in lines_of(path)] == ["session", "message", "message"]
    m.close()
    assert SessionManager.open(path, read_only=True).get_leaf_id() == a1


def test_leaf_entries_written_by_the_harness_are_honoured_without_persist_leaf(tmp_path: Path) -> None:
    path = tmp_path / "harness.jsonl"
    path.write_text(
        HEADER
        + message_line("u1", None)
        + message_line("a1", "u1")
        + message_line("u2", "a1")
        + '{"type":"leaf","id":"l1","parentId":"u2","timestamp":"2025-01-01T00:00:02.000Z","targetId":"u1"}\n'
    )
    m = SessionManager.open(path, read_only=True)
    assert m.get_leaf_id() == "u1"
    assert [e["id"] for e in m.get_branch()] == ["u1"]


# -- active tools -----------------------------------------------------------------------------------------
def test_active_tools_change_gives_active_tool_names_in_the_context(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    u1 = m.append_message(user("1"))
    assert m.build_session_context().active_tool_names is None
    assert "activeToolNames" not in m.build_session_context().to_dict()
    change = m.append_active_tools_change(["read", "bash"])
    m.append_message(assistant("1"))
    m.append_active_tools_change(["search"])
    m.append_message(user("2"))
    assert m.build_session_context().active_tool_names == ["search"]
    assert m.build_session_context().to_dict()["activeToolNames"] == ["search"]
    assert m.build_session_context(change).active_tool_names == ["read", "bash"]
    assert m.build_session_context(u1).active_tool_names is None
    # an active_tools_change is a tree node that produces no message
    assert [x["role"] for x in m.build_session_context().messages] == ["user", "assistant", "user"]
    entry = m.get_entry(change)
    assert entry is not None and entry["activeToolNames"] == ["read", "bash"] and entry["parentId"] == u1
    path = m.get_session_file()
    assert path is not None
    m.close()
    assert SessionManager.open(path, read_only=True).build_session_context().active_tool_names == ["search"]


def test_active_tools_list_is_copied(tmp_path: Path) -> None:
    m = SessionManager.in_memory(str(tmp_path))
    names = ["read"]
    m.append_active_tools_change(names)
    names.append("write")
    assert m.build_session_context().active_tool_names == ["read"]


# -- problems are logged -----------------------------------------------------------------------------------
def test_load_problems_are_logged_as_warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER + message_line("a", None) + "garbage\n" + message_line("b", "a"))
    with caplog.at_level(logging.WARNING, logger="sessiontree"):
        m = SessionManager.open(path, read_only=True)
    warnings = [
        r for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("sessiontree")
    ]
    assert [r.getMessage() for r in warnings] == [p.message for p in m.problems]
    assert "line 3" in warnings[0].getMessage()


# -- one process, many threads ----------------------------------------------------------------------------
def test_appends_from_many_threads_are_serialized(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(50):
                m.append_message(user(f"{worker}-{i}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    entries = m.get_entries()
    assert len(entries) == 400
    assert len({e["id"] for e in entries}) == 400
    # one linear chain: every entry hangs under the one appended just before it
    assert all(entries[i]["parentId"] == entries[i - 1]["id"] for i in range(1, len(entries)))
    path = m.get_session_file()
    assert path is not None
    m.close()
    assert [o["id"] for o in lines_of(path)[1:]] == [e["id"] for e in entries]


def test_read_only_manager_refuses_to_create_sessions(tmp_path: Path) -> None:
    """A read-only manager writes nothing anywhere: no branched copy, no new session file."""
    manager = SessionManager.create("/proj", tmp_path)
    first = manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    reader = SessionManager.open(path, read_only=True)
    with pytest.raises(SessionError) as branched:
        reader.create_branched_session(first)
    assert branched.value.kind == "read_only"
    with pytest.raises(SessionError):
        reader.new_session()
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(path).name]
    reader.close()


def test_rejected_custom_id_leaves_no_directory(tmp_path: Path) -> None:
    target = tmp_path / "not-created"
    with pytest.raises(ValueError):
        SessionManager.create("/proj", target, id="bad id!")
    assert not target.exists()


def test_writes_inside_a_transaction_are_not_interleaved_by_other_threads(tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), tmp_path)
    inside = threading.Event()
    other_done = threading.Event()

    def other() -> None:
        inside.wait()
        sm.append_message(user("other"))
        other_done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with sm.transaction():
        sm.append_message(user("first"))
        inside.set()
        assert not other_done.wait(0.2)  # the other thread's write waits for the transaction
        sm.append_message(user("second"))
    thread.join()
    texts = [e["message"]["content"] for e in sm.get_entries()]
    assert texts == ["first", "second", "other"]
    sm.close()
