"""``SessionManager.fork_from``: a new session holding every entry of another file (SPEC A1, B§4.1, §16.9).

Unknown entry types and unknown fields are copied byte for byte; a v1/v2 source is migrated (in memory,
the source untouched) before copying; errors use pi's "Cannot fork: …" messages.
"""

from __future__ import annotations

import os
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from sessiontree import CorruptSessionError, SessionError, SessionLockedError, SessionManager
from sessiontree.format.pi_json import loads
from sessiontree.storage import lock
from sessiontree.storage.session_dirs import encode_cwd

HEADER = '{"type":"session","version":3,"id":"src-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/src"}\n'
UNKNOWN = (
    b'{"type":"future_thing","zeta":1.0,"id":"fut1","parentId":"b","timestamp":"2025-01-01T00:00:03Z",'
    b'"y":"\\u00e9\xc3\xa9","n":1e-7,"big":12345678901234567890,"nested":{"k":[true,null]}}'
)


def line(entry_id: str, parent: str | None, role: str = "user", text: str = "x") -> bytes:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"{role}","content":"{text}","timestamp":1}}}}'
    ).encode()


def source_file(tmp_path: Path, *lines: bytes) -> Path:
    path = tmp_path / "source" / "src.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(HEADER.encode() + b"".join(x + b"\n" for x in lines))
    return path


def raw_lines(path: Path | str) -> list[bytes]:
    return [x for x in Path(path).read_bytes().split(b"\n") if x]


def test_fork_copies_every_entry_verbatim_including_unknown_types(tmp_path: Path) -> None:
    label = b'{"type":"label","id":"l1","parentId":"b","timestamp":"2025-01-01T00:00:02.000Z","targetId":"a","label":"mark"}'
    body = [line("a", None), line("b", "a", "assistant"), label, line("c", "a", text="side"), UNKNOWN]
    source = source_file(tmp_path, *body)
    before = source.read_bytes()
    fork = SessionManager.fork_from(source, str(tmp_path / "target"), tmp_path / "forks")
    path = fork.get_session_file()
    assert path is not None
    assert raw_lines(path)[1:] == body  # every branch, label and unknown entry, byte for byte
    assert source.read_bytes() == before
    entries = fork.get_entries()
    assert [e["id"] for e in entries] == ["a", "b", "l1", "c", "fut1"]
    assert fork.get_entry("fut1")["nested"] == {"k": [True, None]}  # type: ignore[index]
    assert fork.get_label("a") == "mark"
    assert fork.get_leaf_id() == "fut1"  # the last entry, as after any open
    # unknown entries are ignored by the context
    assert [m["role"] for m in fork.build_session_context().messages] == ["user", "assistant"]
    fork.close()


def test_fork_header_and_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    source = source_file(tmp_path, line("a", None))
    target_cwd = tmp_path / "target project"
    fork = SessionManager.fork_from(source, str(target_cwd))
    path = fork.get_session_file()
    assert path is not None
    assert Path(path).parent == tmp_path / "agent" / "sessions" / encode_cwd(str(target_cwd))
    header = loads(raw_lines(path)[0])
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["version"] == 3
    assert header["cwd"] == str(target_cwd)
    assert header["parentSession"] == str(source)
    assert header["id"] == fork.get_session_id() != "src-1"
    assert fork.get_cwd() == str(target_cwd)
    assert Path(path).name.endswith(f"_{header['id']}.jsonl")
    fork.close()


def test_fork_resolves_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source_file(tmp_path, line("a", None))
    monkeypatch.chdir(tmp_path)
    fork = SessionManager.fork_from("source/src.jsonl", "proj", "forks")
    header = fork.get_header()
    assert header is not None
    assert header["parentSession"] == str(tmp_path / "source" / "src.jsonl")
    assert header["cwd"] == str(tmp_path / "proj")
    assert fork.get_session_dir() == str(tmp_path / "forks")
    fork.close()


