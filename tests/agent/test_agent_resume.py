"""``resume()`` on sessions whose last run was cut short: tool calls without results (repeatable tools run
again, the others get a persisted "interrupted" result), tool results or a prompt without a reply, and an
overflow that was compacted but not retried. A finished run is left alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, ScriptedModel, coding_tools, reply
from sessiontree.agent.resume import INTERRUPTED_TEXT, find_interruption
from tests.agent.support import Recorder, roles, texts

pytestmark = pytest.mark.anyio

MODEL = ScriptedModel()


def assistant(
    *calls: tuple[str, str, dict[str, Any]], stop: str | None = None, text: str = ""
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {"role": "assistant", "content": content, "api": MODEL.api, "provider": MODEL.provider, "model": MODEL.id,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": stop or ("toolUse" if calls else "stop"), "timestamp": 5}  # fmt: skip


def result(call_id: str, name: str, text: str) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": [{"type": "text", "text": text}],
            "isError": False, "timestamp": 6}  # fmt: skip


def prompt(manager: SessionManager, text: str = "do the work") -> None:
    manager.append_model_change(MODEL.provider, MODEL.id)
    manager.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})


async def test_unanswered_tool_calls_are_rerun_when_repeatable_and_reported_otherwise(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the notes")
    manager = SessionManager.in_memory(str(tmp_path))
    prompt(manager)
    manager.append_message(
        assistant(("r1", "read", {"path": "notes.txt"}), ("w1", "write", {"path": "out.txt", "content": "x"}))
    )
    model = ScriptedModel([reply("finished")])
    h = AgentHarness(manager, model, tools=coding_tools(tmp_path))
    events = Recorder()
    h.subscribe(events)
    last = await h.resume()
    assert last is not None and texts(last) == "finished"
    assert events.of("resume")[0] == {
        "type": "resume",
        "kind": "tool_calls",
        "rerun": ["r1"],
        "interrupted": ["w1"],
    }
    results = [
        e["message"]
        for e in manager.get_entries()
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert [(r["toolCallId"], r["isError"]) for r in results] == [("r1", False), ("w1", True)]
    assert texts(results[0]) == "the notes"
    assert texts(results[1]) == INTERRUPTED_TEXT.format(name="write")
    assert not (tmp_path / "out.txt").exists()  # not run twice without saying so: not run again at all
    assert roles(manager) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    sent = model.requests[0].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "toolResult", "toolResult"]
    assert await h.resume() is None  # finished now


async def test_a_partly_answered_round_only_completes_the_missing_calls(tmp_path: Path) -> None:
    manager = SessionManager.in_memory(str(tmp_path))
    prompt(manager)
    manager.append_message(
        assistant(("a", "bash", {"command": "echo 1"}), ("b", "bash", {"command": "echo 2"}))
    )
    manager.append_message(result("a", "bash", "1"))
    h = AgentHarness(manager, ScriptedModel([reply("ok")]), tools=coding_tools(tmp_path))
    await h.resume()
    results = [
        e["message"]
        for e in manager.get_entries()
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert [r["toolCallId"] for r in results] == ["a", "b"] and results[1]["isError"]


@pytest.mark.parametrize("tail", ["prompt", "results"])
async def test_a_prompt_or_tool_results_without_a_reply_ask_the_model_again(
    tail: str, tmp_path: Path
) -> None:
    manager = SessionManager.in_memory(str(tmp_path))
    prompt(manager)
    if tail == "results":
        manager.append_message(assistant(("a", "ls", {})))
        manager.append_message(result("a", "ls", "file"))
    model = ScriptedModel([reply("answer")])
    h = AgentHarness(manager, model, tools=coding_tools(tmp_path))
    last = await h.resume()
    assert last is not None and texts(last) == "answer"
    assert model.requests[0].messages[-1]["role"] == ("user" if tail == "prompt" else "toolResult")


async def test_a_finished_run_is_not_resumed() -> None:
    manager = SessionManager.in_memory("/w")
    prompt(manager)
    manager.append_message(assistant(text="done"))
    count = len(manager.get_entries())
    model = ScriptedModel([reply("never")])
    assert await AgentHarness(manager, model).resume() is None
    assert len(manager.get_entries()) == count and model.requests == []
    assert await AgentHarness(SessionManager.in_memory("/w"), model).resume() is None


async def test_a_cut_off_reply_fails_its_calls_instead_of_running_them(tmp_path: Path) -> None:
    manager = SessionManager.in_memory(str(tmp_path))
    prompt(manager)
    manager.append_message(assistant(("a", "read", {"path": "x"}), stop="length"))
    h = AgentHarness(manager, ScriptedModel([reply("retry")]), tools=coding_tools(tmp_path))
    await h.resume()
    failed = next(
        e["message"]
        for e in manager.get_entries()
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    )
    assert failed["isError"] and "output token limit" in texts(failed)


async def test_an_overflow_compacted_but_not_retried_is_retried() -> None:
    manager = SessionManager.in_memory("/w")
    for i in range(3):
        prompt(manager, f"old {i} " + "x" * 300)
        manager.append_message(assistant(text="y" * 300))
    prompt(manager, "the big one")
    error = assistant(stop="error")
    error["errorMessage"] = "prompt is too long: 300000 tokens > 200000 maximum"
    manager.append_message(error)
    first_kept = manager.get_entries()[-2]["id"]
    manager.append_compaction("earlier work", first_kept, 5000)
    model = ScriptedModel([reply("fits")])
    h = AgentHarness(manager, model)
    assert find_interruption(manager.build_session_context().messages, "compaction") is not None
    last = await h.resume()
    assert last is not None and texts(last) == "fits"
    sent = model.requests[0].messages
    assert sent[-1]["role"] == "user" and texts(sent[-1]) == "the big one"


def test_find_interruption_reads_only_the_end_of_the_context() -> None:
    user = {"role": "user", "content": "x", "timestamp": 1}
    assert find_interruption([], None) is None
    assert find_interruption([user], "message").kind == "reply"  # type: ignore[union-attr]
    aborted = assistant(("a", "read", {}), stop="aborted")
    assert find_interruption([user, aborted], "message") is None  # an aborted run finished
    calls = find_interruption([user, assistant(("a", "read", {}), ("b", "ls", {}))], "message")
    assert calls is not None and [c["id"] for c in calls.missing] == ["a", "b"]
