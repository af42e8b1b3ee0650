"""Context building (pi's session-manager/build-context.test.ts, free function ``build_session_context``).

Plus what pi's suite does not check: ``retainedTail`` (SPEC A2), active tools, cycles, and the manager's own
context on a real file agreeing with the free function for every leaf.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, build_session_context
from sessiontree.format.ids import epoch_ms
from sessiontree.format.pi_json import UNDEFINED
from tests.builders import assistant, user, user_messages_file

TS = "2025-01-01T00:00:00Z"
Entry = dict[str, Any]


def msg(entry_id: str, parent: str | None, role: str, text: str) -> Entry:
    base: Entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": TS}
    return {**base, "message": user(text) if role == "user" else assistant(text, timestamp=1)}


def compaction(entry_id: str, parent: str | None, summary: str, first_kept: str, **extra: Any) -> Entry:
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "summary": summary,
        "firstKeptEntryId": first_kept,
        "tokensBefore": 1000,
        **extra,
    }


def branch_summary(entry_id: str, parent: str | None, summary: str) -> Entry:
    return {
        "type": "branch_summary",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "summary": summary,
        "fromId": parent,
    }


def thinking(entry_id: str, parent: str | None, level: str) -> Entry:
    return {
        "type": "thinking_level_change",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "thinkingLevel": level,
    }


def model_change(entry_id: str, parent: str | None, provider: str, model_id: str) -> Entry:
    return {
        "type": "model_change",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "provider": provider,
        "modelId": model_id,
    }


def texts(messages: list[dict[str, Any]]) -> list[str]:
    """The text of each message (summaries give their summary) in order."""
    out = []
    for m in messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            out.append(f"{m['role']}:{m['summary']}")
        elif isinstance(m.get("content"), str):
            out.append(m["content"])
        else:
            out.append(" ".join(b["text"] for b in m["content"] if b.get("type") == "text"))
    return out


# -- pi's build-context.test.ts ---------------------------------------------------------------------------
def test_empty_entries_returns_empty_context() -> None:
    ctx = build_session_context([])
    assert ctx.messages == []
    assert ctx.thinking_level == "off"
    assert ctx.model is None
    assert ctx.to_dict() == {"messages": [], "thinkingLevel": "off", "model": None}


def test_single_user_message() -> None:
    ctx = build_session_context([msg("1", None, "user", "hello")])
    assert [m["role"] for m in ctx.messages] == ["user"]
    assert ctx.messages[0]["content"] == "hello"


def test_simple_conversation() -> None:
    entries = [
        msg("1", None, "user", "hello"),
        msg("2", "1", "assistant", "hi there"),
        msg("3", "2", "user", "how are you"),
        msg("4", "3", "assistant", "great"),
    ]
    ctx = build_session_context(entries)
    assert [m["role"] for m in ctx.messages] == ["user", "assistant", "user", "assistant"]
    assert texts(ctx.messages) == ["hello", "hi there", "how are you", "great"]


def test_tracks_thinking_level_changes() -> None:
    entries = [msg("1", None, "user", "hello"), thinking("2", "1", "high"), msg("3", "2", "assistant", "x")]
    ctx = build_session_context(entries)
    assert ctx.thinking_level == "high"
    assert len(ctx.messages) == 2


def test_tracks_model_from_assistant_message() -> None:
    ctx = build_session_context([msg("1", None, "user", "hello"), msg("2", "1", "assistant", "hi")])
    assert ctx.model == {"provider": "anthropic", "modelId": "claude-test"}


def test_tracks_model_from_model_change_entry_and_the_later_assistant_wins() -> None:
    entries = [
        msg("1", None, "user", "hello"),
        model_change("2", "1", "openai", "gpt-4"),
        msg("3", "2", "assistant", "hi"),
    ]
    assert build_session_context(entries).model == {"provider": "anthropic", "modelId": "claude-test"}
    # and the other way round: a model_change after the assistant is the latest writer
    assert build_session_context([*entries, model_change("4", "3", "openai", "gpt-4")]).model == {
        "provider": "openai",
        "modelId": "gpt-4",
    }


def test_includes_summary_before_kept_messages() -> None:
    entries = [
        msg("1", None, "user", "first"),
        msg("2", "1", "assistant", "response1"),
        msg("3", "2", "user", "second"),
        msg("4", "3", "assistant", "response2"),
        compaction("5", "4", "Summary of first two turns", "3"),
        msg("6", "5", "user", "third"),
        msg("7", "6", "assistant", "response3"),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx.messages) == [
        "compactionSummary:Summary of first two turns",
        "second",
        "response2",
        "third",
        "response3",
    ]
    assert ctx.messages[0] == {
        "role": "compactionSummary",
        "summary": "Summary of first two turns",
        "tokensBefore": 1000,
        "timestamp": epoch_ms(TS),
    }


def test_handles_compaction_keeping_from_first_message() -> None:
    entries = [
        msg("1", None, "user", "first"),
        msg("2", "1", "assistant", "response1"),
        msg("3", "2", "user", "second"),
        msg("4", "3", "assistant", "response2"),
        compaction("5", "4", "Empty summary", "1"),
    ]
    ctx = build_session_context(entries)
    assert ctx.messages[0]["role"] == "compactionSummary"
    assert texts(ctx.messages[1:]) == ["first", "response1", "second", "response2"]


def test_multiple_compactions_uses_latest() -> None:
    entries = [
        msg("1", None, "user", "a"),
        msg("2", "1", "assistant", "b"),
        compaction("3", "2", "First summary", "1"),
        msg("4", "3", "user", "c"),
        msg("5", "4", "assistant", "d"),
        compaction("6", "5", "Second summary", "4"),
        msg("7", "6", "user", "e"),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx.messages) == ["compactionSummary:Second summary", "c", "d", "e"]


def test_follows_path_to_specified_leaf() -> None:
    entries = [
        msg("1", None, "user", "start"),
        msg("2", "1", "assistant", "response"),
        msg("3", "2", "user", "branch A"),
        msg("4", "2", "user", "branch B"),
    ]
    a = build_session_context(entries, "3")
    b = build_session_context(entries, "4")
    assert texts(a.messages) == ["start", "response", "branch A"]
    assert texts(b.messages) == ["start", "response", "branch B"]


def test_includes_branch_summary_in_path() -> None:
    entries = [
        msg("1", None, "user", "start"),
        msg("2", "1", "assistant", "response"),
        msg("3", "2", "user", "abandoned path"),
        branch_summary("4", "2", "Summary of abandoned work"),
        msg("5", "4", "user", "new direction"),
    ]
    ctx = build_session_context(entries, "5")
    assert texts(ctx.messages) == [
        "start",
        "response",
        "branchSummary:Summary of abandoned work",
        "new direction",
    ]
    assert ctx.messages[2] == {
        "role": "branchSummary",
        "summary": "Summary of abandoned work",
        "fromId": "2",
        "timestamp": epoch_ms(TS),
    }


def test_complex_tree_with_multiple_branches_and_compaction() -> None:
    entries = [
        msg("1", None, "user", "start"),
        msg("2", "1", "assistant", "r1"),
        msg("3", "2", "user", "q2"),
        msg("4", "3", "assistant", "r2"),
        compaction("5", "4", "Compacted history", "3"),
        msg("6", "5", "user", "q3"),
        msg("7", "6", "assistant", "r3"),
        # a sibling branch from before the compaction, with a branch summary
        branch_summary("8", "3", "Tried wrong approach"),
        msg("9", "8", "user", "better approach"),
    ]
    main = build_session_context(entries, "7")
    assert texts(main.messages) == ["compactionSummary:Compacted history", "q2", "r2", "q3", "r3"]
    side = build_session_context(entries, "9")
    assert texts(side.messages) == [
        "start",
        "r1",
        "q2",
        "branchSummary:Tried wrong approach",
        "better approach",
    ]


def test_uses_last_entry_when_leaf_id_not_found() -> None:
    entries = [msg("1", None, "user", "hello"), msg("2", "1", "assistant", "hi")]
    assert texts(build_session_context(entries, "nonexistent").messages) == ["hello", "hi"]


def test_handles_orphaned_entries_gracefully() -> None:
    entries = [msg("1", None, "user", "hello"), msg("2", "missing", "assistant", "orphan")]
    ctx = build_session_context(entries, "2")
    assert texts(ctx.messages) == ["orphan"]


# -- beyond pi's suite ------------------------------------------------------------------------------------
def test_an_explicit_none_leaf_gives_an_empty_context() -> None:
    entries = [thinking("0", None, "high"), msg("1", "0", "user", "hello")]
    ctx = build_session_context(entries, None)
    assert ctx.to_dict() == {"messages": [], "thinkingLevel": "off", "model": None}


def test_entry_to_message_mapping_for_every_entry_type() -> None:
    entries: list[Entry] = [
        msg("1", None, "user", "hello"),
        {
            "type": "custom_message",
            "customType": "ext",
            "content": "injected",
            "display": False,
            "details": {"k": 1},
            "id": "2",
            "parentId": "1",
            "timestamp": "2025-01-01T00:00:02.500Z",
        },
        branch_summary("3", "2", ""),  # an empty summary gives no message
        {
            "type": "custom",
            "customType": "state",
            "data": {"n": 1},
            "id": "4",
            "parentId": "3",
            "timestamp": TS,
        },
        {"type": "label", "id": "5", "parentId": "4", "timestamp": TS, "targetId": "1", "label": "x"},
        {"type": "session_info", "id": "6", "parentId": "5", "timestamp": TS, "name": "n"},
        {
            "type": "active_tools_change",
            "id": "7",
            "parentId": "6",
            "timestamp": TS,
            "activeToolNames": ["a"],
        },
        {"type": "future_kind", "id": "8", "parentId": "7", "timestamp": TS, "payload": [1, 2]},
        msg("9", "8", "assistant", "bye"),
    ]
    ctx = build_session_context(entries)
    assert [m["role"] for m in ctx.messages] == ["user", "custom", "assistant"]
    assert ctx.messages[1] == {
        "role": "custom",
        "customType": "ext",
        "content": "injected",
        "display": False,
        "details": {"k": 1},
        "timestamp": epoch_ms("2025-01-01T00:00:02.500Z"),
    }
    assert ctx.active_tool_names == ["a"]


def test_settings_count_in_the_compacted_part_of_the_path() -> None:
    entries = [
        thinking("0", None, "medium"),
        model_change("1", "0", "openai", "gpt-4.1"),
        msg("2", "1", "user", "old"),
        msg("3", "2", "user", "kept"),
        compaction("4", "3", "S", "3"),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx.messages) == ["compactionSummary:S", "kept"]
    assert ctx.thinking_level == "medium"
    assert ctx.model == {"provider": "openai", "modelId": "gpt-4.1"}


def test_first_kept_entry_off_the_path_keeps_only_the_summary_and_what_follows() -> None:
    entries = [
        msg("1", None, "user", "a"),
        msg("2", "1", "assistant", "b"),
        msg("x", "1", "user", "other branch"),
        compaction("3", "2", "S", "x"),
        msg("4", "3", "user", "after"),
    ]
    assert texts(build_session_context(entries, "4").messages) == ["compactionSummary:S", "after"]


def test_retained_tail_is_preferred_over_first_kept_entry_id() -> None:
    # SPEC A2: a compaction written by sessiontree carries its kept messages; readers prefer them.
    tail = [{"role": "user", "content": "kept verbatim", "timestamp": 5}]
    entries = [
        msg("1", None, "user", "a"),
        msg("2", "1", "assistant", "b"),
        compaction("3", "2", "S", "1", retainedTail=tail),
        msg("4", "3", "user", "after"),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx.messages) == ["compactionSummary:S", "kept verbatim", "after"]


def test_a_retained_tail_that_is_not_an_array_falls_back_to_first_kept() -> None:
    entries = [
        msg("1", None, "user", "a"),
        msg("2", "1", "assistant", "b"),
        compaction("3", "2", "S", "2", retainedTail="not a list"),
    ]
    assert texts(build_session_context(entries).messages) == ["compactionSummary:S", "b"]


def test_duplicate_ids_resolve_to_the_last_occurrence() -> None:
    entries = [msg("1", None, "user", "first copy"), msg("1", None, "user", "second copy")]
    assert texts(build_session_context(entries, "1").messages) == ["second copy"]


def test_parent_cycles_do_not_hang_the_walk() -> None:
    self_parented = [msg("1", "1", "user", "me")]
    assert texts(build_session_context(self_parented).messages) == ["me"]
    two_cycle = [msg("1", "2", "user", "one"), msg("2", "1", "assistant", "two")]
    assert texts(build_session_context(two_cycle).messages) == ["one", "two"]


# -- the manager on a real file agrees with the free function ---------------------------------------------
def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _assistant(text: str) -> dict[str, Any]:
    return msg("x", None, "assistant", text)["message"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("pi_style", [False, True], ids=["retained-tail", "first-kept-only"])
def test_manager_context_equals_the_free_function_at_every_leaf_after_reopen(
    tmp_path: Path, pi_style: bool
) -> None:
    manager = SessionManager.create(str(tmp_path / "proj"), tmp_path / "sessions")
    manager.append_model_change("openai", "gpt-4.1")
    u1 = manager.append_message(_user("u1"))
    manager.append_message(_assistant("a1"))
    u2 = manager.append_message(_user("u2"))
    manager.append_thinking_level_change("high")
    a2 = manager.append_message(_assistant("a2"))
    manager.append_compaction("summary", u2, 500, retained_tail=UNDEFINED if pi_style else None)
    manager.append_message(_user("u3"))
    manager.branch(u1)
    manager.branch_with_summary(u1, "side trip")
    manager.append_custom_message_entry("ext", "note", True)
    manager.branch(a2)
    manager.append_message(_user("u2b"))
    path = manager.get_session_file()
    assert path is not None
    manager.close()

    reopened = SessionManager.open(path, read_only=True)
    entries = reopened.get_entries()
    assert [e["type"] for e in entries].count("compaction") == 1
    assert ("retainedTail" in entries[6]) is not pi_style
    for entry in entries:
        expected = build_session_context(entries, entry["id"])
        assert reopened.build_session_context(entry["id"]) == expected, entry["id"]
    main = reopened.build_session_context(entries[7]["id"])
    assert texts(main.messages) == ["compactionSummary:summary", "u2", "a2", "u3"]
    assert main.thinking_level == "high"
    assert main.model == {"provider": "anthropic", "modelId": "claude-test"}


def test_a_kind_no_entry_had_is_found_once_an_entry_has_it(tmp_path: Path) -> None:
    """A file store tells the context build which kinds no entry has (it skips looking for them along the
    path): an ``active_tools_change`` appended after that answer, by this writer and by another process
    whose lines are read on the next open, is in the next context, as the free function builds it."""
    manager = SessionManager.create(tmp_path, session_dir=tmp_path)
    manager.append_message(user("one"))
    manager.append_thinking_level_change("high")
    manager.append_message(user("two"))
    store = manager.store
    assert not store.has_type("active_tools_change") and store.has_type("thinking_level_change")
    before = manager.build_session_context()
    assert before.active_tool_names is None and before.thinking_level == "high"
    manager.append_active_tools_change(["read", "bash"])
    manager.append_message(user("three"))
    assert store.has_type("active_tools_change")
    after = manager.build_session_context()
    assert after.active_tool_names == ["read", "bash"]
    assert after == build_session_context(manager.get_entries())
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    reopened = SessionManager.open(path, read_only=True)
    assert not reopened.store.has_type("model_change")
    assert reopened.build_session_context() == after


def test_a_branch_read_whole_reads_its_lines_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get_branch`` decodes the branch's lines in a few reads of neighbouring lines, not a read per entry,
    and gives what the free function's path holds."""
    from sessiontree.storage import jsonl_reads

    path = user_messages_file(tmp_path, 600)
    monkeypatch.setenv("SESSIONTREE_INDEX_CACHE", "0")
    reopened = SessionManager.open(path, read_only=True)
    reads: list[int] = []
    real = jsonl_reads.JsonlReads._pread
    monkeypatch.setattr(
        jsonl_reads.JsonlReads, "_pread", lambda self, o, n: reads.append(n) or real(self, o, n)
    )
    branch = reopened.get_branch()
    assert [e["message"]["content"] for e in branch] == [f"m{i}" for i in range(600)]
    assert 0 < len(reads) <= 5, len(reads)
    assert branch == reopened.get_entries()
