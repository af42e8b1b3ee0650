"""TreeSession's settings, failures and closing, as the Agents SDK's SQLiteSession tests ask of a session:
settings given as a dict are the SDK's ``SessionSettings``; an item that cannot be stored writes nothing and
leaves the session usable; a closed session refuses every call with a ``SessionError``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents.memory import SessionSettings

from sessiontree.errors import SessionError
from sessiontree.integrations.openai_agents import TreeSession
from tests.integrations.conftest import Backend


def test_settings_default_and_from_a_dict() -> None:
    assert TreeSession.open("memory:").session_settings == SessionSettings()
    session = TreeSession.open("memory:", session_settings={"limit": 2})
    assert session.session_settings == SessionSettings(limit=2)
    asyncio.run(session.add_items([{"role": "user", "content": str(n)} for n in range(5)]))
    assert [i["content"] for i in asyncio.run(session.get_items())] == ["3", "4"]
    with pytest.raises(TypeError, match="limitt"):
        TreeSession.open("memory:", session_settings={"limitt": 1})


def test_an_item_that_cannot_be_stored_writes_nothing(backend: Backend) -> None:
    session = TreeSession(backend.new())
    asyncio.run(session.add_items([{"role": "user", "content": "kept"}]))
    entries = len(session.manager.get_entries())
    unstorable: Any = {"role": "user", "content": object()}
    with pytest.raises((TypeError, ValueError, SessionError)):
        asyncio.run(session.add_items([{"role": "user", "content": "first"}, unstorable]))
    assert len(session.manager.get_entries()) == entries
    asyncio.run(session.add_items([{"role": "user", "content": "after"}]))
    assert [i["content"] for i in asyncio.run(session.get_items())] == ["kept", "after"]
    reopened = TreeSession(backend.reopen(session.manager))
    assert [i["content"] for i in asyncio.run(reopened.get_items())] == ["kept", "after"]
    reopened.close()


def test_a_closed_session_refuses_every_call(backend: Backend) -> None:
    session = TreeSession(backend.new())
    asyncio.run(session.add_items([{"role": "user", "content": "x"}]))
    session.close()
    calls = [
        session.add_items([]),
        session.add_items([{"role": "user", "content": "y"}]),
        session.get_items(),
        session.pop_item(),
        session.clear_session(),
        session.list_turns(),
        session.compact(),
        session.run_compaction({"force": True}),
    ]
    for call in calls:
        with pytest.raises(SessionError, match="the session is closed") as refused:
            asyncio.run(call)
        assert refused.value.kind == "invalid_state"
