"""Session ids (pi's session-manager/custom-session-id.test.ts), on real files in ``tmp_path``.

sessiontree difference: a new session's file is written with its first entry (SPEC A3), so "the file does
not exist yet" holds until something is appended, and a branched session is written at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from tests.builders import assistant

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
FILE_NAME = r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_{id}\.jsonl$"
SESSION_ID_MESSAGE = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)
INVALID_IDS = ["", "-abc", "abc-", "_abc", "abc_", ".abc", "abc.", "a/b", "a\\b", "a b", "../x"]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def file_name_pattern(session_id: str) -> re.Pattern[str]:
    return re.compile(FILE_NAME.replace("{id}", re.escape(session_id)))


# -- pi's custom-session-id.test.ts -----------------------------------------------------------------------
def test_uses_the_provided_id_instead_of_generating_one() -> None:
    m = SessionManager.in_memory("/proj")
    m.new_session(id="my-custom-id")
    assert m.get_session_id() == "my-custom-id"


def test_allows_alphanumeric_session_ids_with_interior_punctuation() -> None:
    m = SessionManager.in_memory("/proj")
    m.new_session(id="abc-123_def.456")
    assert m.get_session_id() == "abc-123_def.456"


@pytest.mark.parametrize("bad", INVALID_IDS)
def test_rejects_invalid_custom_session_ids(bad: str) -> None:
    m = SessionManager.in_memory("/proj")
    before = m.get_session_id()
    with pytest.raises(ValueError) as info:
        m.new_session(id=bad)
    assert str(info.value) == SESSION_ID_MESSAGE
    assert m.get_session_id() == before


def test_generates_a_uuid7_when_no_id_is_provided() -> None:
    m = SessionManager.in_memory("/proj")
    m.new_session()
    assert UUID7.match(m.get_session_id())


def test_generates_a_uuid7_when_options_are_given_without_id() -> None:
    m = SessionManager.in_memory("/proj")
    m.new_session(parent_session="/some/parent.jsonl")
    assert UUID7.match(m.get_session_id())
    header = m.get_header()
    assert header is not None and header["parentSession"] == "/some/parent.jsonl"


def test_includes_the_custom_id_in_the_session_header() -> None:
    m = SessionManager.in_memory("/proj")
    m.new_session(id="header-id")
    header = m.get_header()
    assert header is not None
    assert header["id"] == "header-id"
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]


def test_generates_a_uuid7_when_constructed_without_an_explicit_id() -> None:
    m = SessionManager.in_memory("/proj")
    header = m.get_header()
    assert UUID7.match(m.get_session_id())
    assert header is not None and header["id"] == m.get_session_id()


def test_uses_the_provided_id_when_creating_a_persisted_session(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path, id="persisted-id")
    path = m.get_session_file()
    assert path is not None
    assert m.get_session_id() == "persisted-id"
    assert Path(path).parent == tmp_path
    assert file_name_pattern("persisted-id").match(Path(path).name)
    assert not Path(path).exists()
    m.append_message(user("first"))  # sessiontree writes with the first entry (SPEC A3)
    assert Path(path).exists()
    assert SessionManager.open(path, read_only=True).get_session_id() == "persisted-id"
    m.close()


def test_generates_a_uuid7_when_creating_a_branched_session(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path)
    m.append_message(user("q"))
    a = m.append_message(assistant("a"))
    old_id = m.get_session_id()
    new_file = m.create_branched_session(a)
    assert new_file is not None
    new_id = m.get_session_id()
    assert UUID7.match(new_id) and new_id != old_id
    header = m.get_header()
    assert header is not None and header["id"] == new_id
    assert file_name_pattern(new_id).match(Path(new_file).name)
    assert SessionManager.open(new_file, read_only=True).get_session_id() == new_id
    m.close()


def _source_file(tmp_path: Path) -> str:
    source = SessionManager.create(str(tmp_path / "src-proj"), tmp_path / "src")
    source.append_message(user("q"))
    source.append_message(assistant("a"))
    path = source.get_session_file()
    assert path is not None
    source.close()
    return path


def test_generates_a_uuid7_when_forking_from_another_session_file(tmp_path: Path) -> None:
    source = _source_file(tmp_path)
    fork = SessionManager.fork_from(source, str(tmp_path / "target"), tmp_path / "forks")
    header = fork.get_header()
    assert header is not None
    assert UUID7.match(header["id"]) and header["id"] == fork.get_session_id()
    assert header["parentSession"] == source
    fork.close()


def test_uses_the_provided_id_when_forking_from_another_session_file(tmp_path: Path) -> None:
    source = _source_file(tmp_path)
    fork = SessionManager.fork_from(source, str(tmp_path / "target"), tmp_path / "forks", id="forked-id")
    path = fork.get_session_file()
    assert path is not None
    assert fork.get_session_id() == "forked-id"
    assert file_name_pattern("forked-id").match(Path(path).name)
    assert SessionManager.open(path, read_only=True).get_header()["id"] == "forked-id"  # type: ignore[index]
    fork.close()


# -- beyond pi's suite ------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["-abc", "a/b", "abc\n"])
def test_invalid_ids_are_rejected_by_every_factory_before_anything_is_written(
    tmp_path: Path, bad: str
) -> None:
    source = _source_file(tmp_path)
    target = tmp_path / "target-sessions"
    with pytest.raises(ValueError, match="Session id must be non-empty"):
        SessionManager.create(str(tmp_path), target, id=bad)
    with pytest.raises(ValueError, match="Session id must be non-empty"):
        SessionManager.fork_from(source, str(tmp_path), target, id=bad)
    m = SessionManager.create(str(tmp_path), tmp_path / "other")
    m.append_message(user("q"))
    a = m.append_message(assistant("a"))
    with pytest.raises(ValueError, match="Session id must be non-empty"):
        m.create_branched_session(a, session_id=bad)
    assert not target.exists() or list(target.iterdir()) == []
    assert len(list((tmp_path / "other").iterdir())) == 1
    m.close()


def test_file_name_timestamp_is_the_header_timestamp(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path, clock=lambda: 1_764_770_401_123)
    header = m.get_header()
    path = m.get_session_file()
    assert header is not None and path is not None
    assert header["timestamp"] == "2025-12-03T14:00:01.123Z"
    assert Path(path).name == f"2025-12-03T14-00-01-123Z_{m.get_session_id()}.jsonl"


def test_session_ids_are_injectable(tmp_path: Path) -> None:
    ids = iter(["first-id", "second-id", "third-id"])
    m = SessionManager.create(str(tmp_path), tmp_path, session_id_factory=lambda: next(ids))
    assert m.get_session_id() == "first-id"
    m.append_message(user("q"))
    a = m.append_message(assistant("a"))
    m.create_branched_session(a)
    assert m.get_session_id() == "second-id"
    m.new_session()
    assert m.get_session_id() == "third-id"
    m.close()


def test_new_session_with_a_custom_id_names_the_file_after_it(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path)
    m.append_message(user("q"))
    path = m.new_session(id="next-one")
    assert path is not None
    assert Path(path).parent == tmp_path
    assert file_name_pattern("next-one").match(Path(path).name)
    m.close()
