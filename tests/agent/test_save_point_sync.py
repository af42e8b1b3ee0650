"""A save point makes the turn durable: ``sync`` on a file (its fsync), and no call at all on a SQL store,
whose commits are already as durable as its option makes them (a worker-thread hop saved per turn)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree import SessionManager, open_repo
from sessiontree.agent import ScriptedModel, reply, tool_call
from tests.agent.support import CALCULATE, Recorder, harness

pytestmark = pytest.mark.anyio


def _counting_sync(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = SessionManager.sync

    def sync(self: SessionManager) -> None:
        calls.append(1)
        original(self)

    monkeypatch.setattr(SessionManager, "sync", sync)
    return calls


def _model() -> ScriptedModel:
    return ScriptedModel([reply(tool_call("calculate", {"expression": "1+1"})), reply("2")])


async def test_a_file_session_syncs_at_every_save_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting_sync(monkeypatch)
    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    try:
        h = harness(_model(), manager, tools=[CALCULATE])
        events = Recorder()
        h.subscribe(events)
        await h.prompt("add")
        assert len(events.of("save_point")) == 2
        assert len(calls) >= 2  # one per save point (and one at the end of the run)
    finally:
        manager.close()


async def test_a_sql_session_needs_no_sync_and_keeps_every_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting_sync(monkeypatch)
    url = f"sqlite:///{tmp_path}/store.db"
    with open_repo(url) as repo:
        manager = repo.create("/work/project")
        session_id = manager.get_session_id()
        try:
            assert manager.store.durable_on_commit and not manager.store.remote
            h = harness(_model(), manager, tools=[CALCULATE])
            events = Recorder()
            h.subscribe(events)
            await h.prompt("add")
            assert len(events.of("save_point")) == 2
            assert calls == []
        finally:
            manager.close()
    with open_repo(url) as repo:
        stored = repo.open(session_id, read_only=True)
        roles = [e["message"]["role"] for e in stored.get_entries() if e["type"] == "message"]
        stored.close()
    assert roles == ["user", "assistant", "toolResult", "assistant"]
