"""Opening, switching and starting session files (pi's session-manager/file-operations.test.ts, the loading
and ``setSessionFile`` parts, and migration.test.ts through the manager), plus ``new_session``,
``set_session_file`` and ``in_memory``.

sessiontree has no ``loadEntriesFromFile``; its cases are ported as ``SessionManager.open(path,
read_only=True)``. Where pi overwrites a damaged file with a fresh header, sessiontree raises
``CorruptSessionError`` and leaves the bytes alone (SPEC A3); a 0-byte file is a new session at that path,
written with its first entry rather than at once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from sessiontree import (
    CorruptSessionError,
    SessionLockedError,
    SessionManager,
    SessionNotFoundError,
    StorageError,
)
from sessiontree.format.pi_json import loads
from sessiontree.storage import lock
from tests.builders import assistant

HEADER = '{"type":"session","version":3,"id":"sess-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}\n'
V1_HEADER = '{"type":"session","id":"old-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}\n'


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def message_line(entry_id: str, parent: str | None, text: str) -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}\n'
    )


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [loads(line) for line in path.read_bytes().split(b"\n") if line]


# -- loadEntriesFromFile, as read-only opens --------------------------------------------------------------
def test_non_existent_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(SessionNotFoundError) as info:
        SessionManager.open(missing, read_only=True)
    assert info.value.kind == "not_found"
    assert str(missing) in str(info.value)
    # a writable open starts a session bound to that path, written with its first entry
    m = SessionManager.open(missing)
    assert m.get_entries() == []
    assert m.get_session_file() == str(missing)
    assert not missing.exists()
    m.close()


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    m = SessionManager.open(empty, read_only=True)
    assert m.get_entries() == []
    assert m.get_leaf_id() is None
    assert m.problems == []
    assert empty.read_bytes() == b""


def test_file_without_valid_session_header_raises_and_is_left_alone(tmp_path: Path) -> None:
    # pi treats the file as empty and later overwrites it; sessiontree refuses (SPEC A3)
    path = tmp_path / "no-header.jsonl"
    path.write_text(message_line("m1", None, "hello"))
    before = path.read_bytes()
    for read_only in (True, False):
        with pytest.raises(CorruptSessionError) as info:
            SessionManager.open(path, read_only=read_only)
        assert str(path) in str(info.value) and "line 1" in str(info.value)
        assert info.value.line == 1
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no-header.jsonl"]


def test_malformed_json_raises_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"not json at all\n")
    with pytest.raises(CorruptSessionError, match="first line is not a valid session header"):
        SessionManager.open(path)
    assert path.read_bytes() == b"not json at all\n"


def test_loads_valid_session_file(tmp_path: Path) -> None:
    # pi's fixture: a header without a version (v1) and one message
    path = tmp_path / "valid.jsonl"
    path.write_text(
        V1_HEADER + '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}\n'
    )
    m = SessionManager.open(path, read_only=True)
    header = m.get_header()
    assert header is not None and header["type"] == "session" and header["id"] == "old-1"
    assert [e["type"] for e in m.get_entries()] == ["message"]


def test_skips_malformed_lines_but_keeps_valid_ones(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        HEADER + message_line("m1", None, "a") + "not valid json\n" + message_line("m2", "m1", "b")
    )
    m = SessionManager.open(path, read_only=True)
    assert [e["id"] for e in m.get_entries()] == ["m1", "m2"]
    assert [e["id"] for e in m.get_branch()] == ["m1", "m2"]  # the line after the bad one keeps its parent
    assert [(p.kind, p.line) for p in m.problems] == [("bad_line", 3)]


# -- setSessionFile with an empty or damaged file ---------------------------------------------------------
def test_empty_file_becomes_a_new_session_at_that_path(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    m = SessionManager.open(path)
    # pi writes a header at once; sessiontree writes it with the first entry (SPEC A3)
    assert path.read_bytes() == b""
    first = m.append_message(user("hello"))
    objects = lines_of(path)
    assert [o["type"] for o in objects] == ["session", "message"]
    assert objects[0]["id"] == m.get_session_id()
    assert objects[1]["id"] == first
    m.close()


def test_whitespace_only_file_is_replaced_by_header_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n  \n\n")
    m = SessionManager.open(path)
    m.append_message(user("hello"))
    assert [o["type"] for o in lines_of(path)] == ["session", "message"]
    assert path.read_bytes().startswith(b'{"type":"session"')
    m.close()


def test_file_without_valid_header_is_never_rewritten(tmp_path: Path) -> None:
    # pi replaces such a file by a single header line, losing its content; sessiontree raises (SPEC A3)
    path = tmp_path / "damaged.jsonl"
    path.write_text(message_line("m1", None, "precious"))
    before = path.read_bytes()
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    previous = m.append_message(user("kept"))
    with pytest.raises(CorruptSessionError):
        m.set_session_file(path)
    assert path.read_bytes() == before
    # the manager stays on its previous session
    assert m.get_leaf_id() == previous
    assert m.get_session_file() != str(path)
    m.close()


def test_preserves_explicit_session_file_path_when_starting_over(tmp_path: Path) -> None:
    path = tmp_path / "explicit.jsonl"
    path.write_bytes(b"")
    m = SessionManager.open(path)
    assert m.get_session_file() == str(path.resolve())
    m.append_message(user("x"))
    assert m.get_session_file() == str(path.resolve())
    m.close()


def test_subsequent_loads_of_the_started_file_work(tmp_path: Path) -> None:
    path = tmp_path / "recovered.jsonl"
    path.write_bytes(b"")
    m = SessionManager.open(path)
    entry = m.append_message(user("x"))
    session_id = m.get_session_id()
    m.close()
    again = SessionManager.open(path)
    assert again.get_session_id() == session_id
    assert again.get_leaf_id() == entry
    again.close()


def test_open_with_cwd_override_on_a_new_file_writes_that_cwd(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.jsonl", tmp_path / "empty.jsonl"):
        if path.name == "empty.jsonl":
            path.write_bytes(b"")
        m = SessionManager.open(path, cwd_override="/the/override")
        assert m.get_cwd() == "/the/override"
        m.append_message(user("x"))
        assert lines_of(path)[0]["cwd"] == "/the/override"
        m.close()


def test_open_takes_cwd_and_session_dir_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "s.jsonl"
    path.parent.mkdir()
    path.write_text(HEADER)
    m = SessionManager.open(path, read_only=True)
    assert m.get_cwd() == "/work"
    assert m.get_session_dir() == str(path.parent)
    assert m.get_session_id() == "sess-1"
    other = SessionManager.open(path, tmp_path / "elsewhere", "/cwd", read_only=True)
    assert (other.get_cwd(), other.get_session_dir()) == ("/cwd", str(tmp_path / "elsewhere"))


# -- migration.test.ts, through the manager ---------------------------------------------------------------
def test_opening_a_v1_file_adds_ids_and_parent_ids(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    original = (
        V1_HEADER
        + '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
        + '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}\n'
    )
    path.write_text(original)
    m = SessionManager.open(path)
    header = m.get_header()
    assert header is not None and header["version"] == 3
    entries = m.get_entries()
    assert all(re.fullmatch(r"[0-9a-f]{8}", e["id"]) for e in entries)
    assert entries[0]["parentId"] is None
    assert entries[1]["parentId"] == entries[0]["id"]
    assert any(p.kind == "migrated" for p in m.problems)
    m.close()
    # the rewrite is on disk; the original is kept beside it (SPEC A1)
    assert lines_of(path)[0]["version"] == 3
    assert (tmp_path / "v1.jsonl.v1.bak").read_text() == original
    assert [e["id"] for e in SessionManager.open(path, read_only=True).get_entries()] == [
        e["id"] for e in entries
    ]


def test_migration_is_idempotent_for_v2_entries_with_ids(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    path.write_text(
        '{"type":"session","version":2,"id":"v2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","id":"abc","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":1}}\n'
        '{"type":"message","id":"def","parentId":"abc","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"user","content":"u","timestamp":2}}\n'
    )
    m = SessionManager.open(path)
    assert [(e["id"], e["parentId"]) for e in m.get_entries()] == [("abc", None), ("def", "abc")]
    assert m.get_entries()[0]["message"]["role"] == "custom"
    assert m.get_header()["version"] == 3  # type: ignore[index]
    m.close()
    again = SessionManager.open(path)
    assert not any(p.kind == "migrated" for p in again.problems)  # already v3: nothing to do
    again.close()


# -- new_session ------------------------------------------------------------------------------------------
def test_new_session_starts_empty_in_the_same_directory_and_releases_the_old_file(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path / "proj"), tmp_path / "sessions")
    u = m.append_message(user("old"))
    m.append_label_change(u, "mark")
    m.append_session_info("old name")
    old_file = m.get_session_file()
    old_id = m.get_session_id()
    assert old_file is not None and lock.is_locked(old_file)
    new_file = m.new_session()
    assert new_file is not None and new_file != old_file
    assert Path(new_file).parent == tmp_path / "sessions"
    assert not Path(new_file).exists()
    assert not lock.is_locked(old_file)
    assert m.get_session_id() != old_id
    assert (m.get_entries(), m.get_leaf_id(), m.get_session_name()) == ([], None, None)
    assert (m.get_label(u), m.get_label_timestamp(u), m.get_labels()) == (None, None, {})
    header = m.get_header()
    assert header is not None and header["cwd"] == str(tmp_path / "proj")
    first = m.append_message(user("new"))
    assert [o["id"] for o in lines_of(Path(new_file))] == [m.get_session_id(), first]
    assert [o["type"] for o in lines_of(Path(old_file))] == ["session", "message", "label", "session_info"]
    m.close()


def test_new_session_records_the_parent_session(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    m.new_session(parent_session="/somewhere/parent.jsonl")
    m.append_message(user("x"))
    path = m.get_session_file()
    assert path is not None
    assert lines_of(Path(path))[0]["parentSession"] == "/somewhere/parent.jsonl"
    m.close()


def test_a_session_without_entries_creates_no_file(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    m.new_session()
    m.new_session()
    m.close()
    assert list((tmp_path / "sessions").iterdir()) == []


# -- set_session_file -------------------------------------------------------------------------------------
def test_set_session_file_switches_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "existing.jsonl"
    path.write_text(HEADER + message_line("m1", None, "a") + message_line("m2", "m1", "b"))
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    m.append_message(user("in the first session"))
    first_file = m.get_session_file()
    assert first_file is not None
    m.set_session_file(path)
    assert not lock.is_locked(first_file)
    assert m.get_session_id() == "sess-1"
    assert m.get_session_file() == str(path)
    assert m.get_leaf_id() == "m2"
    assert [e["id"] for e in m.get_entries()] == ["m1", "m2"]
    new = m.append_message(user("appended"))
    assert [o.get("id") for o in lines_of(path)] == ["sess-1", "m1", "m2", new]
    assert lines_of(path)[-1]["parentId"] == "m2"
    m.close()


def test_set_session_file_on_a_missing_path_starts_a_session_there(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    old_id = m.get_session_id()
    target = tmp_path / "new" / "chosen.jsonl"
    m.set_session_file(target)
    assert m.get_session_file() == str(target)
    assert m.get_session_id() != old_id
    assert m.get_entries() == []
    assert not target.exists()
    m.append_message(user("x"))
    assert [o["type"] for o in lines_of(target)] == ["session", "message"]
    assert lines_of(target)[0]["id"] == m.get_session_id()
    m.close()


# -- in_memory --------------------------------------------------------------------------------------------
def test_in_memory_never_writes_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent_dir = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    m = SessionManager.in_memory()
    assert m.get_cwd() == str(work)
    assert (m.get_session_file(), m.get_session_dir(), m.is_persisted()) == (None, "", False)
    u = m.append_message(user("q"))
    a = m.append_message(assistant("a"))
    m.append_label_change(u, "mark")
    m.append_compaction("s", u, 10)
    m.branch_with_summary(u, "summary")
    m.append_session_info("name")
    assert m.create_branched_session(a) is None
    assert m.new_session() is None
    m.append_message(user("more"))
    m.sync()
    m.close()
    assert list(work.iterdir()) == []
    assert not agent_dir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_in_memory_keeps_everything_readable() -> None:
    m = SessionManager.in_memory("/proj")
    u = m.append_message(user("q"))
    m.append_thinking_level_change("high")
    m.append_message(assistant("a"))
    assert m.get_cwd() == "/proj"
    assert [x["role"] for x in m.build_session_context().messages] == ["user", "assistant"]
    assert m.build_session_context().thinking_level == "high"
    assert m.get_branch()[0]["id"] == u
    assert m.store.path is None


def test_reads_keep_working_after_close(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    m.close()
    assert len(m.get_entries()) == 2
    assert [x["role"] for x in m.build_session_context().messages] == ["user", "assistant"]


def test_file_and_directory_modes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    old_umask = os.umask(0o022)
    try:
        m = SessionManager.create(str(tmp_path / "proj"))
        m.append_message(user("q"))
        path = m.get_session_file()
        assert path is not None
        assert os.stat(path).st_mode & 0o777 == 0o600
        for directory in (tmp_path / "agent", tmp_path / "agent" / "sessions", Path(path).parent):
            assert os.stat(directory).st_mode & 0o777 == 0o700, directory
        custom = tmp_path / "custom" / "nested"
        other = SessionManager.create(str(tmp_path / "proj"), custom)
        other.append_message(user("q"))
        assert os.stat(tmp_path / "custom").st_mode & 0o777 == 0o700
        assert os.stat(custom).st_mode & 0o777 == 0o700
        m.close()
        other.close()
    finally:
        os.umask(old_umask)


# -- existing files are never overwritten -----------------------------------------------------------------
def test_a_session_file_that_already_exists_is_never_overwritten(tmp_path: Path) -> None:
    fixed_clock = lambda: 1_735_689_600_000  # noqa: E731
    first = SessionManager.create(str(tmp_path), tmp_path / "s", id="same", clock=fixed_clock)
    second = SessionManager.create(str(tmp_path), tmp_path / "s", id="same", clock=fixed_clock)
    first.append_message(user("first"))
    path = first.get_session_file()
    assert path is not None and path == second.get_session_file()
    before = Path(path).read_bytes()
    with pytest.raises(SessionLockedError, match="created by another writer first"):
        second.append_message(user("second"))
    assert second.get_leaf_id() is None and second.get_entries() == []
    with pytest.raises(SessionLockedError, match="created by another writer first"):  # first holds it
        SessionManager.create(str(tmp_path), tmp_path / "s", id="same", clock=fixed_clock)
    with pytest.raises(StorageError, match="already exists"):
        SessionManager.fork_from(path, str(tmp_path), tmp_path / "s", id="same", clock=fixed_clock)
    assert Path(path).read_bytes() == before
    assert [p.name for p in (tmp_path / "s").iterdir()] == [Path(path).name]  # no temporary file left
    first.close()
    second.close()


def test_opening_a_directory_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        SessionManager.open(tmp_path)
