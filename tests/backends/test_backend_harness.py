"""The agent harness on every back end: a scripted run with tool calls persists the same turns on memory,
JSONL, SQLite and PostgreSQL, each turn's buffered writes land in one transaction, and ``AgentHarness.open``
takes a store URL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, ScriptedModel, coding_tools
from sessiontree.agent.scripted import reply, tool_call
from tests.backends.conftest import Backend


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            reply(tool_call("ls", {"path": "."})),
            reply(tool_call("read", {"path": "notes.txt"}), tool_call("ls", {"path": "."})),
            reply("Both files are there."),
        ]
    )


def _roles_and_text(manager: SessionManager) -> list[tuple[str, str]]:
    out = []
    for message in manager.build_session_context().messages:
        content = message.get("content")
        text = (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
        )
        out.append((message["role"], text))
    return out


def _run(manager: SessionManager, work: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    harness = AgentHarness(manager, _script(), tools=coding_tools(work))
    events: list[dict[str, Any]] = []
    harness.subscribe(events.append)

    async def main() -> dict[str, Any]:
        last = await harness.prompt("look around")
        await harness.wait_for_idle()
        return last

    return anyio.run(main), events


def test_a_scripted_run_persists_the_same_turns_on_every_back_end(backend: Backend, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    manager = backend.create(str(work))
    last, events = _run(manager, work)
    assert last["stopReason"] == "stop"
    assert [e["hadPendingMutations"] for e in events if e["type"] == "save_point"] == [False, False, False]
    again = backend.reopen(manager)
    roles = [role for role, _ in _roles_and_text(again)]
    assert roles == ["user", "assistant", "toolResult", "assistant", "toolResult", "toolResult", "assistant"]
    reference = SessionManager.in_memory(str(work))
    _run(reference, work)
    assert _roles_and_text(again) == _roles_and_text(reference)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_harness_opens_a_session_by_store_url(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = (
        str(request.getfixturevalue("postgres_url")) if kind == "postgres" else f"sqlite:///{tmp_path}/h.db"
    )
    work = tmp_path / "work"
    work.mkdir()
    harness = AgentHarness.open(store, ScriptedModel([reply("hello")]), cwd=str(work))
    anyio.run(harness.prompt, "hi")
    sid = harness.session.get_session_id()
    harness.session.close()
    again = AgentHarness.open(store, ScriptedModel([reply("again")]), session_id=sid[:8])
    anyio.run(again.prompt, "once more")
    texts = [text for _, text in _roles_and_text(again.session)]
    assert texts == ["hi", "hello", "once more", "again"]
    again.session.close()


def test_a_flush_is_one_transaction_where_the_store_has_them(backend: Backend) -> None:
    from sessiontree import SessionNotFoundError
    from sessiontree.agent.write_buffer import WriteBuffer

    manager = backend.create()
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    buffer = WriteBuffer()
    buffer.push("custom", "first", {"n": 1})
    buffer.push("label", "no-such-entry", "x")  # fails: the label's target does not exist
    with pytest.raises(SessionNotFoundError):
        buffer.apply_all(manager)
    stored = [e["type"] for e in backend.reopen(manager, read_only=False).get_entries()]
    if manager.index.atomic:  # SQL: nothing of the failed flush was written, all of it stays queued
        assert stored == ["message"] and len(buffer) == 2
    else:  # files and memory write as they go: the first write is in and left the queue
        assert stored == ["message", "custom"] and len(buffer) == 1


def test_navigation_with_a_branch_summary_on_every_back_end(backend: Backend) -> None:
    manager = backend.create()
    harness = AgentHarness(manager, ScriptedModel([reply("first answer"), reply("second answer")]))

    async def main() -> Any:
        await harness.prompt("first question")
        await harness.prompt("second question")
        users = [
            e["id"]
            for e in manager.get_entries()
            if e["type"] == "message" and e["message"]["role"] == "user"
        ]
        return await harness.navigate_tree(users[1], summarize=True)

    moved = anyio.run(main)
    assert moved.editor_text == "second question"
    again = backend.reopen(manager)
    kinds = [e["type"] for e in again.get_branch()]
    assert kinds[-1] == "branch_summary"
    roles = [m["role"] for m in again.build_session_context(again.get_branch()[-1]["id"]).messages]
    assert roles == ["user", "assistant", "branchSummary"]