def test_fork_is_written_at_once_and_holds_the_writer_lock(tmp_path: Path) -> None:
    source = source_file(tmp_path, line("a", None))
    fork = SessionManager.fork_from(source, str(tmp_path), tmp_path / "forks")
    path = fork.get_session_file()
    assert path is not None
    assert len(raw_lines(path)) == 2
    assert lock.is_locked(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    intruder = SessionManager.open(path)
    with pytest.raises(SessionLockedError):
        intruder.append_message({"role": "user", "content": "no", "timestamp": 1})
    new = fork.append_message({"role": "user", "content": "continues", "timestamp": 2})
    assert fork.get_entry(new)["parentId"] == "a"  # type: ignore[index]
    fork.close()
    intruder.close()
    assert not lock.is_locked(path)


def test_fork_of_a_source_held_by_a_writer_works(tmp_path: Path) -> None:
    writer = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    writer.append_message({"role": "user", "content": "q", "timestamp": 1})
    source = writer.get_session_file()
    assert source is not None and lock.is_locked(source)
    fork = SessionManager.fork_from(source, str(tmp_path), tmp_path / "forks")
    assert [e["message"]["content"] for e in fork.get_entries()] == ["q"]
    fork.close()
    writer.close()


def test_fork_of_a_v1_source_migrates_before_copying(tmp_path: Path) -> None:
    source = tmp_path / "v1.jsonl"
    source.write_text(
        '{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"q","timestamp":1}}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}\n'
        '{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":9}\n'
    )
    before = source.read_bytes()
    ticks = count()
    fork = SessionManager.fork_from(
        source, str(tmp_path), tmp_path / "forks", id_factory=lambda used: f"id{next(ticks)}"
    )
    path = fork.get_session_file()
    assert path is not None
    entries = [loads(x) for x in raw_lines(path)[1:]]
    # pi copies v1 entries as they are (no ids, an unusable context); sessiontree migrates first
    assert [(e["id"], e["parentId"]) for e in entries] == [("id0", None), ("id1", "id0"), ("id2", "id1")]
    assert entries[2]["firstKeptEntryId"] == "id1" and "firstKeptEntryIndex" not in entries[2]
    assert [m["role"] for m in fork.build_session_context().messages] == ["compactionSummary", "assistant"]
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forks", "v1.jsonl"]  # no backup of a read source
    fork.close()


def test_fork_of_a_damaged_source_copies_only_its_entries(tmp_path: Path) -> None:
    source = source_file(tmp_path, line("a", None), b"garbage", line("b", "a"), line("c", "b")[:-10])
    fork = SessionManager.fork_from(source, str(tmp_path), tmp_path / "forks")
    path = fork.get_session_file()
    assert path is not None
    assert raw_lines(path)[1:] == [line("a", None), line("b", "a")]
    assert fork.problems == []
    fork.close()


def test_fork_of_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(SessionError) as info:
        SessionManager.fork_from(missing, str(tmp_path), tmp_path / "forks")
    assert str(info.value) == f"Cannot fork: source session file is empty or invalid: {missing}"
    assert not (tmp_path / "forks").exists() or list((tmp_path / "forks").iterdir()) == []


@pytest.mark.parametrize("content", [b"", b"\n  \n"], ids=["empty", "blank"])
def test_fork_of_an_empty_file(tmp_path: Path, content: bytes) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(content)
    with pytest.raises(SessionError) as info:
        SessionManager.fork_from(empty, str(tmp_path), tmp_path / "forks")
    assert str(info.value) == f"Cannot fork: source session file is empty or invalid: {empty}"
    assert empty.read_bytes() == content
    assert not (tmp_path / "forks").exists() or list((tmp_path / "forks").iterdir()) == []


def test_fork_of_a_file_without_header(tmp_path: Path) -> None:
    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(line("a", None) + b"\n")
    with pytest.raises(CorruptSessionError) as info:
        SessionManager.fork_from(headless, str(tmp_path), tmp_path / "forks")
    assert str(info.value) == f"Cannot fork: source session has no header: {headless}"
    assert not (tmp_path / "forks").exists() or list((tmp_path / "forks").iterdir()) == []


def test_forks_of_forks_record_their_parent(tmp_path: Path) -> None:
    source = source_file(tmp_path, line("a", None))
    first = SessionManager.fork_from(source, str(tmp_path), tmp_path / "forks")
    first_path = first.get_session_file()
    assert first_path is not None
    first.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2})
    first.close()
    second = SessionManager.fork_from(first_path, str(tmp_path), tmp_path / "forks")
    header: dict[str, Any] | None = second.get_header()
    assert header is not None and header["parentSession"] == first_path
    assert len(second.get_entries()) == 2
    assert first_path != second.get_session_file()
    second.close()
