"""The one place that turns a target into a session: files, directories of sessions, memory, store URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree import SessionError
from sessiontree.integrations._open import _open_manager
from sessiontree.integrations.langchain import TreeChatMessageHistory
from sessiontree.integrations.openai_agents import TreeSession
from tests.builders import user

SID = "01a23100-0000-7000-8000-000000000001"


def test_a_jsonl_path_is_created_then_opened(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "s.jsonl"
    first = _open_manager(path, SID)
    first.append_message(user("hi"))
    first.close()
    again = _open_manager(str(path))
    assert again.get_session_id() == SID and len(again.get_entries()) == 1
    again.close()
    with pytest.raises(SessionError, match="not 01a23100-0000-7000-8000-000000000002") as raised:
        _open_manager(path, "01a23100-0000-7000-8000-000000000002")
    assert raised.value.kind == "invalid_argument"


def test_a_directory_holds_sessions_by_id(tmp_path: Path) -> None:
    fresh = _open_manager(tmp_path / "sessions")
    fresh.append_message(user("a"))
    fresh.close()
    named = _open_manager(tmp_path / "sessions", SID)
    named.append_message(user("b"))
    path = named.get_session_file()
    named.close()
    assert path is not None and path.endswith(f"_{SID}.jsonl")
    found = _open_manager(tmp_path / "sessions", SID)
    assert found.get_session_file() == path and len(found.get_entries()) == 1
    found.close()
    assert len(list((tmp_path / "sessions").glob("*.jsonl"))) == 2


def test_memory_database_and_unknown_store_urls(tmp_path: Path) -> None:
    memory = _open_manager("memory:", SID)
    assert memory.get_session_file() is None and memory.get_session_id() == SID
    url = f"sqlite:///{tmp_path}/adapters.db"
    stored = _open_manager(url, SID)
    stored.append_message(user("kept in the database"))
    stored.close()
    again = _open_manager(f"{url}#{SID}")  # the session named in the URL, read back from the database
    assert again.get_session_id() == SID and len(again.get_entries()) == 1
    again.close()
    with pytest.raises(SessionError, match="Unsupported session store URL") as raised:
        _open_manager("redis://localhost/0")
    assert raised.value.kind == "invalid_argument"


def test_both_adapters_open_through_it(tmp_path: Path) -> None:
    session = TreeSession.open(tmp_path / "a.jsonl", SID)
    history = TreeChatMessageHistory.open("memory:", SID)
    assert session.session_id == history.session_id == SID
    session.close()
