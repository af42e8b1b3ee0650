"""Ports of pi's summary-generation tests (compaction-summary-reasoning.test.ts and the harness compaction
tests): prompts, output budgets, reasoning, errors and the split-turn combination, against a scripted
in-process model."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.compaction import (
    DEFAULT_COMPACTION_SETTINGS,
    NO_PRIOR_HISTORY,
    CompactionError,
    CompactionSettings,
    compact,
    generate_summary,
    prepare_compaction,
)
from tests.compaction.support import PathBuilder, ScriptedSummarizer, call, conversation, run, user_msg

# --- summary generation -----------------------------------------------------------------------------------


def _split_preparation(reserve: int = 16384) -> Any:
    b = PathBuilder()
    b.user("old question " + "o" * 200)
    b.assistant("old answer " + "o" * 200, [call("c0", "read", path="a.ts")])
    b.tool_result("c0", "read", "content")
    b.user("new question")
    b.assistant("working " + "w" * 100, [call("c1", "edit", path="b.ts")])
    b.tool_result("c1", "edit", "ok")
    b.assistant("done " + "d" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(reserve_tokens=reserve, keep_recent_tokens=50))
    assert prep is not None and prep.is_split_turn and prep.turn_prefix_messages
    return prep


def test_reasoning_passes_only_for_reasoning_models_with_thinking_on() -> None:
    messages = [user_msg("hi")]
    for supports, level, expected in [
        (True, "medium", "medium"),
        (True, "off", None),
        (True, None, None),
        (False, "medium", None),
    ]:
        model = ScriptedSummarizer(["s"], supports_reasoning=supports)
        run(generate_summary, messages, model, 16384, thinking_level=level)
        assert model.requests[0].reasoning == expected
    prefix_model = ScriptedSummarizer(supports_reasoning=True)
    run(compact, _split_preparation(), prefix_model, thinking_level="high")
    assert [r.reasoning for r in prefix_model.requests] == ["high", "high"]


def test_prompts_include_previous_summary_and_custom_focus() -> None:
    model = ScriptedSummarizer(["s"])
    run(
        generate_summary,
        [user_msg("hi")],
        model,
        16384,
        custom_instructions="focus",
        previous_summary="old summary",
    )
    prompt = model.requests[0].prompt
    assert prompt.startswith("<conversation>\n[User]: hi\n</conversation>\n\n")
    assert "<previous-summary>\nold summary\n</previous-summary>\n\n" in prompt
    assert "NEW conversation messages" in prompt
    assert prompt.endswith("\n\nAdditional focus: focus")
    assert model.requests[0].max_tokens == 13107


def test_summary_errors_and_aborts() -> None:
    failing = ScriptedSummarizer([{"stopReason": "error", "errorMessage": "boom"}])
    with pytest.raises(CompactionError) as error:
        run(generate_summary, [user_msg("hi")], failing, 16384)
    assert (error.value.kind, str(error.value)) == ("summarization_failed", "Summarization failed: boom")
    unknown = ScriptedSummarizer([{"stopReason": "error"}])
    with pytest.raises(CompactionError, match="Summarization failed: Unknown error"):
        run(generate_summary, [user_msg("hi")], unknown, 16384)
    aborted = ScriptedSummarizer([{"stopReason": "aborted", "errorMessage": "stopped"}])
    with pytest.raises(CompactionError) as error:
        run(generate_summary, [user_msg("hi")], aborted, 16384)
    assert (error.value.kind, str(error.value)) == ("aborted", "stopped")


def test_output_budget_is_clamped_to_the_model_cap() -> None:
    model = ScriptedSummarizer(max_output_tokens=128000)
    run(compact, _split_preparation(reserve=500000), model)
    assert sorted(r.max_tokens for r in model.requests) == [128000, 128000]
    small = ScriptedSummarizer()
    run(compact, _split_preparation(reserve=1000), small)
    assert sorted(r.max_tokens for r in small.requests) == [500, 800]


def test_compact_errors_without_writing() -> None:
    prep = _split_preparation()
    with pytest.raises(CompactionError) as error:
        run(compact, prep, ScriptedSummarizer({"history": [{"stopReason": "error", "errorMessage": "h"}]}))
    assert error.value.kind == "summarization_failed"
    with pytest.raises(CompactionError, match="Turn prefix summarization failed: prefix failed"):
        run(
            compact,
            prep,
            ScriptedSummarizer({"turn_prefix": [{"stopReason": "error", "errorMessage": "prefix failed"}]}),
        )
    with pytest.raises(CompactionError) as error:
        run(
            compact,
            prep,
            ScriptedSummarizer({"turn_prefix": [{"stopReason": "aborted", "errorMessage": "x"}]}),
        )
    assert error.value.kind == "aborted"
    prep.first_kept_entry_id = ""
    with pytest.raises(CompactionError) as error:
        run(compact, prep, ScriptedSummarizer())
    assert error.value.kind == "invalid_session"


def test_compact_refuses_an_empty_preparation() -> None:
    # Deliberate difference from pi, which would summarize nothing and write an empty summary.
    b = conversation(2)
    prep = prepare_compaction(b.entries, DEFAULT_COMPACTION_SETTINGS)
    assert prep is not None and not prep.has_content
    model = ScriptedSummarizer()
    with pytest.raises(CompactionError, match="Nothing to compact") as error:
        run(compact, prep, model)
    assert error.value.kind == "nothing_to_compact" and model.requests == []


def test_split_turn_summary_joins_history_and_prefix_with_file_lists() -> None:
    model = ScriptedSummarizer({"history": ["HISTORY"], "turn_prefix": ["PREFIX"]})
    result = run(compact, _split_preparation(), model, custom_instructions="mind the tests")
    assert result.summary == (
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"
        "\n\n<read-files>\na.ts\n</read-files>\n\n<modified-files>\nb.ts\n</modified-files>"
    )
    assert result.details == {"readFiles": ["a.ts"], "modifiedFiles": ["b.ts"]}
    prefix_request = model.by_kind("turn_prefix")[0]
    assert "PREFIX of a turn" in prefix_request.prompt and "Additional focus" not in prefix_request.prompt
    assert prefix_request.max_tokens == 8192
    assert model.by_kind("history")[0].prompt.endswith("Additional focus: mind the tests")


def test_split_turn_without_history_uses_no_prior_history() -> None:
    b = PathBuilder()
    b.user("only turn")
    b.assistant("step " + "s" * 400, [call("c1", "read", path="x")])
    b.tool_result("c1", "read", "data")
    b.assistant("final " + "f" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=50))
    assert prep is not None and prep.is_split_turn and prep.messages_to_summarize == []
    model = ScriptedSummarizer({"turn_prefix": ["P"]})
    result = run(compact, prep, model)
    assert result.summary.startswith(NO_PRIOR_HISTORY + "\n\n---\n\n**Turn Context (split turn):**\n\nP")
    assert [r.kind for r in model.requests] == ["turn_prefix"]


def test_bench_function_prepares_a_synthetic_session() -> None:
    from bench.compaction_prepare import bench_prepare_compaction

    result = bench_prepare_compaction(2000, repeat=1)
    # 500 turns of 4 entries; the last ~20000 tokens stay verbatim, everything before is summarized.
    assert result["entries"] == 2000
    assert result["messages_to_summarize"] + result["turn_prefix"] + result["retained_tail"] == 2000
    assert 0 < result["retained_tail"] < 2000


def test_split_turn_with_an_empty_prefix_takes_the_single_request_path() -> None:
    # pi marks a cut on a custom message as a split turn with nothing before it in the turn; compact()
    # then makes one history request, with no "Turn Context" part.
    b = PathBuilder()
    b.user("old " + "o" * 400)
    b.assistant("old answer " + "o" * 400)
    b.add("custom_message", customType="note", content="injected " + "i" * 400, display=True)
    b.assistant("recent " + "r" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=100))
    assert prep is not None
    assert (prep.is_split_turn, prep.turn_prefix_messages, prep.first_kept_entry_index) == (True, [], 2)
    model = ScriptedSummarizer({"history": ["H"]})
    result = run(compact, prep, model)
    assert result.summary == "H" and [r.kind for r in model.requests] == ["history"]
