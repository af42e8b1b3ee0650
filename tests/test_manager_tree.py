"""Tree traversal and branching (pi's session-manager/tree-traversal.test.ts and save-entry.test.ts).

pi runs these on ``inMemory()``; every test here runs in memory, on a real file in ``tmp_path``, in SQLite and in
PostgreSQL, and the stored variants also check that a reopened session gives the same answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, SessionNotFoundError
from sessiontree.format.pi_json import loads
from sessiontree.tree.tree_index import TreeNode
from tests.builders import MANAGER_KINDS, Factory, assistant, manager_factory, reopened, user


@pytest.fixture(params=MANAGER_KINDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    store = request.getfixturevalue("shared_postgres_store") if request.param == "postgres" else None
    with manager_factory(request.param, tmp_path, store=store) as factory:
        yield factory


def ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["id"] for e in entries]


def shape(nodes: list[TreeNode]) -> list[Any]:
    """A tree as nested ``[id, [children...]]`` lists."""
    return [[n.id, shape(n.children)] for n in nodes]


# -- append methods ---------------------------------------------------------------------------------------
def test_append_message_creates_entry_with_correct_parent_chain(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("first"))
    id2 = m.append_message(assistant("second"))
    id3 = m.append_message(user("third"))
    for manager in (m, reopened(m)):
        entries = manager.get_entries()
        assert ids(entries) == [id1, id2, id3]
        assert [e["parentId"] for e in entries] == [None, id1, id2]
        assert all(e["type"] == "message" for e in entries)
        assert entries[0]["message"] == user("first")


def test_append_thinking_level_change_integrates_into_tree(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    thinking = m.append_thinking_level_change("high")
    after = m.append_message(assistant("response"))
    for manager in (m, reopened(m)):
        entry = manager.get_entry(thinking)
        assert entry is not None
        assert entry["type"] == "thinking_level_change"
        assert entry["parentId"] == msg
        assert entry["thinkingLevel"] == "high"
        assert manager.get_entry(after)["parentId"] == thinking  # type: ignore[index]


def test_append_model_change_integrates_into_tree(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    change = m.append_model_change("openai", "gpt-4")
    after = m.append_message(assistant("response"))
    for manager in (m, reopened(m)):
        entry = manager.get_entry(change)
        assert entry is not None
        assert (entry["type"], entry["parentId"]) == ("model_change", msg)
        assert (entry["provider"], entry["modelId"]) == ("openai", "gpt-4")
        assert manager.get_entry(after)["parentId"] == change  # type: ignore[index]


def test_append_compaction_integrates_into_tree(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    comp = m.append_compaction("summary", id1, 1000)
    after = m.append_message(user("3"))
    for manager in (m, reopened(m)):
        entry = manager.get_entry(comp)
        assert entry is not None
        assert entry["type"] == "compaction"
        assert entry["parentId"] == id2
        assert (entry["summary"], entry["firstKeptEntryId"], entry["tokensBefore"]) == ("summary", id1, 1000)
        # SPEC A2: sessiontree also stores the kept messages (pi has no retainedTail field)
        assert entry["retainedTail"] == [user("1"), assistant("2")]
        assert manager.get_entry(after)["parentId"] == comp  # type: ignore[index]


def test_append_custom_entry_integrates_into_tree(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    custom = m.append_custom_entry("my_data", {"key": "value"})
    after = m.append_message(assistant("response"))
    for manager in (m, reopened(m)):
        entry = manager.get_entry(custom)
        assert entry == {
            "type": "custom",
            "customType": "my_data",
            "data": {"key": "value"},
            "id": custom,
            "parentId": msg,
            "timestamp": entry["timestamp"],  # type: ignore[index]
        }
        assert list(entry) == ["type", "customType", "data", "id", "parentId", "timestamp"]  # pi's order
        assert manager.get_entry(after)["parentId"] == custom  # type: ignore[index]


def test_leaf_pointer_advances_after_each_append(make: Factory) -> None:
    m = make()
    assert m.get_leaf_id() is None
    id1 = m.append_message(user("1"))
    assert m.get_leaf_id() == id1
    id2 = m.append_message(assistant("2"))
    assert m.get_leaf_id() == id2
    id3 = m.append_thinking_level_change("high")
    assert m.get_leaf_id() == id3
    assert reopened(m).get_leaf_id() == id3


# -- save-entry.test.ts -----------------------------------------------------------------------------------
def test_saves_custom_entries_and_includes_them_in_tree_traversal(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    custom = m.append_custom_entry("my_data", {"foo": "bar"})
    msg2 = m.append_message(assistant("hi"))
    for manager in (m, reopened(m)):
        branch = manager.get_branch()
        assert ids(branch) == [msg, custom, msg2]
        assert branch[1]["parentId"] == msg and branch[2]["parentId"] == custom
        assert [x["role"] for x in manager.build_session_context().messages] == ["user", "assistant"]


# -- getPath / getBranch ----------------------------------------------------------------------------------
def test_get_branch_returns_empty_list_for_empty_session(make: Factory) -> None:
    assert make().get_branch() == []


def test_get_branch_returns_single_entry_path(make: Factory) -> None:
    m = make()
    only = m.append_message(user("hello"))
    assert ids(m.get_branch()) == [only]


def test_get_branch_returns_full_path_from_root_to_leaf(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    id3 = m.append_thinking_level_change("high")
    id4 = m.append_message(user("3"))
    for manager in (m, reopened(m)):
        assert ids(manager.get_branch()) == [id1, id2, id3, id4]
        assert [e["type"] for e in manager.get_branch()] == [
            "message",
            "message",
            "thinking_level_change",
            "message",
        ]


def test_get_branch_from_a_specified_entry(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    m.append_message(user("3"))
    assert ids(m.get_branch(id2)) == [id1, id2]
    assert m.get_branch("unknown") == []


# -- getTree ----------------------------------------------------------------------------------------------
def test_get_tree_returns_empty_list_for_empty_session(make: Factory) -> None:
    assert make().get_tree() == []


def test_get_tree_returns_single_root_for_linear_session(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    id3 = m.append_message(user("3"))
    for manager in (m, reopened(m)):
        assert shape(manager.get_tree()) == [[id1, [[id2, [[id3, []]]]]]]
        assert manager.get_tree()[0].entry["message"] == user("1")


def test_get_tree_with_branches_after_branch(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    id3 = m.append_message(user("3"))
    m.branch(id2)
    id4 = m.append_message(user("4-branch"))
    for manager in (m, reopened(m)):
        assert shape(manager.get_tree()) == [[id1, [[id2, [[id3, []], [id4, []]]]]]]


def test_get_tree_handles_multiple_branches_at_same_point(make: Factory) -> None:
    m = make()
    root = m.append_message(user("root"))
    fork = m.append_message(assistant("response"))
    branches = []
    for name in ("A", "B", "C"):
        m.branch(fork)
        branches.append(m.append_message(user(name)))
    for manager in (m, reopened(m)):
        tree = manager.get_tree()
        assert tree[0].id == root
        assert [c.id for c in tree[0].children[0].children] == branches
        assert [manager.get_entry(c)["message"]["content"] for c in branches] == ["A", "B", "C"]  # type: ignore[index]


def test_get_tree_handles_deep_branching(make: Factory) -> None:
    # main: 1-2-3-4, a branch from 2: 5-6, a branch from 5: 7
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    id3 = m.append_message(user("3"))
    id4 = m.append_message(assistant("4"))
    m.branch(id2)
    id5 = m.append_message(user("5"))
    id6 = m.append_message(assistant("6"))
    m.branch(id5)
    id7 = m.append_message(assistant("7"))
    for manager in (m, reopened(m)):
        assert shape(manager.get_tree()) == [
            [id1, [[id2, [[id3, [[id4, []]]], [id5, [[id6, []], [id7, []]]]]]]]
        ]


def test_reset_leaf_starts_a_new_root(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    m.reset_leaf()
    assert m.get_leaf_id() is None
    assert m.get_branch() == []
    id2 = m.append_message(user("2"))
    assert m.get_entry(id2)["parentId"] is None  # type: ignore[index]
    for manager in (m, reopened(m)):
        assert shape(manager.get_tree()) == [[id1, []], [id2, []]]


def test_get_children_in_insertion_order(make: Factory) -> None:
    m = make()
    root = m.append_message(user("root"))
    a = m.append_message(assistant("a"))
    m.branch(root)
    b = m.append_message(assistant("b"))
    assert ids(m.get_children(root)) == [a, b]
    assert m.get_children(b) == []
    assert m.get_children("unknown") == []


# -- branch -----------------------------------------------------------------------------------------------
def test_branch_moves_leaf_pointer_to_specified_entry(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    m.append_message(assistant("2"))
    m.branch(id1)
    assert m.get_leaf_id() == id1


def test_branch_throws_for_non_existent_entry(make: Factory) -> None:
    m = make()
    m.append_message(user("hello"))
    with pytest.raises(SessionNotFoundError, match=r"^Entry nonexistent not found$"):
        m.branch("nonexistent")


def test_branch_new_appends_become_children_of_branch_point(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    m.append_message(assistant("2"))
    m.branch(id1)
    id3 = m.append_message(assistant("branched"))
    assert m.get_entry(id3)["parentId"] == id1  # type: ignore[index]


def test_branch_is_not_persisted_reopen_continues_from_the_last_entry(tmp_path: Path) -> None:
    # pi: navigation is not written; after a restart the leaf is the last entry in file order (B§2.6)
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    m.branch(id1)
    again = reopened(m)
    assert again.get_leaf_id() == id2
    assert all(e["type"] != "leaf" for e in again.get_entries())
    m.close()


# -- branchWithSummary ------------------------------------------------------------------------------------
def test_branch_with_summary_inserts_summary_and_advances_leaf(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    m.append_message(user("3"))
    abandoned = m.append_message(assistant("4"))
    summary_id = m.branch_with_summary(id2, "Summary of abandoned work")
    assert m.get_leaf_id() == summary_id
    for manager in (m, reopened(m)):
        entry = manager.get_entry(summary_id)
        assert entry is not None
        assert entry["type"] == "branch_summary"
        assert entry["parentId"] == id2
        assert entry["summary"] == "Summary of abandoned work"
        # SPEC A2: fromId is the abandoned leaf; pi's code writes the branch point (id2) there.
        assert entry["fromId"] == abandoned
        assert ids(manager.get_branch(summary_id)) == [id1, id2, summary_id]


def test_branch_with_summary_from_an_empty_leaf_records_root(make: Factory) -> None:
    m = make()
    m.append_message(user("1"))
    m.reset_leaf()
    summary_id = m.branch_with_summary(None, "fresh start")
    entry = m.get_entry(summary_id)
    assert entry is not None
    assert (entry["parentId"], entry["fromId"]) == (None, "root")


def test_branch_with_summary_throws_for_non_existent_entry(make: Factory) -> None:
    m = make()
    leaf = m.append_message(user("hello"))
    with pytest.raises(SessionNotFoundError, match=r"^Entry nonexistent not found$"):
        m.branch_with_summary("nonexistent", "summary")
    assert m.get_leaf_id() == leaf
    assert len(m.get_entries()) == 1


# -- getLeafEntry / getEntry ------------------------------------------------------------------------------
def test_get_leaf_entry_returns_none_for_empty_session(make: Factory) -> None:
    assert make().get_leaf_entry() is None


def test_get_leaf_entry_returns_current_leaf_entry(make: Factory) -> None:
    m = make()
    m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    leaf = m.get_leaf_entry()
    assert leaf is not None and leaf["id"] == id2
    assert leaf["message"] == assistant("2")


def test_get_entry_returns_none_for_non_existent_id(make: Factory) -> None:
    assert make().get_entry("nonexistent") is None


def test_get_entry_returns_entry_by_id(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("first"))
    id2 = m.append_message(assistant("second"))
    for manager in (m, reopened(m)):
        assert manager.get_entry(id1)["message"]["content"] == "first"  # type: ignore[index]
        assert manager.get_entry(id2)["message"]["content"] == [{"type": "text", "text": "second"}]  # type: ignore[index]


# -- buildSessionContext with branches --------------------------------------------------------------------
def test_build_session_context_returns_messages_from_current_branch_only(make: Factory) -> None:
    m = make()
    m.append_message(user("msg1"))
    id2 = m.append_message(assistant("msg2"))
    m.append_message(user("msg3"))
    m.branch(id2)
    m.append_message(user("msg4-branch"))
    ctx = m.build_session_context()
    assert [
        x["content"] if isinstance(x["content"], str) else x["content"][0]["text"] for x in ctx.messages
    ] == [
        "msg1",
        "msg2",
        "msg4-branch",
    ]


# -- createBranchedSession --------------------------------------------------------------------------------
def test_create_branched_session_throws_for_non_existent_entry(make: Factory) -> None:
    m = make()
    m.append_message(user("hello"))
    before = m.get_session_id()
    with pytest.raises(SessionNotFoundError, match=r"^Entry nonexistent not found$"):
        m.create_branched_session("nonexistent")
    assert m.get_session_id() == before


def test_create_branched_session_in_memory_returns_none_and_keeps_the_path() -> None:
    m = SessionManager.in_memory("/proj")
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    m.append_message(user("3"))
    old_id = m.get_session_id()
    assert m.create_branched_session(id2) is None
    assert ids(m.get_entries()) == [id1, id2]
    assert m.get_session_id() != old_id
    assert m.get_leaf_id() == id2
    header = m.get_header()
    assert header is not None and "parentSession" not in header


def test_create_branched_session_extracts_correct_path_from_branched_tree(make: Factory) -> None:
    m = make()
    id1 = m.append_message(user("1"))
    id2 = m.append_message(assistant("2"))
    m.append_message(user("3"))
    m.branch(id2)
    id4 = m.append_message(user("4"))
    id5 = m.append_message(assistant("5"))
    m.create_branched_session(id5)
    for manager in (m, reopened(m)):
        assert ids(manager.get_entries()) == [id1, id2, id4, id5]
        assert [e["parentId"] for e in manager.get_entries()] == [None, id1, id2, id4]


def _header_count_and_ids(path: Path) -> tuple[int, list[str]]:
    objects = [loads(line) for line in path.read_bytes().split(b"\n") if line]
    return sum(o["type"] == "session" for o in objects), [o["id"] for o in objects if o["type"] != "session"]


def test_create_branched_session_does_not_duplicate_entries_when_forking_from_first_user_message(
    tmp_path: Path,
) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    id1 = m.append_message(user("first question"))
    m.append_message(assistant("first answer"))
    new_file = m.create_branched_session(id1)
    assert new_file is not None
    # pi defers the write until an assistant message exists; sessiontree writes at once (SPEC A3)
    headers, written = _header_count_and_ids(Path(new_file))
    assert (headers, written) == (1, [id1])
    custom = m.append_custom_entry("marker", {"n": 1})
    answer = m.append_message(assistant("new answer"))
    headers, written = _header_count_and_ids(Path(new_file))
    assert headers == 1
    assert written == [id1, custom, answer]
    assert len(set(written)) == len(written)
    m.close()


def test_create_branched_session_writes_file_immediately_with_assistant_messages(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    m.append_message(user("q"))
    id2 = m.append_message(assistant("a"))
    m.append_message(user("q2"))
    old_file = m.get_session_file()
    new_file = m.create_branched_session(id2)
    assert new_file is not None and new_file != old_file
    assert Path(new_file).parent == Path(old_file).parent  # type: ignore[arg-type]
    headers, written = _header_count_and_ids(Path(new_file))
    assert headers == 1 and len(written) == 2
    header = m.get_header()
    assert header is not None and header["parentSession"] == old_file
    m.close()
