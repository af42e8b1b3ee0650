"""Tree navigation, fork, clone and new in the harness: ports of pi's agent-session-tree-navigation and
agent-session-branching tests (scripted model, offline or scripted summaries), the next request after a
navigation, and the settings a branch restores (SPEC A2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, HarnessError, ScriptedModel, reply
from sessiontree.compaction import CompactionSettings
from tests.agent.support import CALCULATE, GET_CURRENT_TIME, Recorder, harness, session_kinds, texts

pytestmark = pytest.mark.anyio

SETTINGS = CompactionSettings(keep_recent_tokens=1)


async def three_turns(h: AgentHarness, model: ScriptedModel) -> dict[str, str]:
    """Prompts A, C, E answered B, D, F; returns the ids of the six messages by their text."""
    model.add(reply("B"), reply("D"), reply("F"))
    for text in ("A", "C", "E"):
        await h.prompt(text)
    return {texts(e["message"]): e["id"] for e in h.session.get_entries() if e["type"] == "message"}


def summarizer(text: str = "## Goal\nexplored the other way") -> ScriptedModel:
    return ScriptedModel([reply(text)] * 4, id="summarizer")


async def test_navigating_to_a_user_message_puts_its_text_in_the_editor() -> None:
    manager = SessionManager.in_memory("/w")
    manager.append_message(
        {"role": "user", "content": [{"type": "text", "text": "root question"}], "timestamp": 1}
    )
    root = manager.get_leaf_id()
    model = ScriptedModel([reply("answer")])
    h = AgentHarness(manager, model)
    await h.prompt("follow-up")
    move = await h.navigate_tree(root)  # type: ignore[arg-type]
    assert move.editor_text == "root question" and manager.get_leaf_id() is None


async def test_navigating_to_a_non_user_message_has_no_editor_text() -> None:
    model = ScriptedModel()
    h = harness(model)
    ids = await three_turns(h, model)
    move = await h.navigate_tree(ids["B"])
    assert move.editor_text is None and h.session.get_leaf_id() == ids["B"]


async def test_navigation_to_a_user_message_with_a_summary_feeds_the_next_request_the_summary_only() -> None:
    model = ScriptedModel()
    h = harness(model, summarizer=summarizer())
    ids = await three_turns(h, model)
    move = await h.navigate_tree(ids["C"], summarize=True)
    assert move.editor_text == "C"
    summary = move.summary_entry
    assert summary is not None and summary["parentId"] == ids["B"] and summary["fromId"] == ids["F"]
    assert h.session.get_leaf_id() == summary["id"]
    assert {c["id"] for c in h.session.get_children(ids["B"])} == {ids["C"], summary["id"]}
    model.add(reply("G"))
    await h.prompt("C, rephrased")
    request = model.requests[-1]
    sent = [texts(m) for m in request.messages]
    assert sent[:2] == ["A", "B"]
    assert "<branch_exploration_summary>" in sent[2] and "explored the other way" in sent[2]
    assert sent[3] == "C, rephrased"
    assert not {"C", "D", "E", "F"} & set(sent)
    # the file holds both branches
    entries = h.session.get_entries()
    assert {ids["D"], ids["F"]} <= {e["id"] for e in entries}


async def test_summary_attaches_at_the_selected_assistant_message() -> None:
    model = ScriptedModel()
    h = harness(model, summarizer=summarizer())
    ids = await three_turns(h, model)
    move = await h.navigate_tree(ids["B"], summarize=True)
    assert move.editor_text is None
    assert move.summary_entry is not None and move.summary_entry["parentId"] == ids["B"]
    assert h.session.get_leaf_id() == move.summary_entry["id"]


async def test_summary_for_the_first_user_message_starts_at_its_parent() -> None:
    model = ScriptedModel()
    h = harness(model, summarizer=summarizer())
    ids = await three_turns(h, model)
    parent = h.session.get_entry(ids["A"])["parentId"]  # the model_change recorded before the first prompt
    move = await h.navigate_tree(ids["A"], summarize=True)
    assert move.summary_entry is not None and move.summary_entry["parentId"] == parent
    assert move.summary_entry["summary"]


async def test_aborting_a_summary_cancels_the_navigation_and_writes_nothing() -> None:
    model = ScriptedModel()
    slow = ScriptedModel([reply("never", hang_after=0)], id="summarizer")
    h = harness(model, summarizer=slow)
    ids = await three_turns(h, model)
    before = (len(h.session.get_entries()), h.session.get_leaf_id())
    phases: list[str] = []
    result: dict[str, Any] = {}
    async with anyio.create_task_group() as group:

        async def navigate() -> None:
            result["move"] = await h.navigate_tree(ids["C"], summarize=True)

        group.start_soon(navigate)
        while not slow.requests:
            await anyio.sleep(0.001)
        phases.append(h.phase)
        await h.abort()
    assert phases == ["branch_summary"]
    assert result["move"].cancelled is True and result["move"].summary_entry is None
    assert (len(h.session.get_entries()), h.session.get_leaf_id()) == before


async def test_navigation_without_summarize_writes_nothing_and_same_position_is_a_no_op() -> None:
    model = ScriptedModel()
    h = harness(model)
    ids = await three_turns(h, model)
    count = len(h.session.get_entries())
    await h.navigate_tree(ids["C"])
    assert len(h.session.get_entries()) == count
    leaf = h.session.get_leaf_id()
    move = await h.navigate_tree(leaf)  # type: ignore[arg-type]
    assert move.old_leaf_id == move.new_leaf_id == leaf and not move.cancelled


async def test_custom_summarization_instructions_reach_the_summarizer() -> None:
    model = ScriptedModel()
    summary_model = summarizer()
    h = harness(model, summarizer=summary_model)
    ids = await three_turns(h, model)
    await h.navigate_tree(ids["C"], summarize=True, focus="say BANANA")
    assert "Additional focus: say BANANA" in summary_model.requests[0].texts()[0]


async def test_navigating_between_branches() -> None:
    model = ScriptedModel()
    h = harness(model, summarizer=summarizer())
    ids = await three_turns(h, model)
    await h.navigate_tree(ids["B"])
    model.add(reply("branch answer"))
    await h.prompt("Main branch continue")
    move = await h.navigate_tree(ids["C"], summarize=True)
    assert move.editor_text == "C" and move.summary_entry is not None


async def test_unknown_targets_are_invalid_arguments() -> None:
    h = harness(ScriptedModel())
    with pytest.raises(HarnessError) as error:
        await h.navigate_tree("nope")
    assert error.value.kind == "invalid_argument" and "Entry nope not found" in str(error.value)


async def test_the_tree_hook_can_cancel_provide_a_summary_and_a_label() -> None:
    model = ScriptedModel()
    h = harness(model)
    ids = await three_turns(h, model)
    remove = h.on("session_before_tree", lambda event: {"cancel": True})
    assert (await h.navigate_tree(ids["C"])).cancelled
    remove()
    h.on("session_before_tree", lambda event: {"summary": {"summary": "hook summary"}, "label": "retry here"})
    events = Recorder()
    h.subscribe(events)
    move = await h.navigate_tree(ids["C"])  # a hook summary is used even without summarize
    assert move.summary_entry is not None and move.summary_entry["summary"] == "hook summary"
    assert move.summary_entry["fromHook"] is True
    assert h.session.get_label(move.summary_entry["id"]) == "retry here"
    tree_event = events.of("session_tree")[0]
    assert tree_event["oldLeafId"] == ids["F"] and tree_event["fromHook"] is True


async def test_navigation_restores_the_model_thinking_level_and_tools_of_the_branch() -> None:
    first = ScriptedModel([reply("one"), reply("two")], id="first")
    second = first.variant(id="second")
    h = harness(first, tools=[CALCULATE, GET_CURRENT_TIME])
    await h.prompt("on the first model")
    branch_point = h.session.get_leaf_id()
    await h.set_model(second)
    await h.set_thinking_level("high")
    await h.set_active_tools(["get_current_time"])
    await h.prompt("on the second model")
    events = Recorder()
    h.subscribe(events)
    count = len(h.session.get_entries())
    await h.navigate_tree(branch_point)  # type: ignore[arg-type]
    assert h.model is first and h.thinking_level == "off"
    assert [t.name for t in h.active_tools] == ["calculate", "get_current_time"]
    assert {e["type"] for e in events.events} >= {"model_update", "thinking_level_update", "tools_update"}
    assert all(
        e["source"] == "restore" for e in events.events if e["type"] in ("model_update", "tools_update")
    )
    assert len(h.session.get_entries()) == count  # nothing was appended to restore


# -- fork, clone, new (pi's agent-session-branching tests) -------------------------------------------------
async def test_forking_from_the_only_message_gives_an_empty_session(tmp_path: Path) -> None:
    with session_kinds("file", tmp_path) as manager:
        model = ScriptedModel([reply("hi")])
        manager.append_message({"role": "user", "content": "only message", "timestamp": 1})
        h = AgentHarness(manager, model)
        first = manager.get_leaf_id()
        old_file = manager.get_session_file()
        result = await h.fork(first)  # type: ignore[arg-type]
        assert result.selected_text == "only message"
        assert manager.get_entries() == [] and result.session_file != old_file
        assert result.session_file is not None and not Path(result.session_file).exists()
        assert manager.get_header()["parentSession"] == old_file


async def test_forking_in_memory() -> None:
    manager = SessionManager.in_memory("/w")
    manager.append_message({"role": "user", "content": "only message", "timestamp": 1})
    h = AgentHarness(manager, ScriptedModel())
    result = await h.fork(manager.get_leaf_id())  # type: ignore[arg-type]
    assert result.selected_text == "only message" and result.session_file is None
    assert manager.get_entries() == []


async def test_forking_from_the_middle_of_a_conversation(tmp_path: Path) -> None:
    with session_kinds("file", tmp_path) as manager:
        model = ScriptedModel()
        h = harness(model, manager)
        ids = await three_turns(h, model)
        result = await h.fork(ids["C"])
        assert result.selected_text == "C"
        assert [texts(m) for m in manager.build_session_context().messages] == ["A", "B"]
        model.add(reply("forked answer"))
        await h.prompt("C again")
        assert [texts(m) for m in model.requests[-1].messages] == ["A", "B", "C again"]


async def test_forking_needs_a_user_message() -> None:
    model = ScriptedModel()
    h = harness(model)
    ids = await three_turns(h, model)
    with pytest.raises(HarnessError, match="Invalid entry ID for forking"):
        await h.fork(ids["B"])


async def test_clone_and_new_session(tmp_path: Path) -> None:
    with session_kinds("file", tmp_path) as manager:
        model = ScriptedModel()
        h = harness(model, manager)
        await three_turns(h, model)
        original = manager.get_session_file()
        cloned = await h.clone()
        assert cloned != original and [texts(m) for m in manager.build_session_context().messages] == list(
            "ABCDEF"
        )
        fresh = await h.new_session()
        assert fresh not in (original, cloned) and manager.get_entries() == []
        model.add(reply("new"))
        await h.prompt("start over")
        assert [texts(m) for m in model.requests[-1].messages] == ["start over"]


async def test_clone_needs_a_leaf() -> None:
    h = harness(ScriptedModel())
    with pytest.raises(HarnessError, match="Nothing to clone yet"):
        await h.clone()
