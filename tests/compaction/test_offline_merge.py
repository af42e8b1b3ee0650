"""The offline summarizer merging earlier summaries: a previous compaction summary (history layout, turn-prefix
layout, split-turn joiner, file blocks) and branch or compaction summaries met among the messages."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio

from sessiontree import SessionManager
from sessiontree.agent.navigation import branch_to
from sessiontree.compaction import CompactionSettings, OfflineSummarizer, summarize_offline
from sessiontree.compaction.offline_merge import parse_summary
from sessiontree.compaction.session_ops import compact_session
from sessiontree.llm.convert import branch_summary_text
from tests.compaction.support import assistant_msg, call, tool_result_msg, user_msg

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding-session.jsonl"

FIRST_REQUEST = "The test test_parse_duration_resets_number fails. Please find out why and fix it."
PYTEST_FAILURE = (
    "FAILED tests/test_parser.py::test_parse_duration_resets_number - AssertionError: assert 5430 == 5400"
)

# A split-turn summary as older sessiontree versions wrote it: no prior history, then the turn prefix.
SPLIT_TURN_PREVIOUS = f"""No prior history.

---

**Turn Context (split turn):**

## Original Request
- {FIRST_REQUEST}

## Early Progress
- bash command=pytest -q tests/test_parser.py → failed: {PYTEST_FAILURE}
- read path=src/durations/parser.py

## Context for Suffix
- Read: src/durations/parser.py
- Last error: bash command=pytest -q tests/test_parser.py: {PYTEST_FAILURE}
- Last assistant note: The sum is 30 seconds too high. Reading the parser.

<read-files>
src/durations/parser.py
</read-files>"""

# The example session's branch summary of the abandoned regex rewrite (a model-style summary).
REGEX_BRANCH = (
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
    "## Goal\nRewrite parse_duration with a regular expression.\n\n## Progress\n- [x] Rewrote "
    "src/durations/parser.py with re.findall\n\n## Key Learnings\n- The regex version ignores unknown units;"
    " tests/test_parser.py::test_rejects_unknown_unit expects a KeyError.\n\n## Why Abandoned\nIt broke "
    "test_rejects_unknown_unit; resetting the accumulator is the smaller fix.\n\n<modified-files>\n"
    "src/durations/regex_parser.py\n</modified-files>"
)


def sections(text: str) -> dict[str, list[str]]:
    """Heading -> its non-empty lines (headings of a split-turn summary are taken once, the first time)."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.split("\n"):
        if line.startswith("#"):
            current = line
            out.setdefault(current, [])
        elif line.strip() and current:
            out[current].append(line)
    return out


def assert_clean(text: str) -> None:
    """No placeholder leaking in as content, no squashed markdown, no raw nested summary labels."""
    assert "No prior history." not in text
    for line in text.split("\n"):
        if not line.startswith("#"):
            assert "## " not in line, line
    for label in ("Earlier summary:", "Abandoned branch:", "Original Request:", "Early Progress:"):
        assert label not in text
    assert "Context for Suffix:" not in text and "Summary of that exploration" not in text


def fixed_parser_messages() -> list[dict[str, object]]:
    return [
        assistant_msg(
            "Found it: `number` is never reset after a unit. Two options: reset the accumulator, or rewrite the "
            "parser with a regular expression."
        ),
        user_msg("Go with resetting the accumulator, and keep unknown units an error."),
        assistant_msg(
            "Resetting `number` after each unit.",
            [call("e1", "edit", path="src/durations/parser.py", oldText="a", newText="b")],
        ),
        tool_result_msg("e1", "edit", "Edited src/durations/parser.py (1 line added)"),
        assistant_msg("", [call("e2", "bash", command="pytest -q")]),
        tool_result_msg("e2", "bash", "............\n12 passed in 0.39s"),
        assistant_msg("All 12 tests pass. The bug was the accumulator not being reset between units."),
    ]


def test_split_turn_previous_summary_lands_in_the_right_sections() -> None:
    text = summarize_offline("history", fixed_parser_messages(), previous_summary=SPLIT_TURN_PREVIOUS)
    got = sections(text)
    assert_clean(text)
    assert got["## Goal"][0] == f"- {FIRST_REQUEST}"  # Original Request -> Goal, first
    assert "- Go with resetting the accumulator, and keep unknown units an error." in got["## Goal"]
    assert "- [x] read path=src/durations/parser.py" in got["### Done"]  # Early Progress -> Done
    assert "- [x] Edited src/durations/parser.py" in got["### Done"]
    assert "- [x] Ran `pytest -q` → 12 passed in 0.39s" in got["### Done"]
    # The failed step of the old layout is an error, carried once (the old "Last error" repeats it).
    errors = [line for line in got["## Key Decisions"] if PYTEST_FAILURE in line]
    assert errors == [f"- **Error**: bash command=pytest -q tests/test_parser.py failed: {PYTEST_FAILURE}"]
    assert not any("failed" in line for line in got["### Done"])
    # Context for Suffix -> Critical Context: the file read earlier and edited now is listed once, as
    # modified; the newer last note replaces the older one.
    assert got["## Critical Context"] == [
        "- Last assistant note: All 12 tests pass. The bug was the accumulator not being reset between units.",
        "- Modified: src/durations/parser.py",
    ]
    assert "<read-files>" not in text  # file blocks are appended by compact(), not copied into the body
    assert got["### In Progress"] == ["(none)"] and got["### Blocked"] == ["(none)"]


