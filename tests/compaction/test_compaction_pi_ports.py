"""Ports of pi's compaction tests (coding-agent compaction*.test.ts and the harness compaction tests) that
need no session manager: thresholds, cut points, preparation, serialization and summary generation
against a scripted in-process model."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.compaction import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    compact,
    find_cut_point,
    find_turn_start_index,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from sessiontree.llm.tokens import estimate_context_tokens
from sessiontree.tree.context import build_session_context
from tests.compaction.support import (
    PathBuilder,
    ScriptedSummarizer,
    SessionIndex,
    assistant_msg,
    call,
    conversation,
    read_session_entries,
    run,
    tool_result_msg,
    user_msg,
)
from tests.conftest import require_conformance

# --- shouldCompact ---------------------------------------------------------------------------------------


def test_should_compact_threshold_is_strict_and_respects_enabled() -> None:
    settings = CompactionSettings(enabled=True, reserve_tokens=10000, keep_recent_tokens=20000)
    assert should_compact(95000, 100000, settings) is True
    assert should_compact(89000, 100000, settings) is False
    assert should_compact(90000, 100000, settings) is False  # strictly greater than window - reserve
    assert should_compact(95000, 100000, CompactionSettings(enabled=False, reserve_tokens=10000)) is False


def test_default_settings_are_pis() -> None:
    assert DEFAULT_COMPACTION_SETTINGS.to_dict() == {
        "enabled": True,
        "reserveTokens": 16384,
        "keepRecentTokens": 20000,
    }


# --- findCutPoint / findTurnStartIndex --------------------------------------------------------------------


def test_cut_point_lands_on_a_user_or_assistant_message() -> None:
    entries = conversation(10).entries
    result = find_cut_point(entries, 0, len(entries), 500)
    kept = entries[result.first_kept_entry_index]
    assert kept["type"] == "message" and kept["message"]["role"] in ("user", "assistant")
    assert 0 < result.first_kept_entry_index < len(entries)


def test_cut_point_with_no_valid_cut_points_returns_start() -> None:
    b = PathBuilder()
    b.add("model_change", provider="a", modelId="b")
    b.add("thinking_level_change", thinkingLevel="high")
    result = find_cut_point(b.entries, 0, len(b.entries), 1)
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (0, -1, False)
    lone = PathBuilder()
    lone.tool_result("c1", "read", "x" * 100)
    result = find_cut_point(lone.entries, 0, 1, 1)
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (0, -1, False)


def test_single_assistant_gives_index_zero() -> None:
    b = PathBuilder()
    b.assistant("only " + "x" * 500)
    assert find_cut_point(b.entries, 0, 1, 10).first_kept_entry_index == 0


def test_everything_fits_keeps_everything() -> None:
    entries = conversation(5).entries
    result = find_cut_point(entries, 0, len(entries), 50000)
    assert (result.first_kept_entry_index, result.is_split_turn) == (0, False)


def test_cut_at_assistant_message_is_a_split_turn() -> None:
    b = PathBuilder()
    b.user("first")
    b.assistant("reply")
    b.user("second: do a lot of work")  # index 2 starts the turn that gets split
    b.assistant("step 1 " + "s" * 4000, [call("c1", "read", path="a.py")])
    b.tool_result("c1", "read", "r" * 4000)
    b.assistant("step 2 " + "s" * 400)
    result = find_cut_point(b.entries, 0, len(b.entries), 1000)
    assert b.entries[result.first_kept_entry_index]["message"]["role"] == "assistant"
    assert result.is_split_turn is True
    assert result.turn_start_index == 2


def test_turn_starts_and_cut_edge_cases() -> None:
    b = PathBuilder()
    b.add("model_change", provider="a", modelId="b")
    b.add("branch_summary", fromId="x", summary="s")
    b.add("custom_message", customType="t", content="c", display=True)
    assert find_turn_start_index(b.entries, 0, 0) == -1  # model_change is not a turn start
    assert find_turn_start_index(b.entries, 1, 0) == 1  # branch_summary is
    assert find_turn_start_index(b.entries, 2, 0) == 2  # custom_message is

    t = PathBuilder()
    t.add("thinking_level_change", thinkingLevel="high")
    t.add("branch_summary", fromId="x", summary="s")
    t.add("custom_message", customType="t", content="c", display=True)
    assert find_cut_point(t.entries, 0, 3, 1).first_kept_entry_index == 0

    c = PathBuilder()
    c.user("u")
    c.compaction("sum", "e1")
    c.assistant("a" * 40)
    assert (
        find_cut_point(c.entries, 0, 3, 1).first_kept_entry_index == 2
    )  # the scan back stops at a compaction


def test_cut_on_settings_before_a_user_message_is_not_a_split_turn() -> None:
    # Deliberate difference from pi: pi reports the whole previous turn as a split-turn prefix here.
    b = PathBuilder()
    b.user("old request")
    b.assistant("old answer " + "o" * 200)
    b.add("thinking_level_change", thinkingLevel="high")
    b.user("new request " + "n" * 400)
    b.assistant("new answer " + "m" * 400)
    result = find_cut_point(b.entries, 0, len(b.entries), 150)
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (2, -1, False)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=150))
    assert prep is not None
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant"]
    assert prep.turn_prefix_messages == []


# --- prepareCompaction ------------------------------------------------------------------------------------


def test_prepare_returns_none_when_already_compacted_or_empty() -> None:
    assert prepare_compaction([], DEFAULT_COMPACTION_SETTINGS) is None
    b = conversation(2)
    b.compaction("s", "e1")
    assert prepare_compaction(b.entries, DEFAULT_COMPACTION_SETTINGS) is None


def test_prepare_uses_latest_compaction_summary_as_previous_summary() -> None:
    b = conversation(3)
    b.compaction("first summary", "e3")
    b.user("after " + "x" * 400)
    b.assistant("done " + "y" * 400)
    b.compaction("second summary", "e9")
    b.user("more " + "z" * 400)
    b.assistant("ok " + "w" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=150))
    assert prep is not None
    assert prep.previous_summary == "second summary"
    assert prep.first_kept_entry_id
    context = build_session_context(b.entries, b.entries[-1]["id"])
    assert prep.tokens_before == estimate_context_tokens(context.messages).tokens
    assert all(m["role"] != "compactionSummary" for m in prep.messages_to_summarize)


def test_repeated_compaction_keeps_previously_kept_messages_when_they_fit() -> None:
    b = PathBuilder()
    b.user("u1")
    b.assistant("a1")
    u2 = b.user("u2")
    b.assistant("a2")
    b.compaction("First summary", u2["id"])
    u3 = b.user("u3")
    b.assistant("a3")
    prep = prepare_compaction(b.entries, DEFAULT_COMPACTION_SETTINGS)
    assert prep is not None
    assert prep.first_kept_entry_id == u2["id"]
    assert prep.previous_summary == "First summary"
    assert prep.messages_to_summarize == []
    context = build_session_context(b.entries, b.entries[-1]["id"])
    assert prep.tokens_before == estimate_context_tokens(context.messages).tokens
    # After a second compaction keeping from u2, the context still holds u2 and u3.
    b.compaction("Second summary", prep.first_kept_entry_id, retainedTail=prep.retained_tail)
    texts = [m["content"][0]["text"] for m in build_session_context(b.entries).messages[1:]]
    assert texts == ["u2", "a2", "u3", "a3"] and u3["id"] == "e6"


def test_repeated_compaction_resummarizes_kept_messages_once_the_window_moves_past_them() -> None:
    b = PathBuilder()
    b.user("u1 " + "x" * 400)
    b.assistant("a1 " + "x" * 400)
    u2 = b.user("u2 " + "x" * 400)
    b.assistant("a2 " + "x" * 400)
    b.compaction("First summary", u2["id"])
    b.user("u3 " + "x" * 400)
    b.assistant("a3 " + "x" * 400)
    b.user("u4 " + "x" * 400)
    b.assistant("a4 " + "x" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=100))
    assert prep is not None
    summarized = [m["content"][0]["text"][:2] for m in prep.messages_to_summarize]
    assert summarized[:2] == ["u2", "a2"] and "u3" in summarized
    assert all(m["role"] != "compactionSummary" for m in prep.messages_to_summarize)


def test_split_turn_with_previous_file_details() -> None:
    b = PathBuilder()
    b.user("start")
    b.assistant("ok")
    b.compaction(
        "old", "e1", details={"readFiles": ["old-read.ts"], "modifiedFiles": ["old-mod.ts"]}, fromHook=False
    )
    b.user("write the file")
    b.assistant("writing", [call("c1", "write", path="new.ts", content="x")])
    b.tool_result("c1", "write", "ok")
    b.assistant("done " + "d" * 200)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=1))
    assert prep is not None
    assert prep.is_split_turn
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert prep.file_ops.to_dict() == {
        "read": ["old-read.ts"],
        "written": ["new.ts"],
        "edited": ["old-mod.ts"],
    }


def test_hook_compaction_details_are_not_carried_over() -> None:
    b = PathBuilder()
    b.user("start")
    b.compaction("hook", "e1", details={"readFiles": ["r"], "modifiedFiles": ["m"]}, fromHook=True)
    b.user("next " + "n" * 100)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=1))
    assert prep is not None and prep.file_ops.to_dict() == {"read": [], "written": [], "edited": []}


def test_custom_and_branch_summary_entries_are_summarized() -> None:
    b = PathBuilder()
    b.add("branch_summary", fromId="x", summary="")
    b.add("custom_message", customType="note", content="hello", display=True)
    b.assistant("noted")
    b.user("latest " + "l" * 100)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=1))
    assert prep is not None
    # An empty branch summary is still summarized (pi's rule), and a custom message becomes role custom.
    assert [m["role"] for m in prep.messages_to_summarize] == ["branchSummary", "custom", "assistant"]
    assert prep.messages_to_summarize[1] == {
        "role": "custom",
        "customType": "note",
        "content": "hello",
        "display": True,
        "timestamp": 1735689602000,
    }


def test_retained_tail_is_summarized_when_first_kept_is_off_the_path() -> None:
    # sessiontree's retainedTail (SPEC B§13): the kept messages travel with the compaction, so they are
    # summarized by the next compaction even when firstKeptEntryId can no longer be found.
    kept = [user_msg("kept question " + "k" * 400), assistant_msg("kept answer " + "k" * 400)]
    b = PathBuilder()
    b.compaction("First summary", "gone", retainedTail=kept)
    b.user("new question " + "n" * 400)
    b.assistant("new answer " + "n" * 400, [call("c9", "edit", path="src/kept.py")])
    b.tool_result("c9", "edit", "ok")
    b.user("latest " + "z" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=100))
    assert prep is not None
    assert prep.boundary_start == 1
    assert prep.messages_to_summarize[:2] == kept
    context = build_session_context(b.entries)
    assert context.messages[1:3] == kept  # readers prefer retainedTail
    assert prep.tokens_before == estimate_context_tokens(context.messages).tokens


# --- serialization ----------------------------------------------------------------------------------------


def test_serialization_truncates_long_tool_results_only() -> None:
    long = serialize_conversation([tool_result_msg("c", "read", "x" * 5000)])
    assert long == "[Tool result]: " + "x" * 2000 + "\n\n[... 3000 more characters truncated]"
    assert (
        serialize_conversation([tool_result_msg("c", "read", "y" * 1500)]) == "[Tool result]: " + "y" * 1500
    )
    text = "z" * 5000
    assert serialize_conversation([user_msg(text)]) == f"[User]: {text}"
    assert serialize_conversation([assistant_msg(text)]) == f"[Assistant]: {text}"


def test_serialization_of_thinking_and_tool_calls() -> None:
    message = assistant_msg("visible", [call("c1", "edit", path="a.ts", edits=[{"old": "1"}])])
    message["content"].insert(0, {"type": "thinking", "thinking": "hmm"})
    assert serialize_conversation([message]) == (
        '[Assistant thinking]: hmm\n\n[Assistant]: visible\n\n[Assistant tool calls]: edit(path="a.ts", '
        'edits=[{"old":"1"}])'
    )


# --- large session fixture --------------------------------------------------------------------------------


def _large_session_path() -> list[dict[str, Any]]:
    source = require_conformance() / "pi-fixtures" / "large-session" / "session.jsonl"
    if not source.is_file():
        pytest.skip("pi's large-session fixture is not present")
    index = SessionIndex(read_session_entries(source))
    return index.get_branch(index.entries[-1]["id"])


def test_large_session_cut_point_and_context() -> None:
    path = _large_session_path()
    assert len(path) > 100
    result = find_cut_point(path, 0, len(path), DEFAULT_COMPACTION_SETTINGS.keep_recent_tokens)
    kept = path[result.first_kept_entry_index]
    assert kept["type"] == "message" and kept["message"]["role"] in ("user", "assistant")
    context = build_session_context(path)
    assert len(context.messages) > 100 and context.model is not None


def test_large_session_compaction_with_scripted_model() -> None:
    path = _large_session_path()
    prep = prepare_compaction(path, DEFAULT_COMPACTION_SETTINGS)
    assert prep is not None and prep.tokens_before > 0
    model = ScriptedSummarizer({"history": ["## Goal\n" + "summary text " * 20], "turn_prefix": ["prefix"]})
    result = run(compact, prep, model)
    assert len(result.summary) > 100 and result.first_kept_entry_id == prep.first_kept_entry_id
    compaction = {
        "type": "compaction",
        "id": "c0ffee00",
        "parentId": path[-1]["id"],
        "timestamp": "2025-11-21T00:00:00.000Z",
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
        "retainedTail": result.retained_tail,
    }
    before = build_session_context(path).messages
    after = build_session_context([*path, compaction]).messages
    assert len(after) < len(before)
    assert after[0]["role"] == "compactionSummary" and result.summary in after[0]["summary"]
