"""End to end through the official SDKs against the loopback SSE server, for each wire format: a three-turn
coding task on a temporary directory (read, edit, bash), navigation back to the first user message with a
summary (written by the same model), then a new prompt. The request after the navigation carries the branch
summary and none of the abandoned turns; the file holds both branches and re-serializes byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, coding_tools
from sessiontree.format.pi_json import dumps, loads
from sessiontree.llm import StreamOptions
from sessiontree.llm.types import Api
from tests.agent.wire_checks import request_problems
from tests.llm.fake_servers import fake_server, reply_for
from tests.llm.wire_support import APIS, model_for

pytestmark = pytest.mark.anyio


def tool(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, str, list[str]]:
    """A tool call whose JSON arguments arrive in two deltas."""
    raw = json.dumps(arguments)
    return call_id, name, [raw[: len(raw) // 2], raw[len(raw) // 2 :]]


def request_text(body: Any) -> str:
    return json.dumps(body)


@pytest.mark.parametrize("api", APIS)
async def test_a_coding_task_then_navigation_with_a_summary_then_a_new_prompt(
    api: Api, tmp_path: Path
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "app.py").write_text('print("Helo, world")\n')
    manager = SessionManager.create(str(work), tmp_path / "sessions")
    with fake_server() as server:
        model = model_for(api, server.url)
        server.replies += [
            reply_for(api, text=["Let me read it."], tool_calls=[tool("call_1", "read", {"path": "app.py"})], stop="toolUse"),
            reply_for(api, tool_calls=[tool("call_2", "edit", {"path": "app.py", "edits": [{"oldText": "Helo", "newText": "Hello"}]})], stop="toolUse"),
            reply_for(api, tool_calls=[tool("call_3", "bash", {"command": "python3 app.py"})], stop="toolUse"),
            reply_for(api, text=["Fixed: it prints Hello, world."]),
            reply_for(api, text=["## Goal\nFix the greeting.\n## Key Learnings\nThe typo was Helo."]),
            reply_for(api, text=["Here is a farewell."]),
        ]  # fmt: skip
        h = AgentHarness(
            manager,
            model,
            tools=coding_tools(work),
            api_key="test-key",
            stream_options=StreamOptions(max_retries=0),
            summarizer=model,
        )
        with anyio.fail_after(60):
            first = await h.prompt("Fix the greeting in app.py")
        assert first["stopReason"] == "stop", first.get("errorMessage")
        assert (work / "app.py").read_text() == 'print("Hello, world")\n'
        results = [
            e["message"]
            for e in manager.get_entries()
            if e["type"] == "message" and e["message"]["role"] == "toolResult"
        ]
        assert [r["toolName"] for r in results] == ["read", "edit", "bash"] and not any(
            r["isError"] for r in results
        )
        assert results[2]["content"][0]["text"] == "Hello, world"
        first_user = next(
            e["id"]
            for e in manager.get_entries()
            if e["type"] == "message" and e["message"]["role"] == "user"
        )
        abandoned = {e["id"] for e in manager.get_entries()} - {first_user}
        with anyio.fail_after(60):
            move = await h.navigate_tree(first_user, summarize=True)
        assert move.editor_text == "Fix the greeting in app.py" and move.summary_entry is not None
        assert "The typo was Helo." in move.summary_entry["summary"]
        with anyio.fail_after(60):
            last = await h.prompt("Add a farewell message")
        assert last["stopReason"] == "stop"

    bodies = [r.body for r in server.requests]
    assert len(bodies) == 6
    summary_request = request_text(bodies[4])
    assert "<conversation>" in summary_request and "Let me read it." in summary_request  # the abandoned turns
    final = request_text(bodies[5])
    assert "branch_exploration_summary" in final and "The typo was Helo." in final
    assert "Add a farewell message" in final
    for gone in ("Let me read it.", "call_2", "python3 app.py", "Fixed: it prints"):
        assert gone not in final
    # the file holds both branches and every line re-serializes to the same bytes
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    lines = Path(path).read_bytes().split(b"\n")[:-1]
    assert all(dumps(loads(line)).encode() == line for line in lines)
    reopened = SessionManager.open(path, read_only=True)
    assert abandoned <= {e["id"] for e in reopened.get_entries()}
    context = reopened.build_session_context().messages
    assert [m["role"] for m in context] == ["branchSummary", "user", "assistant"]
    assert all(not p for p in request_problems(context).values())
