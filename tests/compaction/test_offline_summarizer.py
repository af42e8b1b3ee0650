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
    assert "- [x] Wrote src/net/retry.py" in text  # preserved progress
    assert "- [x] Edited README.md" in text  # new progress
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


def _by_section(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.split("\n"):
        if line.startswith("#"):
            current = line
            out[current] = []
        elif line.strip():
            out[current].append(line)
    return out


PARSER_FAILURE = (
    "FAILED tests/test_parser.py::test_parse_duration_resets_number - AssertionError: assert 5430 == 5400"
)


def _parser_session() -> list[dict[str, object]]:
    return [
        user_msg("The test test_parse_duration_resets_number fails. Please find out why and fix it."),
        assistant_msg(
            "Let me run the tests first.", [call("b1", "bash", command="pytest -q tests/test_parser.py")]
        ),
        tool_result_msg("b1", "bash", f"F...........\n{PARSER_FAILURE}\n1 failed, 11 passed in 0.42s", True),
        assistant_msg("", [call("r1", "read", path="src/durations/parser.py")]),
        tool_result_msg("r1", "read", "def parse_duration(text: str) -> int: ..."),
        assistant_msg("", [call("e1", "edit", path="src/durations/parser.py", oldText="a", newText="b")]),
        tool_result_msg("e1", "edit", "Successfully replaced text in src/durations/parser.py"),
        assistant_msg("", [call("g1", "grep", pattern="parse_duration", path="src")]),
        tool_result_msg("g1", "grep", "src/durations/parser.py:1: def parse_duration"),
        assistant_msg("", [call("b2", "bash", command="pytest -q")]),
        tool_result_msg("b2", "bash", "............                [100%]\n12 passed in 0.39s"),
        {
            "role": "bashExecution",
            "command": "git status --short",
            "output": " M src/durations/parser.py\n",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 9,
        },
        assistant_msg("All 12 tests pass."),
    ]


def test_progress_bullets_are_readable_and_keep_exact_commands_and_errors() -> None:
    text = summarize_offline("history", _parser_session())
    got = _by_section(text)
    assert got["### Done"] == [
        "- [x] Read src/durations/parser.py",
        "- [x] Edited src/durations/parser.py",
        "- [x] Searched for `parse_duration` in src",
        "- [x] Ran `pytest -q` → 12 passed in 0.39s",
        "- [x] User ran `git status --short` → M src/durations/parser.py",
    ]
    assert got["## Key Decisions"] == [
        f"- **Error**: `pytest -q tests/test_parser.py` failed: {PARSER_FAILURE}"
    ]
    assert got["### Blocked"] == ["(none)"]  # later edits and a passing run resolved it
    assert "command=" not in text and "path=" not in text
    failing = summarize_offline("history", _parser_session()[:3])
    assert _by_section(failing)["### Blocked"] == [
        f"- `pytest -q tests/test_parser.py` failed: {PARSER_FAILURE}"
    ]
    assert failing.count(PARSER_FAILURE) == 1  # stated once, under Blocked


def test_turn_prefix_original_request_is_the_users_text() -> None:
    request = "Go with resetting the accumulator, and keep unknown units an error."
    quiet = _by_section(summarize_offline("turn_prefix", [user_msg(request)]))
    assert quiet == {
        "## Original Request": [f"- {request}"],
        "## Early Progress": ["(none)"],
        "## Context for Suffix": ["(none)"],
    }
    busy = _by_section(summarize_offline("turn_prefix", _parser_session()[:5]))
    assert busy["## Original Request"] == [
        "- The test test_parse_duration_resets_number fails. Please find out why and fix it."
    ]
    assert busy["## Early Progress"] == ["- Read src/durations/parser.py"]
    assert busy["## Context for Suffix"][0] == (
        f"- Last error: `pytest -q tests/test_parser.py` failed: {PARSER_FAILURE}"
    )


def test_why_abandoned_is_derived_when_the_branch_shows_it() -> None:
    # Branch summaries carry no tool results: the reason comes from the assistant's last note.
    regex = [
        user_msg("Try the regex rewrite."),
        assistant_msg(
            "Rewriting with re.findall.", [call("w", "write", path="src/durations/parser.py", content="x")]
        ),
        assistant_msg("", [call("p", "bash", command="pytest -q")]),
        assistant_msg("The regex silently skips unknown units, so test_rejects_unknown_unit fails."),
    ]
    why = _by_section(summarize_offline("branch", regex))["## Why Abandoned"]
    assert why == [
        "- It ran into a problem: The regex silently skips unknown units, so test_rejects_unknown_unit fails."
    ]
    failed = _by_section(summarize_offline("branch", _parser_session()[:3]))["## Why Abandoned"]
    assert failed == [
        "- The last attempt failed and was not resolved on this branch: "
        f"`pytest -q tests/test_parser.py` failed: {PARSER_FAILURE}"
    ]
    open_request = _by_section(summarize_offline("branch", [user_msg("Try the regex rewrite.")]))
    assert open_request["## Why Abandoned"] == [
        "- (unclear) Left unfinished; the open request was: Try the regex rewrite."
    ]
    assert open_request["## Progress"] == ["- [ ] Try the regex rewrite."]
    assert _by_section(summarize_offline("branch", []))["## Why Abandoned"] == ["- (unclear)"]
