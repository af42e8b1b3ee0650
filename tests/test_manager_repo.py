"""Where sessions live and how they are found: ``SessionManager.list``/``list_all``/``continue_recent`` with
``PI_CODING_AGENT_DIR`` pointed at ``tmp_path`` (pi's file-operations "custom flat session directory" case
and the harness repo.test.ts JSONL repo, ported to the manager's factories).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionInfo, SessionManager, SessionNotFoundError
from sessiontree.storage.session_dirs import encode_cwd

BASE_MS = 1_764_770_400_000


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(directory))
    return directory


def user(text: Any, at: int = 0) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": BASE_MS + at}


def assistant(text: str, at: int = 0) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "p",
        "model": "m",
        "timestamp": BASE_MS + at,
    }


def make_session(
    cwd: str | Path,
    session_dir: Path | None = None,
    *messages: dict[str, Any],
    name: str | None = None,
    session_id: str | None = None,
) -> Path:
    m = SessionManager.create(str(cwd), session_dir, id=session_id, clock=lambda: BASE_MS)
    for message in messages:
        m.append_message(message)
    if name is not None:
        m.append_session_info(name)
    path = m.get_session_file()
    assert path is not None
    m.close()
    return Path(path)


def set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, (seconds, seconds))


# -- location ---------------------------------------------------------------------------------------------
def test_sessions_live_below_the_encoded_cwd_in_the_agent_dir(agent_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "my project"
    path = make_session(project, None, user("hi"))
    assert path.parent == agent_dir / "sessions" / encode_cwd(str(project))
    assert path.parent.name == "--" + str(project)[1:].replace("/", "-") + "--"
    m = SessionManager.create(str(project))
    assert m.get_session_dir() == str(path.parent)
    assert m.get_cwd() == str(project)


def test_a_tilde_in_the_agent_dir_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/pi-agent")
    path = make_session("/some/where", None, user("hi"))
    assert path.parent == tmp_path / "home" / "pi-agent" / "sessions" / "--some-where--"


# -- list -------------------------------------------------------------------------------------------------
def test_list_describes_the_sessions_of_one_project_newest_first(agent_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    older = make_session(project, None, user("older question", 1000), assistant("older answer", 2000))
    newer = make_session(
        project,
        None,
        user([{"type": "image", "data": "…", "mimeType": "image/png"}], 3000),
        user([{"type": "text", "text": "look"}, {"type": "text", "text": "here"}], 4000),
        assistant("seen", 5000),
        {
            "role": "toolResult",
            "toolCallId": "t",
            "toolName": "read",
            "content": [],
            "timestamp": BASE_MS + 9000,
        },
        name="  Named session  ",
    )
    make_session(tmp_path / "other", None, user("elsewhere", 99_000))
    infos = SessionManager.list(str(project))
    assert [i.path for i in infos] == [newer, older]
    info = infos[0]
    assert isinstance(info, SessionInfo)
    assert info.cwd == str(project)
    assert info.name == "Named session"
    assert info.message_count == 4  # every message entry, tool results included
    assert info.first_message == "look here"  # the first user message that has text
    assert info.all_messages_text == "look here seen"
    assert info.parent_session_path is None
    assert info.created == datetime.fromtimestamp(BASE_MS / 1000, tz=UTC)
    assert info.modified == datetime.fromtimestamp((BASE_MS + 5000) / 1000, tz=UTC)  # last user/assistant
    assert info.id == newer.name.split("_", 1)[1].removesuffix(".jsonl")
    assert infos[1].first_message == "older question"
    assert infos[1].name is None
    as_dict = info.to_dict()
    assert list(as_dict) == [
        "path",
        "id",
        "cwd",
        "name",
        "created",
        "modified",
        "messageCount",
        "firstMessage",
        "allMessagesText",
    ]
    assert as_dict["modified"] == "2025-12-03T14:00:05.000Z"


def test_list_of_a_session_without_messages(agent_dir: Path, tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), clock=lambda: BASE_MS)
    m.append_model_change("p", "m")
    m.append_session_info("only a name")
    m.append_session_info("")  # an empty name clears it
    m.close()
    [info] = SessionManager.list(str(tmp_path))
    assert (info.message_count, info.first_message, info.all_messages_text) == (0, "(no messages)", "")
    assert info.name is None
    assert info.modified == info.created == datetime.fromtimestamp(BASE_MS / 1000, tz=UTC)


def test_list_skips_files_that_are_not_sessions(agent_dir: Path, tmp_path: Path) -> None:
    good = make_session(tmp_path, None, user("hi"))
    directory = good.parent
    (directory / "no-header.jsonl").write_text('{"type":"message","id":"a","parentId":null}\n')
    (directory / "garbage.jsonl").write_text("not json\n")
    (directory / "empty.jsonl").write_bytes(b"")
    (directory / "notes.txt").write_text('{"type":"session","id":"x","cwd":"/"}\n')
    (directory / "folder.jsonl").mkdir()
    assert [i.path for i in SessionManager.list(str(tmp_path))] == [good]


def test_list_of_a_project_without_sessions(agent_dir: Path, tmp_path: Path) -> None:
    assert SessionManager.list(str(tmp_path / "nothing-here")) == []
    assert SessionManager.list_all() == []


def test_list_reports_progress(agent_dir: Path, tmp_path: Path) -> None:
    for k in range(3):
        make_session(tmp_path, None, user(f"q{k}", k))
    seen: list[tuple[int, int]] = []
    infos = SessionManager.list(str(tmp_path), None, lambda done, total: seen.append((done, total)))
    assert len(infos) == 3
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]


def test_list_all_covers_every_project_newest_first(agent_dir: Path, tmp_path: Path) -> None:
    a = make_session(tmp_path / "a", None, user("a", 1000))
    b = make_session(tmp_path / "b", None, user("b", 3000))
    c = make_session(tmp_path / "c", None, user("c", 2000))
    infos = SessionManager.list_all()
    assert [i.path for i in infos] == [b, c, a]
    assert {i.cwd for i in infos} == {str(tmp_path / x) for x in "abc"}


def test_parent_session_path_is_listed_for_forks(agent_dir: Path, tmp_path: Path) -> None:
    source = make_session(tmp_path / "a", None, user("q"))
    fork = SessionManager.fork_from(source, str(tmp_path / "b"))
    fork.close()
    [info] = SessionManager.list(str(tmp_path / "b"))
    assert info.parent_session_path == str(source)
    assert info.to_dict()["parentSessionPath"] == str(source)


# -- pi: custom flat session directory --------------------------------------------------------------------
def test_custom_flat_directory_scopes_current_folder_apis_by_cwd(agent_dir: Path, tmp_path: Path) -> None:
    shared = tmp_path / "flat"
    project_a = tmp_path / "project-a"
    project_b = tmp_path / "project-b"
    file_a = make_session(project_a, shared, user("from a"))
    file_b = make_session(project_b, shared, user("from b"))
    set_mtime(file_a, 1_000_000)
    set_mtime(file_b, 2_000_000)  # B's file is the most recent one in the directory
    assert [i.path for i in SessionManager.list(str(project_a), shared)] == [file_a]
    assert sorted(i.path for i in SessionManager.list_all(shared)) == sorted([file_a, file_b])
    recent = SessionManager.continue_recent(str(project_a), shared)
    assert recent.get_session_file() == str(file_a)
    assert recent.get_cwd() == str(project_a)
    recent.close()
    assert not (agent_dir / "sessions").exists()  # nothing was put in the default location


def test_the_default_directory_passed_explicitly_is_not_filtered(agent_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    default_dir = agent_dir / "sessions" / encode_cwd(str(project))
    stray = make_session(tmp_path / "elsewhere", default_dir, user("stray"))
    own = make_session(project, default_dir, user("own"))
    assert sorted(i.path for i in SessionManager.list(str(project), default_dir)) == sorted([stray, own])


# -- continue_recent --------------------------------------------------------------------------------------
def test_continue_recent_opens_the_most_recently_modified_session(agent_dir: Path, tmp_path: Path) -> None:
    first = make_session(tmp_path, None, user("first"))
    second = make_session(tmp_path, None, user("second"))
    set_mtime(first, 2_000_000)
    set_mtime(second, 1_000_000)
    m = SessionManager.continue_recent(str(tmp_path))
    assert m.get_session_file() == str(first)
    added = m.append_message(assistant("continued"))
    assert m.get_entry(added)["parentId"] == m.get_entries()[0]["id"]  # type: ignore[index]
    m.close()


def test_continue_recent_skips_a_newer_invalid_file(agent_dir: Path, tmp_path: Path) -> None:
    valid = make_session(tmp_path, None, user("valid"))
    invalid = valid.parent / "zzz-invalid.jsonl"
    invalid.write_text('{"type":"message","id":"a","parentId":null}\n')
    set_mtime(valid, 1_000_000)
    set_mtime(invalid, 2_000_000)
    m = SessionManager.continue_recent(str(tmp_path))
    assert m.get_session_file() == str(valid)
    m.close()
    assert invalid.read_text() == '{"type":"message","id":"a","parentId":null}\n'


def test_continue_recent_creates_a_session_when_there_is_none(agent_dir: Path, tmp_path: Path) -> None:
    m = SessionManager.continue_recent(str(tmp_path / "fresh"))
    path = m.get_session_file()
    assert path is not None
    assert Path(path).parent == agent_dir / "sessions" / encode_cwd(str(tmp_path / "fresh"))
    assert m.get_entries() == [] and not Path(path).exists()
    m.append_message(user("first"))
    assert Path(path).exists()
    m.close()


def test_continue_recent_finds_sessions_with_long_headers(agent_dir: Path, tmp_path: Path) -> None:
    # pi reads 512 bytes of the header and misses this file; sessiontree reads the whole first line (B§16.10)
    m = SessionManager.create(str(tmp_path), parent_session="/parents/" + "x" * 600)
    m.append_message(user("hi"))
    path = m.get_session_file()
    m.close()
    assert path is not None
    assert len(Path(path).read_bytes().split(b"\n", 1)[0]) > 512
    m = SessionManager.continue_recent(str(tmp_path))
    assert m.get_session_file() == path
    m.close()


# -- the harness repo.test.ts (JSONL repo), through the manager ------------------------------------------
def test_stores_sessions_below_encoded_cwd_directories_and_lists_by_cwd(agent_dir: Path) -> None:
    mine = make_session("/tmp/my-project", None, user("mine"))
    other = make_session("/tmp/other-project", None, user("other"))
    assert "--tmp-my-project--" in str(mine)
    assert "--tmp-other-project--" in str(other)
    assert mine.exists() and other.exists()
    assert [i.path for i in SessionManager.list("/tmp/my-project")] == [mine]
    assert [i.path for i in SessionManager.list("/tmp/other-project")] == [other]
    assert sorted(i.path for i in SessionManager.list_all()) == sorted([mine, other])


def test_opens_deletes_and_forks_by_metadata(agent_dir: Path, tmp_path: Path) -> None:
    source_manager = SessionManager.create("/tmp/my-project", id="session-1")
    user1 = source_manager.append_message(user("u1"))
    assistant1 = source_manager.append_message(assistant("a1"))
    source_manager.append_message(user("u2"))
    source_manager.append_message(assistant("a2"))
    source = source_manager.get_session_file()
    assert source is not None
    source_manager.close()

    opened = SessionManager.open(source, read_only=True)
    assert (opened.get_session_id(), opened.get_cwd(), opened.get_session_file()) == (
        "session-1",
        "/tmp/my-project",
        source,
    )
    assert "parentSession" not in opened.get_header()  # type: ignore[operator]

    # a fork to another cwd copies everything
    full = SessionManager.fork_from(source, "/tmp/other-project")
    assert full.get_cwd() == "/tmp/other-project"
    assert full.get_header()["parentSession"] == source  # type: ignore[index]
    assert len(full.get_entries()) == 4
    full.close()

    # a fork "before user2" = the path up to assistant1, in a new file of the same project
    partial = SessionManager.open(source)
    partial_file = partial.create_branched_session(assistant1)
    assert partial_file is not None
    assert [e["id"] for e in partial.get_entries()] == [user1, assistant1]
    assert partial.get_header()["parentSession"] == source  # type: ignore[index]
    partial.close()
    listed = {i.path: i for i in SessionManager.list("/tmp/my-project")}
    assert listed[Path(partial_file)].parent_session_path == source

    # delete
    Path(source).unlink()
    assert Path(source) not in {i.path for i in SessionManager.list_all()}
    with pytest.raises(SessionNotFoundError, match="Session file not found"):
        SessionManager.open(source, read_only=True)
