"""The offline summarizer: deterministic, local, budgeted summaries in the sections a model is asked for."""

from __future__ import annotations

import anyio

from sessiontree.compaction import (
    CompactionSettings,
    OfflineSummarizer,
    SummaryRequest,
    compact,
    prepare_compaction,
    summarize_offline,
)
from sessiontree.llm.types import AbortSignal
from tests.compaction.support import (
    REALISTIC_GOAL,
    REALISTIC_LAST_ERROR,
    REALISTIC_MODIFIED,
    PathBuilder,
    assistant_msg,
    call,
    realistic_messages,
    tool_result_msg,
    user_msg,
)


def _sections(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("#")]


def test_history_summary_keeps_goal_files_and_last_error() -> None:
    text = summarize_offline("history", realistic_messages(), max_tokens=13107)
    assert _sections(text) == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]
    assert REALISTIC_GOAL in text
    for path in REALISTIC_MODIFIED:
        assert path in text
    assert REALISTIC_LAST_ERROR in text
    assert "do not add dependencies" in text  # a constraint
    assert "separate module because the client is already large" in text  # a decision
    assert "make max_attempts include it" in text.split("## Next Steps")[1]  # the last request
    assert "ENOENT: no such file or directory" in text  # an earlier error


def test_summary_is_deterministic_and_within_budget() -> None:
    messages = realistic_messages() * 20
    first = summarize_offline("history", messages, max_tokens=300)
    assert first == summarize_offline("history", messages, max_tokens=300)
    assert len(first) <= 300 * 4
    # Under pressure the essentials stay: the goal, every modified file and the last error.
    assert REALISTIC_GOAL in first and REALISTIC_LAST_ERROR in first
    assert all(path in first for path in REALISTIC_MODIFIED)
    assert "more not shown" in first


def test_update_keeps_the_previous_summary_items() -> None:
    previous = summarize_offline("history", realistic_messages()[:7])
    previous += "\n\n<modified-files>\nsrc/old.py\n</modified-files>"
    later = [
        user_msg("Now document the retry settings in README.md"),
        assistant_msg("", [call("d1", "edit", path="README.md")]),
        tool_result_msg("d1", "edit", "ok"),
    ]
    text = summarize_offline("history", later, previous_summary=previous)
    assert REALISTIC_GOAL in text  # preserved goal
    assert "document the retry settings" in text  # new goal
    assert "write path=src/net/retry.py" in text  # preserved progress
    assert "edit path=README.md" in text  # new progress
    assert "<modified-files>" not in text  # file blocks are appended by compact(), not repeated
    assert text.count("## Goal") == 1


def test_branch_summary_sections_and_reason() -> None:
    text = summarize_offline("branch", realistic_messages()[:13])
    assert _sections(text) == ["## Goal", "## Progress", "## Key Learnings", "## Why Abandoned"]
    assert REALISTIC_LAST_ERROR in text.split("## Why Abandoned")[1]
    assert all(path in text for path in REALISTIC_MODIFIED)


def test_turn_prefix_sections() -> None:
    text = summarize_offline("turn_prefix", realistic_messages()[:5])
    assert _sections(text) == ["## Original Request", "## Early Progress", "## Context for Suffix"]
    assert REALISTIC_GOAL in text.split("## Early Progress")[0]


def test_offline_summarizer_fits_the_seam_and_honours_abort() -> None:
    summarizer = OfflineSummarizer(clock=lambda: 42)
    request = SummaryRequest(
        "history", realistic_messages(), "system", "prompt", 2000, custom_instructions="tests"
    )
    reply = anyio.run(summarizer.summarize, request)
    assert reply["stopReason"] == "stop" and reply["provider"] == "sessiontree" and reply["timestamp"] == 42
    assert "Requested focus for this summary: tests" in reply["content"][0]["text"]
    signal = AbortSignal()
    signal.abort("stop now")
    aborted = SummaryRequest("history", [], "s", "p", 10, signal=signal)
    reply = anyio.run(summarizer.summarize, aborted)
    assert (reply["stopReason"], reply.get("errorMessage")) == ("aborted", "stop now")


def test_compaction_through_the_offline_summarizer() -> None:
    b = PathBuilder()
    for message in realistic_messages():
        b.message(message)
    b.user("latest " + "x" * 400)
    b.assistant("reply " + "y" * 400)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=150))
    assert prep is not None and prep.has_content
    result = anyio.run(lambda: compact(prep, OfflineSummarizer()))
    assert REALISTIC_GOAL in result.summary and REALISTIC_LAST_ERROR in result.summary
    assert result.summary.endswith("</modified-files>")
    assert result.details["modifiedFiles"] == sorted(REALISTIC_MODIFIED)
