"""repo.py: pi's directory layout, header sniffing, ``find_most_recent_session`` (pi's file-operations.test.ts
"findMostRecentSession" group), ``SessionInfo`` from a file, listing helpers and private directories.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sessiontree.storage.session_dirs import (
    build_session_info,
    collect_session_infos,
    encode_cwd,
    ensure_private_dir,
    find_most_recent_session,
    get_agent_dir,
    get_default_session_dir,
    get_sessions_root,
    list_session_files,
    read_header,
    resolve_cwd,
    session_file_name,
)


def header(session_id: str = "s1", cwd: str = "/project", ts: str = "2025-01-01T00:00:00.000Z") -> str:
    return f'{{"type":"session","version":3,"id":"{session_id}","timestamp":"{ts}","cwd":"{cwd}"}}\n'


def message(entry_id: str, parent: str | None, role: str, content: str, ts_ms: int | None = None) -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    stamp = "" if ts_ms is None else f',"timestamp":{ts_ms}'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},"timestamp":"2025-01-01T00:00:05.000Z",'
        f'"message":{{"role":"{role}","content":"{content}"{stamp}}}}}\n'
    )


def write(path: Path, text: str, mtime: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# -- layout -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cwd", "encoded"),
    [
        ("/tmp/proj", "--tmp-proj--"),
        ("/Users/me/work/pi", "--Users-me-work-pi--"),
        ("C:\\Users\\me", "--C--Users-me--"),
        ("/tmp/my proj:x", "--tmp-my proj-x--"),
        ("\\\\server\\share", "---server-share--"),
        ("relative/dir", "--relative-dir--"),
        ("/", "----"),
    ],
)
def test_encode_cwd(cwd: str, encoded: str) -> None:
    assert encode_cwd(cwd) == encoded


def test_agent_dir_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    assert get_agent_dir() == tmp_path / "home" / ".pi" / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "custom"))
    assert get_agent_dir() == tmp_path / "custom"
    assert get_sessions_root() == tmp_path / "custom" / "sessions"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/elsewhere")
    assert get_agent_dir() == tmp_path / "home" / "elsewhere"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "")
    assert get_agent_dir() == tmp_path / "home" / ".pi" / "agent"


def test_default_session_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert get_default_session_dir("/tmp/proj") == tmp_path / "agent" / "sessions" / "--tmp-proj--"
    assert (
        get_default_session_dir("/tmp/proj", tmp_path / "other")
        == tmp_path / "other" / "sessions" / "--tmp-proj--"
    )
    monkeypatch.chdir(tmp_path)
    assert get_default_session_dir("sub").name == encode_cwd(str(tmp_path / "sub"))
    assert not (tmp_path / "agent").exists()  # computing a directory creates nothing


def test_resolve_cwd(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert resolve_cwd("~/proj") == str(tmp_path / "home" / "proj")
    assert resolve_cwd("file:///srv/app") == "/srv/app"
    assert resolve_cwd("rel/../x") == str(tmp_path / "x")
    assert resolve_cwd(Path("/a/b/")) == "/a/b"


def test_session_file_name() -> None:
    assert (
        session_file_name("2025-12-03T14:00:00.000Z", "019ad9c2-3f1e-7c2a-9a0b-3e5f7d1c2b4a")
        == "2025-12-03T14-00-00-000Z_019ad9c2-3f1e-7c2a-9a0b-3e5f7d1c2b4a.jsonl"
    )


def test_ensure_private_dir_creates_every_missing_level_with_0700(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = tmp_path / "a" / "b" / "c"
        assert ensure_private_dir(target) == target
        for directory in (tmp_path / "a", tmp_path / "a" / "b", target):
            assert os.stat(directory).st_mode & 0o777 == 0o700
        existing = tmp_path / "existing"
        existing.mkdir(mode=0o755)
        os.chmod(existing, 0o755)
        ensure_private_dir(existing / "new")
        assert os.stat(existing).st_mode & 0o777 == 0o755  # existing directories are left alone
        assert os.stat(existing / "new").st_mode & 0o777 == 0o700
        (tmp_path / "file").write_text("x")
        with pytest.raises(OSError):
            ensure_private_dir(tmp_path / "file")
    finally:
        os.umask(old)


# -- headers ----------------------------------------------------------------------------------------------
def test_read_header(tmp_path: Path) -> None:
    assert read_header(write(tmp_path / "a.jsonl", header("a") + message("m", None, "user", "x"))) == {
        "type": "session",
        "version": 3,
        "id": "a",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/project",
    }
    assert read_header(write(tmp_path / "bom.jsonl", "\ufeff\n\n" + header("bom")))["id"] == "bom"  # type: ignore[index]
    assert read_header(write(tmp_path / "crlf.jsonl", header("crlf").replace("\n", "\r\n")))["id"] == "crlf"  # type: ignore[index]
    long_cwd = "/" + "x" * 5000
    assert read_header(write(tmp_path / "long.jsonl", header("long", long_cwd)))["cwd"] == long_cwd  # type: ignore[index]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "garbage\n",
        message("m", None, "user", "x"),
        '{"type":"session","cwd":"/"}\n',  # no id
        '{"type":"session","id":7}\n',
        "[1,2]\n",
    ],
)
def test_read_header_of_files_without_a_valid_header(tmp_path: Path, text: str) -> None:
    assert read_header(write(tmp_path / "x.jsonl", text)) is None


def test_read_header_of_a_missing_file(tmp_path: Path) -> None:
    assert read_header(tmp_path / "missing.jsonl") is None
    assert read_header(tmp_path) is None


# -- pi's findMostRecentSession tests ---------------------------------------------------------------------
def test_most_recent_returns_none_for_empty_directory(tmp_path: Path) -> None:
    assert find_most_recent_session(tmp_path) is None


def test_most_recent_returns_none_for_non_existent_directory(tmp_path: Path) -> None:
    assert find_most_recent_session(tmp_path / "missing") is None


def test_most_recent_ignores_non_jsonl_files(tmp_path: Path) -> None:
    write(tmp_path / "file.txt", header("txt"))
    write(tmp_path / "file.json", header("json"))
    assert find_most_recent_session(tmp_path) is None


def test_most_recent_ignores_jsonl_files_without_valid_session_header(tmp_path: Path) -> None:
    write(tmp_path / "invalid.jsonl", message("m", None, "user", "x"))
    assert find_most_recent_session(tmp_path) is None


def test_most_recent_returns_single_valid_session_file(tmp_path: Path) -> None:
    path = write(tmp_path / "session.jsonl", header())
    assert find_most_recent_session(tmp_path) == path


def test_most_recent_returns_most_recently_modified_session(tmp_path: Path) -> None:
    older = write(tmp_path / "older.jsonl", header("older"), mtime=1_000_000)
    newer = write(tmp_path / "newer.jsonl", header("newer"), mtime=2_000_000)
    assert find_most_recent_session(tmp_path) == newer
    os.utime(older, (3_000_000, 3_000_000))
    assert find_most_recent_session(tmp_path) == older


def test_most_recent_skips_invalid_files_and_returns_valid_one(tmp_path: Path) -> None:
    valid = write(tmp_path / "valid.jsonl", header(), mtime=1_000_000)
    write(tmp_path / "invalid.jsonl", "not json\n", mtime=2_000_000)
    assert find_most_recent_session(tmp_path) == valid


def test_most_recent_filters_by_cwd(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", header("a", "/project-a"), mtime=1_000_000)
    b = write(tmp_path / "b.jsonl", header("b", "/project-b"), mtime=2_000_000)
    assert find_most_recent_session(tmp_path, "/project-a") == a
    assert find_most_recent_session(tmp_path, "/project-b") == b
    assert find_most_recent_session(tmp_path, "/project-c") is None
    assert find_most_recent_session(tmp_path) == b


def test_most_recent_compares_resolved_header_cwds(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", header("a", "/project-a/sub/.."), mtime=1_000_000)
    assert find_most_recent_session(tmp_path, "/project-a") == a


# -- SessionInfo from a file ------------------------------------------------------------------------------
def test_build_session_info(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        header("info-1", "/proj", "2025-01-01T00:00:00.000Z")
        + message("u1", None, "user", "first question", 1_735_689_601_000)
        + message("a1", "u1", "assistant", "answer", 1_735_689_602_000)
        + message("t1", "a1", "toolResult", "tool output", 1_735_689_609_000)
        + message("u2", "t1", "user", "", None)  # no message timestamp: the entry's (00:00:05) counts
        + '{"type":"session_info","id":"n1","parentId":"u2","timestamp":"t","name":"  Trimmed  "}\n'
        + "broken line\n",
    )
    info = build_session_info(path)
    assert info is not None
    assert (info.path, info.id, info.cwd, info.name, info.parent_session_path) == (
        path,
        "info-1",
        "/proj",
        "Trimmed",
        None,
    )
    assert info.message_count == 4
    assert info.first_message == "first question"
    assert info.all_messages_text == "first question answer"
    assert info.created == datetime(2025, 1, 1, tzinfo=UTC)
    assert info.modified == datetime(2025, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert "info-1" in repr(info)


def test_build_session_info_of_invalid_files(tmp_path: Path) -> None:
    assert build_session_info(tmp_path / "missing.jsonl") is None
    assert build_session_info(write(tmp_path / "x.jsonl", message("m", None, "user", "x"))) is None
    assert build_session_info(write(tmp_path / "e.jsonl", "")) is None


def test_build_session_info_without_header_timestamp_uses_the_file_time(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", '{"type":"session","id":"s"}\n', mtime=1_700_000_000)
    info = build_session_info(path)
    assert info is not None
    assert info.cwd == ""
    assert info.created == info.modified == datetime.fromtimestamp(1_700_000_000, tz=UTC)


# -- listing helpers --------------------------------------------------------------------------------------
def test_list_session_files(tmp_path: Path) -> None:
    write(tmp_path / "b.jsonl", header("b"))
    write(tmp_path / "a.jsonl", header("a"))
    write(tmp_path / "c.txt", header("c"))
    (tmp_path / "d.jsonl").mkdir()
    write(tmp_path / "nested" / "e.jsonl", header("e"))
    assert [p.name for p in list_session_files(tmp_path)] == ["a.jsonl", "b.jsonl"]
    assert list_session_files(tmp_path / "missing") == []


def test_collect_session_infos_sorts_filters_and_reports_progress(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", header("a", "/p") + message("m", None, "user", "x", 1_000))
    b = write(tmp_path / "b.jsonl", header("b", "/q") + message("m", None, "user", "y", 3_000))
    c = write(tmp_path / "c.jsonl", header("c", "/p") + message("m", None, "user", "z", 2_000))
    bad = write(tmp_path / "d.jsonl", "garbage\n")
    progress: list[tuple[int, int]] = []
    infos = collect_session_infos([a, b, c, bad], lambda done, total: progress.append((done, total)))
    assert [i.id for i in infos] == ["b", "c", "a"]
    assert sorted(progress) == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [i.id for i in collect_session_infos([a, b, c], cwd_filter="/p")] == ["c", "a"]
    assert collect_session_infos([]) == []