def test_standard_previous_summary_is_updated_not_pasted() -> None:
    previous = """## Goal
Add a --json flag to `sessiontree tree`.

## Constraints & Preferences
- Keep the text output unchanged

## Progress
### Done
- [x] Read src/sessiontree/cli/inspect_cmds.py

### In Progress
- [ ] Write the JSON encoder

### Blocked
- `pytest tests/test_cli.py` failed: AssertionError: 'nodes' not in output

## Key Decisions
- **Use the existing view model**: it already has every field

## Next Steps
1. Fix the failing CLI test

## Critical Context
- Read: src/sessiontree/cli/inspect_cmds.py
- Last error: `pytest tests/test_cli.py` failed: AssertionError: 'nodes' not in output"""
    later = [
        assistant_msg(
            "", [call("w1", "edit", path="src/sessiontree/cli/inspect_cmds.py", oldText="a", newText="b")]
        ),
        tool_result_msg("w1", "edit", "ok"),
        assistant_msg("", [call("w2", "bash", command="pytest tests/test_cli.py")]),
        tool_result_msg("w2", "bash", "3 passed in 0.2s"),
        assistant_msg("The --json flag works and the CLI tests pass."),
    ]
    got = sections(summarize_offline("history", later, previous_summary=previous))
    assert got["## Goal"] == ["- Add a --json flag to `sessiontree tree`."]
    assert got["## Constraints & Preferences"] == ["- Keep the text output unchanged"]
    # The finished turn moves the open item to Done; the blocker became a past error once work moved on.
    assert "- [x] Write the JSON encoder" in got["### Done"]
    assert got["### In Progress"] == ["(none)"] and got["### Blocked"] == ["(none)"]
    assert got["## Key Decisions"] == [
        "- **Error**: `pytest tests/test_cli.py` failed: AssertionError: 'nodes' not in output",
        "- **Use the existing view model**: it already has every field",  # its own label, not doubled
    ]
    assert got["## Next Steps"] == ["1. Fix the failing CLI test"]  # no newer request replaces it
    # The file read before and edited now is reported once, as modified.
    assert got["## Critical Context"] == [
        "- Last assistant note: The --json flag works and the CLI tests pass.",
        "- Modified: src/sessiontree/cli/inspect_cmds.py",
    ]


def test_branch_summary_among_messages_becomes_short_learnings() -> None:
    messages = [
        user_msg(FIRST_REQUEST),
        {"role": "branchSummary", "summary": REGEX_BRANCH, "fromId": "x", "timestamp": 5},
        *fixed_parser_messages()[1:],
    ]
    text = summarize_offline("history", messages)
    got = sections(text)
    assert_clean(text)
    assert got["## Key Decisions"][:2] == [
        "- **Abandoned approach**: Rewrite parse_duration with a regular expression — it broke "
        "test_rejects_unknown_unit; resetting the accumulator is the smaller fix.",
        "- **Learning**: The regex version ignores unknown units; tests/test_parser.py::test_rejects_unknown_unit "
        "expects a KeyError.",
    ]
    assert (
        "- **Decision**: The bug was the accumulator not being reset between units."
        in got["## Key Decisions"]
    )
    # Its progress is not the current state; its files are tracked as touched on an abandoned branch.
    assert "re.findall" not in text
    assert "- Modified on an abandoned branch: src/durations/regex_parser.py" in got["## Critical Context"]
    assert "- Modified: src/durations/parser.py" in got["## Critical Context"]
    assert got["## Goal"][0] == f"- {FIRST_REQUEST}"


def test_wrapped_branch_summary_in_a_user_message_is_not_a_request() -> None:
    wrapped = user_msg(branch_summary_text(REGEX_BRANCH))
    got = sections(summarize_offline("history", [user_msg(FIRST_REQUEST), wrapped]))
    assert got["## Goal"] == [f"- {FIRST_REQUEST}"]
    assert got["## Key Decisions"][0].startswith("- **Abandoned approach**: Rewrite parse_duration")
    assert got["## Constraints & Preferences"] == ["(none)"]


