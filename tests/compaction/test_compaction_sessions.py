"""Compaction and branch summaries applied to real sessions (``SessionManager``), with a scripted model:
pi's manual-compaction and tree-navigation behaviours, plus sessiontree's retainedTail and fromId. The
compaction tests run on every back end: in memory, JSONL files, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.agent.navigation import branch_to
from sessiontree.compaction import (
    BranchSummaryError,
    CompactionError,
    CompactionSettings,
    compact_if_needed,
    compact_session,
)
from sessiontree.llm.types import AbortSignal
from sessiontree.tree.context import build_session_context, session_entry_to_context_messages
from tests.builders import MANAGER_KINDS, Factory, manager_factory, reopened
from tests.compaction.support import (
    REALISTIC_GOAL,
    ScriptedSummarizer,
    assistant_msg,
    call,
    realistic_messages,
    run,
    tool_result_msg,
    user_msg,
)

SMALL = CompactionSettings(keep_recent_tokens=150)


def fill(manager: SessionManager, turns: int, tag: str = "t") -> list[str]:
    ids = []
    for i in range(turns):
        ids.append(manager.append_message(user_msg(f"{tag}{i} question " + "q" * 300)))
        ids.append(
            manager.append_message(assistant_msg(f"{tag}{i} answer " + "a" * 300, total_tokens=100 + i))
        )
    return ids


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if m["role"] == "compactionSummary":
            out.append("<summary>")
        else:
            content = m["content"]
            out.append((content if isinstance(content, str) else content[0]["text"]).split(" ")[0])
    return out


# --- compaction on a session --------------------------------------------------------------------------------
@pytest.fixture(params=MANAGER_KINDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    store = request.getfixturevalue("shared_postgres_store") if request.param == "postgres" else None
    with manager_factory(request.param, tmp_path, store=store) as factory:
        yield factory


def test_compaction_entry_carries_first_kept_and_retained_tail(make: Factory) -> None:
    manager = make()
    fill(manager, 4)
    model = ScriptedSummarizer({"history": ["SUMMARY"]})
    entry = run(compact_session, manager, model, settings=SMALL)
    assert entry["type"] == "compaction" and entry["summary"] == "SUMMARY"
    assert manager.get_leaf_id() == entry["id"]
    branch = manager.get_branch()
    first_kept = next(i for i, e in enumerate(branch) if e["id"] == entry["firstKeptEntryId"])
    expected_tail = [m for e in branch[first_kept:-1] for m in session_entry_to_context_messages(e)]
    assert entry["retainedTail"] == expected_tail and expected_tail
    assert list(entry)[:9] == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "retainedTail",
        "details",
    ]
    assert texts(manager.build_session_context().messages) == ["<summary>", "t3", "t3"]


def test_reopened_compaction_reads_the_same_through_retained_tail_or_first_kept(make: Factory) -> None:
    manager = make()
    fill(manager, 4)
    entry = run(compact_session, manager, ScriptedSummarizer(["S"]), settings=SMALL)
    fill(manager, 1, tag="new")
    again = reopened(manager)
    context = again.build_session_context()
    assert texts(context.messages) == ["<summary>", "t3", "t3", "new0", "new0"]
    # pi ignores retainedTail: the same file without it gives the same context through firstKeptEntryId.
    entries = [dict(e) for e in again.get_entries()]
    for e in entries:
        if e["id"] == entry["id"]:
            del e["retainedTail"]
    assert build_session_context(entries).messages == context.messages


def test_already_compacted_and_nothing_to_compact(make: Factory) -> None:
    manager = make()
    with pytest.raises(CompactionError) as error:
        run(compact_session, manager, ScriptedSummarizer())
    assert error.value.kind == "nothing_to_compact"
    fill(manager, 1)
    with pytest.raises(CompactionError, match="Nothing to compact") as error:
        run(compact_session, manager, ScriptedSummarizer())
    assert error.value.kind == "nothing_to_compact" and len(manager.get_entries()) == 2
    fill(manager, 3)
    run(compact_session, manager, ScriptedSummarizer(), settings=SMALL)
    count = len(manager.get_entries())
    with pytest.raises(CompactionError, match="Already compacted") as error:
        run(compact_session, manager, ScriptedSummarizer(), settings=SMALL)
    assert error.value.kind == "already_compacted" and len(manager.get_entries()) == count


def test_repeated_compactions_update_the_summary_and_accumulate_files(make: Factory) -> None:
    manager = make()
    model = ScriptedSummarizer({"history": ["first", "second", "third"]})
    for round_ in range(3):
        manager.append_message(user_msg(f"r{round_} edit " + "e" * 300))
        manager.append_message(
            assistant_msg("editing " + "x" * 300, [call(f"c{round_}", "edit", path=f"src/f{round_}.py")])
        )
        manager.append_message(tool_result_msg(f"c{round_}", "edit", "ok"))
        manager.append_message(assistant_msg(f"r{round_} done " + "d" * 300))
        fill(manager, 2, tag=f"r{round_}x")
        run(compact_session, manager, model, settings=SMALL)
    history = model.by_kind("history")
    assert [r.previous_summary for r in history] == [
        None,
        "first\n\n<modified-files>\nsrc/f0.py\n</modified-files>",
        history[2].previous_summary,
    ]
    assert history[2].previous_summary.startswith("second")
    assert "<previous-summary>\nsecond" in history[2].prompt
    last = manager.get_leaf_entry()
    assert last is not None and last["details"]["modifiedFiles"] == ["src/f0.py", "src/f1.py", "src/f2.py"]
    assert texts(manager.build_session_context().messages)[0] == "<summary>"


def test_compaction_at_another_leaf_and_failures_leave_the_session_untouched(make: Factory) -> None:
    manager = make()
    ids = fill(manager, 4)
    fill(manager, 1, tag="later")
    failing = ScriptedSummarizer([{"stopReason": "error", "errorMessage": "rate limited"}])
    before = len(manager.get_entries())
    with pytest.raises(CompactionError, match="Summarization failed: rate limited"):
        run(compact_session, manager, failing, settings=SMALL, leaf_id=ids[-1])
    assert len(manager.get_entries()) == before and manager.get_leaf_id() != ids[-1]
    entry = run(compact_session, manager, ScriptedSummarizer(), settings=SMALL, leaf_id=ids[-1])
    assert entry["parentId"] == ids[-1] and manager.get_leaf_id() == entry["id"]
    signal = AbortSignal()
    signal.abort()
    manager.append_message(user_msg("more " + "m" * 400))
    manager.append_message(assistant_msg("ok " + "k" * 400))
    with pytest.raises(CompactionError) as error:
        run(compact_session, manager, None, settings=SMALL, signal=signal)
    assert error.value.kind == "aborted"


def test_offline_summarizer_is_the_default(make: Factory) -> None:
    manager = make()
    for message in realistic_messages():
        manager.append_message(message)
    fill(manager, 2)
    entry = run(compact_session, manager, settings=SMALL)
    assert REALISTIC_GOAL in entry["summary"] and "## Critical Context" in entry["summary"]


def test_compact_if_needed_follows_the_threshold(make: Factory) -> None:
    manager = make()
    fill(manager, 4)
    assert (
        run(compact_if_needed, manager, ScriptedSummarizer(), context_window=200000, settings=SMALL) is None
    )
    entry = run(compact_if_needed, manager, ScriptedSummarizer(), context_window=16384 + 50, settings=SMALL)
    assert entry is not None and entry["type"] == "compaction"
    # Right after a compaction there is nothing new: no error, no entry.
    assert run(compact_if_needed, manager, ScriptedSummarizer(), context_window=1, settings=SMALL) is None
    off = CompactionSettings(enabled=False)
    assert run(compact_if_needed, manager, ScriptedSummarizer(), context_window=1, settings=off) is None


# --- tree navigation with branch summaries (pi's agent-session-tree-navigation tests) -----------------------


def tree() -> tuple[SessionManager, dict[str, str]]:
    """u1 a1 u2 a2 u3 a3, one branch."""
    m = SessionManager.in_memory()
    ids = {}
    for i in (1, 2, 3):
        ids[f"u{i}"] = m.append_message(user_msg(f"message {i}"))
        ids[f"a{i}"] = m.append_message(assistant_msg(f"reply {i}", [call(f"c{i}", "edit", path=f"f{i}.py")]))
    return m, ids


def test_navigate_to_root_user_message_puts_its_text_in_the_editor() -> None:
    m, ids = tree()
    count = len(m.get_entries())
    move = run(branch_to, m, ids["u1"])
    assert (move.new_leaf_id, move.editor_text, move.summary_entry) == (None, "message 1", None)
    assert m.get_leaf_id() is None and len(m.get_entries()) == count


def test_navigate_to_assistant_message_has_no_editor_text() -> None:
    m, ids = tree()
    move = run(branch_to, m, ids["a1"])
    assert (move.new_leaf_id, move.editor_text) == (ids["a1"], None) and m.get_leaf_id() == ids["a1"]


def test_summary_when_navigating_to_the_root_user_message() -> None:
    m, ids = tree()
    model = ScriptedSummarizer({"branch": ["## Goal\nexplore"]})
    move = run(branch_to, m, ids["u1"], summarize=True, summarizer=model)
    entry = move.summary_entry
    assert entry is not None and entry["parentId"] is None and m.get_leaf_id() == entry["id"]
    assert entry["fromId"] == ids["a3"]  # the abandoned leaf (SPEC A2), not pi's branch point
    assert entry["summary"].startswith(
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
        "## Goal\nexplore"
    )
    assert entry["details"] == {"readFiles": [], "modifiedFiles": ["f1.py", "f2.py", "f3.py"]}
    assert move.entries_abandoned == 5  # a1..a3: the target u1 is the common ancestor, not collected


def test_summary_attaches_to_the_parent_of_a_nested_user_message() -> None:
    m, ids = tree()
    move = run(branch_to, m, ids["u2"], summarize=True, summarizer=ScriptedSummarizer())
    assert move.summary_entry is not None and move.summary_entry["parentId"] == ids["a1"]
    assert {c["id"] for c in m.get_children(ids["a1"])} == {ids["u2"], move.summary_entry["id"]}
    assert move.editor_text == "message 2"
    context = m.build_session_context().messages
    assert [msg["role"] for msg in context] == ["user", "assistant", "branchSummary"]


def test_summary_attaches_to_a_selected_assistant_message() -> None:
    m, ids = tree()
    model = ScriptedSummarizer()
    move = run(branch_to, m, ids["a1"], summarize=True, summarizer=model)
    assert move.summary_entry is not None and move.summary_entry["parentId"] == ids["a1"]
    assert m.get_leaf_id() == move.summary_entry["id"] and move.editor_text is None
    # Entries from the old leaf back to (not including) the common ancestor a1, tool results aside.
    assert [msg["content"][0]["text"] for msg in model.requests[0].messages] == [
        "message 2",
        "reply 2",
        "message 3",
        "reply 3",
    ]


def test_abort_and_failure_write_nothing() -> None:
    m, ids = tree()
    count, leaf = len(m.get_entries()), m.get_leaf_id()
    aborted = ScriptedSummarizer([{"stopReason": "aborted", "errorMessage": "cancelled"}])
    with pytest.raises(BranchSummaryError) as error:
        run(branch_to, m, ids["u2"], summarize=True, summarizer=aborted)
    assert error.value.kind == "aborted"
    failing = ScriptedSummarizer([{"stopReason": "error", "errorMessage": "boom"}])
    with pytest.raises(BranchSummaryError, match="Branch summarization failed: boom"):
        run(branch_to, m, ids["u2"], summarize=True, summarizer=failing)
    assert (len(m.get_entries()), m.get_leaf_id()) == (count, leaf)


def test_no_summary_without_summarize_and_same_position_is_a_no_op() -> None:
    m, ids = tree()
    count = len(m.get_entries())
    model = ScriptedSummarizer()
    run(branch_to, m, ids["a2"], summarizer=model)
    assert len(m.get_entries()) == count and model.requests == []
    move = run(branch_to, m, ids["a2"], summarize=True, summarizer=model)
    assert (move.old_leaf_id, move.new_leaf_id, move.summary_entry) == (ids["a2"], ids["a2"], None)
    with pytest.raises(Exception, match="Entry nope not found"):
        run(branch_to, m, "nope")


def test_custom_instructions_are_appended_or_replace_the_prompt() -> None:
    m, ids = tree()
    model = ScriptedSummarizer()
    run(branch_to, m, ids["a2"], summarize=True, summarizer=model, custom_instructions="say BANANA")
    assert model.requests[0].prompt.endswith("\n\nAdditional focus: say BANANA")
    assert "## Key Learnings" in model.requests[0].prompt and model.requests[0].max_tokens == 2048
    m2, ids2 = tree()
    run(
        branch_to,
        m2,
        ids2["a2"],
        summarize=True,
        summarizer=model,
        custom_instructions="ONLY",
        replace_instructions=True,
    )
    assert model.requests[1].prompt.endswith("</conversation>\n\nONLY")


def test_navigate_between_branches() -> None:
    m, ids = tree()
    run(branch_to, m, ids["a1"])
    side = m.append_message(user_msg("side branch"))
    m.append_message(assistant_msg("side reply"))
    model = ScriptedSummarizer({"branch": ["side work"]})
    move = run(branch_to, m, ids["u2"], summarize=True, summarizer=model)
    assert move.editor_text == "message 2"
    assert [msg["content"][0]["text"] for msg in model.requests[0].messages] == ["side branch", "side reply"]
    assert move.summary_entry is not None and "side work" in move.summary_entry["summary"]
    assert side in {e["id"] for e in m.get_entries()}


def test_branch_summary_budget_keeps_the_newest_messages() -> None:
    m, ids = tree()
    for i in range(20):
        m.append_message(user_msg(f"extra {i} " + "x" * 400))
    model = ScriptedSummarizer(context_window=16384 + 500)
    run(branch_to, m, ids["a1"], summarize=True, summarizer=model)
    sent = [msg["content"][0]["text"].split(" ")[1] for msg in model.requests[0].messages]
    assert sent == [str(i) for i in range(20 - len(sent), 20)] and 0 < len(sent) < 20
