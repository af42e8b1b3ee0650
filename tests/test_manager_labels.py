"""Labels (pi's session-manager/labels.test.ts), in memory, on real files, in SQLite and in PostgreSQL.

Also: labels and their timestamps on ``get_tree()`` nodes after a reopen, clearing rules, and
``create_branched_session`` keeping the chain where pi orphans the entry after a dropped label (SPEC A3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

import pytest

from sessiontree import SessionManager, SessionNotFoundError
from sessiontree.tree.tree_index import TreeNode
from tests.builders import MANAGER_KINDS, Factory, assistant, manager_factory, reopened, user


def ticking_clock(start_ms: int = 1_764_770_400_000) -> Callable[[], int]:
    """A clock that advances one second per call, so every entry has its own timestamp."""
    ticks = count()
    return lambda: start_ms + 1000 * next(ticks)


@pytest.fixture(params=MANAGER_KINDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    store = request.getfixturevalue("shared_postgres_store") if request.param == "postgres" else None
    with manager_factory(request.param, tmp_path, clock=ticking_clock, store=store) as factory:
        yield factory


def nodes_by_id(roots: list[TreeNode]) -> dict[str, TreeNode]:
    out: dict[str, TreeNode] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        out[node.id] = node
        stack.extend(node.children)
    return out


# -- pi's labels.test.ts ----------------------------------------------------------------------------------
def test_sets_and_gets_labels(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    label_id = m.append_label_change(msg, "checkpoint")
    for manager in (m, reopened(m)):
        assert manager.get_label(msg) == "checkpoint"
        entry = manager.get_entry(label_id)
        assert entry is not None
        assert entry["type"] == "label"
        assert (entry["targetId"], entry["label"]) == (msg, "checkpoint")
        assert list(entry) == ["type", "id", "parentId", "timestamp", "targetId", "label"]


def test_clears_labels_with_none(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    m.append_label_change(msg, "checkpoint")
    clear_id = m.append_label_change(msg, None)
    for manager in (m, reopened(m)):
        assert manager.get_label(msg) is None
        assert manager.get_label_timestamp(msg) is None
        entry = manager.get_entry(clear_id)
        assert entry is not None and "label" not in entry  # a cleared label has no key, as pi writes it
        assert manager.get_tree()[0].label is None


def test_an_empty_label_clears_too(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    m.append_label_change(msg, "checkpoint")
    m.append_label_change(msg, "")
    for manager in (m, reopened(m)):
        assert manager.get_label(msg) is None
        assert manager.get_labels() == {}


def test_a_whitespace_label_counts_as_a_label_as_in_the_coding_agent(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    m.append_label_change(msg, "  ")
    assert reopened(m).get_label(msg) == "  "


def test_last_label_wins(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    m.append_label_change(msg, "first")
    m.append_label_change(msg, "second")
    last = m.append_label_change(msg, "third")
    for manager in (m, reopened(m)):
        assert manager.get_label(msg) == "third"
        node = manager.get_tree()[0]
        assert node.id == msg
        assert node.label == "third"
        assert node.label_timestamp == manager.get_entry(last)["timestamp"]  # type: ignore[index]


def test_labels_are_included_in_tree_nodes(make: Factory) -> None:
    m = make()
    root = m.append_message(user("hello"))
    child = m.append_message(assistant("hi"))
    root_label = m.append_label_change(root, "start")
    child_label = m.append_label_change(child, "response")
    for manager in (m, reopened(m)):
        nodes = nodes_by_id(manager.get_tree())
        assert (nodes[root].label, nodes[child].label) == ("start", "response")
        assert nodes[root].label_timestamp == manager.get_entry(root_label)["timestamp"]  # type: ignore[index]
        assert nodes[child].label_timestamp == manager.get_entry(child_label)["timestamp"]  # type: ignore[index]
        assert nodes[root].label_timestamp != nodes[child].label_timestamp
        assert nodes[root_label].label is None  # the label entry itself is an unlabelled node
        as_dict = manager.get_tree()[0].to_dict()
        assert (as_dict["label"], as_dict["labelTimestamp"]) == ("start", nodes[root].label_timestamp)


def test_labels_are_preserved_in_create_branched_session(make: Factory) -> None:
    m = make()
    msg1 = m.append_message(user("hello"))
    msg2 = m.append_message(assistant("hi"))
    m.append_label_change(msg1, "important")
    m.append_label_change(msg2, "also-important")
    msg3 = m.append_message(user("followup"))
    before = {t: m.get_label_timestamp(t) for t in (msg1, msg2)}
    m.create_branched_session(msg3)
    for manager in (m, reopened(m)):
        assert manager.get_label(msg1) == "important"
        assert manager.get_label(msg2) == "also-important"
        labels = [e for e in manager.get_entries() if e["type"] == "label"]
        assert len(labels) == 2
        assert [e["timestamp"] for e in labels] == [before[msg1], before[msg2]]  # original times are kept
        nodes = nodes_by_id(manager.get_tree())
        assert nodes[msg1].label_timestamp == before[msg1]
        assert nodes[msg2].label_timestamp == before[msg2]
        # the new labels hang after the path, chained
        assert labels[0]["parentId"] == msg3 and labels[1]["parentId"] == labels[0]["id"]
        assert manager.get_leaf_id() == labels[1]["id"]


def test_labels_not_on_path_are_not_preserved_in_create_branched_session(make: Factory) -> None:
    m = make()
    msg1 = m.append_message(user("hello"))
    msg2 = m.append_message(assistant("hi"))
    msg3 = m.append_message(user("followup"))
    m.append_label_change(msg1, "first")
    m.append_label_change(msg2, "second")
    m.append_label_change(msg3, "third")
    m.create_branched_session(msg2)
    for manager in (m, reopened(m)):
        assert manager.get_label(msg1) == "first"
        assert manager.get_label(msg2) == "second"
        assert manager.get_label(msg3) is None
        assert manager.get_entry(msg3) is None
        assert sum(e["type"] == "label" for e in manager.get_entries()) == 2


def test_labels_are_not_included_in_build_session_context(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    m.append_label_change(msg, "checkpoint")
    ctx = m.build_session_context()
    assert [x["role"] for x in ctx.messages] == ["user"]


def test_throws_when_labeling_non_existent_entry(make: Factory) -> None:
    m = make()
    leaf = m.append_message(user("hello"))
    with pytest.raises(SessionNotFoundError, match=r"^Entry non-existent not found$"):
        m.append_label_change("non-existent", "label")
    assert m.get_leaf_id() == leaf
    assert len(reopened(m).get_entries()) == 1


# -- beyond pi's suite ------------------------------------------------------------------------------------
def test_a_label_entry_is_a_tree_node_and_moves_the_leaf(make: Factory) -> None:
    m = make()
    msg = m.append_message(user("hello"))
    label_id = m.append_label_change(msg, "x")
    assert m.get_leaf_id() == label_id
    after = m.append_message(assistant("hi"))
    assert m.get_entry(after)["parentId"] == label_id  # type: ignore[index]
    assert [e["id"] for e in m.get_branch()] == [msg, label_id, after]


def test_labels_on_another_branch_still_apply(make: Factory) -> None:
    m = make()
    root = m.append_message(user("root"))
    side = m.append_message(assistant("side"))
    m.append_label_change(root, "from-side-branch")
    m.branch(root)
    m.append_message(assistant("main"))
    assert m.get_label(root) == "from-side-branch"
    assert reopened(m).get_labels() == {root: "from-side-branch"}
    assert m.get_label(side) is None


def test_get_labels_keeps_insertion_order_and_re_adds_after_a_clear(make: Factory) -> None:
    m = make()
    a = m.append_message(user("a"))
    b = m.append_message(assistant("b"))
    m.append_label_change(a, "A")
    m.append_label_change(b, "B")
    m.append_label_change(a, None)
    m.append_label_change(a, "A2")
    for manager in (m, reopened(m)):
        assert list(manager.get_labels().items()) == [(b, "B"), (a, "A2")]


def test_branched_session_keeps_the_chain_where_pi_orphans_the_entry_after_a_label(make: Factory) -> None:
    m = make()
    u1 = m.append_message(user("u1"))
    a1 = m.append_message(assistant("a1"))
    dropped_label = m.append_label_change(u1, "mark")
    u2 = m.append_message(user("u2"))  # its parent is the label entry, which the branched copy drops
    a2 = m.append_message(assistant("a2"))
    expected = m.build_session_context().to_dict()
    m.create_branched_session(a2)
    for manager in (m, reopened(m)):
        assert manager.get_entry(dropped_label) is None
        # pi leaves u2 pointing at the dropped label (an orphan root whose context loses u1/a1);
        # sessiontree re-parents it onto the nearest kept ancestor (SPEC A3)
        assert manager.get_entry(u2)["parentId"] == a1  # type: ignore[index]
        assert len(manager.get_tree()) == 1
        assert manager.build_session_context(a2).to_dict() == expected
        assert manager.get_label(u1) == "mark"


def test_a_file_label_to_an_unknown_target_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"label","id":"l1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"targetId":"ghost","label":"boo"}\n'
    )
    manager = SessionManager.open(path, read_only=True)
    assert manager.get_label("ghost") == "boo"  # pi accepts it on load
    problems = [p for p in manager.problems if p.kind == "unknown_label_target"]
    assert len(problems) == 1
    assert problems[0].entry_id == "ghost"
    assert str(path) in problems[0].message