def test_branch_summary_of_a_branch_with_summaries_inside() -> None:
    """A branch summary sees compaction summaries and an earlier branch summary among the branch's messages."""
    compaction = summarize_offline(
        "turn_prefix",
        [
            user_msg(FIRST_REQUEST),
            assistant_msg(
                "Let me run the tests first.", [call("t1", "bash", command="pytest -q tests/test_parser.py")]
            ),
            tool_result_msg("t1", "bash", PYTEST_FAILURE + "\n1 failed, 11 passed in 0.42s", True),
            assistant_msg("Reading the parser.", [call("t2", "read", path="src/durations/parser.py")]),
            tool_result_msg("t2", "read", "def parse_duration(text): ..."),
        ],
    )
    messages = [
        {"role": "compactionSummary", "summary": compaction, "tokensBefore": 900, "timestamp": 1},
        {"role": "branchSummary", "summary": REGEX_BRANCH, "fromId": "x", "timestamp": 2},
        user_msg("Now add support for days ('2d4h')."),
        assistant_msg(
            "Adding 'd'.", [call("d1", "edit", path="src/durations/parser.py", oldText="a", newText="b")]
        ),
        assistant_msg("Days are supported and tested (13 tests pass)."),
    ]
    text = summarize_offline("branch", messages, max_tokens=2048)
    got = sections(text)
    assert_clean(text)
    assert got["## Goal"] == [f"- {FIRST_REQUEST}", "- Now add support for days ('2d4h')."]
    assert got["## Progress"] == [
        "- [x] Read src/durations/parser.py",
        "- [x] Edited src/durations/parser.py",
    ]
    learnings = got["## Key Learnings"]
    assert f"- **Error**: `pytest -q tests/test_parser.py` failed: {PYTEST_FAILURE}" in learnings
    assert learnings[1].startswith(
        "- **Abandoned approach**: Rewrite parse_duration with a regular expression"
    )
    assert "- Modified: src/durations/parser.py" in learnings
    assert "- Modified on an abandoned branch: src/durations/regex_parser.py" in learnings
    assert got["## Why Abandoned"] == [
        "- (unclear) The branch's last request had been answered: Days are supported and tested (13 tests pass)."
    ]


def test_parse_summary_reads_every_layout() -> None:
    parsed = parse_summary(SPLIT_TURN_PREVIOUS)
    assert parsed.items("goal") == [FIRST_REQUEST]
    assert parsed.items("done")[1] == "read path=src/durations/parser.py"
    assert parsed.read_files == ["src/durations/parser.py"] and parsed.modified_files == []
    assert "other" not in parsed.sections  # "No prior history." and the joiner are not content
    branch = parse_summary(branch_summary_text(REGEX_BRANCH))
    assert branch.items("goal") == ["Rewrite parse_duration with a regular expression."]
    assert branch.items("done") == ["Rewrote src/durations/parser.py with re.findall"]
    assert branch.items("why") == [
        "It broke test_rejects_unknown_unit; resetting the accumulator is the smaller fix."
    ]
    assert branch.modified_files == ["src/durations/regex_parser.py"]
    pi_wrapped = (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
        "## Goal\nTry a cache.\n\n## Why Abandoned\nToo slow.\n</summary>"
    )
    assert parse_summary(pi_wrapped).sections == {"goal": ["Try a cache."], "why": ["Too slow."]}
    odd = parse_summary(
        "Free text first.\n\n## Files\n- notes.md\n\n## Progress\n- [ ] half done\n- (3 more not shown)"
    )
    assert odd.sections == {"other": ["Free text first.", "Files: notes.md"], "in_progress": ["half done"]}


def test_merging_keeps_the_budget_and_is_deterministic() -> None:
    messages = [{"role": "branchSummary", "summary": REGEX_BRANCH, "fromId": "x", "timestamp": 1}]
    messages += fixed_parser_messages() * 30
    first = summarize_offline("history", messages, previous_summary=SPLIT_TURN_PREVIOUS, max_tokens=250)
    assert first == summarize_offline(
        "history", messages, previous_summary=SPLIT_TURN_PREVIOUS, max_tokens=250
    )
    assert len(first) <= 250 * 4
    assert FIRST_REQUEST in first and "Modified: src/durations/parser.py" in first


def test_demo_flow_on_the_example_session(tmp_path: Path) -> None:
    """``sessiontree demo``'s compaction and branch summary on the shipped example, read back as sections."""
    copy = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, copy)
    with SessionManager.open(copy) as manager:
        settings = CompactionSettings(keep_recent_tokens=200)
        entry = anyio.run(lambda: compact_session(manager, OfflineSummarizer(), settings=settings))
        history, _, prefix = str(entry["summary"]).partition("**Turn Context (split turn):**")
        got = sections(history)
        assert_clean(entry["summary"])
        assert got["## Goal"] == [f"- {FIRST_REQUEST}"]
        assert got["## Key Decisions"][1].startswith(
            "- **Abandoned approach**: Rewrite parse_duration with a regular expression — it broke"
        )
        assert sections(prefix)["## Original Request"] == [
            "- Go with resetting the accumulator, and keep unknown units an error."
        ]
        first = next(e["id"] for e in manager.get_branch() if e.get("message", {}).get("role") == "user")
        move = anyio.run(lambda: branch_to(manager, first, summarize=True))
        assert move.summary_entry is not None
        summary = str(move.summary_entry["summary"])
        assert_clean(summary.split("\n\n", 1)[1])  # after the preamble
        learnings = sections(summary)["## Key Learnings"]
        assert any(line.startswith("- **Abandoned approach**: Rewrite parse_duration") for line in learnings)
        assert sections(summary)["## Why Abandoned"][0].startswith("- (unclear) The branch's last request")
