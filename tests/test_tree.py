"""TreeIndex: pi's getTree on every conformance case, children, paths, cycles and very deep chains."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from sessiontree.storage import JsonlStore, MemoryStore
from sessiontree.tree.tree_index import TreeIndex, TreeNode
from tests.conformance.support import unique_id_tree
from tests.conftest import list_cases, require_conformance

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}


def e(
    entry_id: str, parent: str | None, ts: str | None = "2025-01-01T00:00:01.000Z", kind: str = "message"
) -> dict:
    out: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": parent}
    if ts is not None:
        out["timestamp"] = ts
    return out


def preorder(roots: list[TreeNode]) -> list[dict[str, Any]]:
    out = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        entry = node.entry
        out.append(
            {
                "id": entry["id"],
                "type": entry["type"],
                "parentId": entry.get("parentId"),
                "label": node.label,
                "labelTimestamp": node.label_timestamp,
                "children": [child.id for child in node.children],
            }
        )
        stack.extend(reversed(node.children))
    return out


@pytest.mark.parametrize("name", list_cases("cases"))
def test_get_tree_matches_pi(name: str, copy_input: Any) -> None:
    case = require_conformance() / "cases" / name
    files = json.loads((case / "files.json").read_text())["files"]
    current = [f for f in files if f.get("current") and f.get("exists")]
    if not current:
        pytest.skip("pi wrote no file in this case")
    path = copy_input(case / current[0]["name"])
    expected = unique_id_tree(json.loads((case / "tree.json").read_text()))
    labels = {n["id"]: (n["label"], n["labelTimestamp"]) for n in expected["nodes"] if n["label"] is not None}
    store = JsonlStore.open(path, read_only=True)
    tree = TreeIndex(store)
    roots = tree.get_tree(labels)
    assert [r.id for r in roots] == expected["roots"]
    fields = ("id", "type", "parentId", "label", "labelTimestamp", "children")
    assert preorder(roots) == [{k: n[k] for k in fields} for n in expected["nodes"]]
    assert tree.problems == []


def test_children_follow_pi_get_children_with_duplicates(copy_input: Any) -> None:
    case = require_conformance() / "cases" / "edge-open-odd-tree"
    store = JsonlStore.open(copy_input(case / "input.jsonl"), read_only=True)
    tree = TreeIndex(store)
    ids = lambda positions: [store.id_at(i) for i in positions]  # noqa: E731
    assert ids(tree.children_of("r1")) == ["c1", "c2", "c3", "c4"]
    assert tree.children_of("c1") == []  # the id d1 resolves to its last copy, whose parent is c4
    assert tree.children_of("c4") == [store.index_of("d1")]
    assert ids(tree.children_of(None)) == ["r1"]


def test_path_to_root_and_children_on_a_branchy_tree() -> None:
    store = MemoryStore(
        HEADER, [e("a", None), e("b", "a"), e("c", "a"), e("d", "c"), e("o", "gone"), e("p", "o")]
    )
    tree = TreeIndex(store)
    assert tree.path_to_root(3) == [0, 2, 3]
    assert tree.path_to_root(-1) == [4, 5]  # a dangling parent ends the walk
    assert tree.children_of("a") == [1, 2]
    store.append(e("f", "d"))
    tree.on_append(6)
    assert tree.path_to_root(6) == [0, 2, 3, 6]
    assert tree.children_of("d") == [6]
    with pytest.raises(IndexError):
        tree.path_to_root(7)


def test_self_parent_and_two_cycle_do_not_hang() -> None:
    store = MemoryStore(
        HEADER, [e("r", None), e("s", "s"), e("a", "b"), e("b", "a"), e("x", "a"), e("k", "r")]
    )
    tree = TreeIndex(store)
    assert tree.path_to_root(1) == [1]
    assert tree.path_to_root(2) == [3, 2]
    assert tree.path_to_root(4) == [3, 2, 4]
    roots = tree.get_tree()
    assert [r.id for r in roots] == ["r", "s", "a"]
    assert [c.id for c in roots[2].children] == ["b", "x"]
    assert roots[2].children[0].children == []  # the edge closing the cycle is cut
    assert sorted(p.entry_id for p in tree.problems if p.kind == "cycle") == ["a", "s"]
    assert sorted(sorted(c) for c in tree.find_cycles()) == [[1], [2, 3]]
    assert len(tree.problems) == 2  # each cycle reported once


def test_a_cycle_through_a_duplicated_id_reachable_from_a_root() -> None:
    # pi's getTree would loop forever on this: node "a" (its last copy) hangs under "b", which hangs under "a".
    # Each id is placed once, by its last copy, so "a" and "b" form a cycle with no root: the cycle's first
    # entry in file order ("b", line 3; the last "a" is on line 4) becomes the root and the closing edge is cut.
    store = MemoryStore(HEADER, [e("a", None), e("b", "a"), e("a", "b")])
    tree = TreeIndex(store)
    roots = tree.get_tree()
    assert [r.id for r in roots] == ["b"]
    assert [c.id for c in roots[0].children] == ["a"]
    assert roots[0].children[0].children == []
    assert roots[0].to_dict()["children"][0]["children"] == []
    assert [(p.kind, p.entry_id) for p in tree.problems] == [("cycle", "b")]


def test_duplicated_lines_give_a_tree_with_each_id_once() -> None:
    # Every line twice (61 lines): pi's tree holds each child once per copy, 2^depth nodes in any walk.
    chain = [e(f"n{i}", f"n{i - 1}" if i else None) for i in range(30)]
    store = MemoryStore(HEADER, [x for entry in chain for x in (entry, entry)])
    tree = TreeIndex(store)
    (root,) = tree.get_tree()
    ids, node = [root.id], root
    while node.children:
        (node,) = node.children
        ids.append(node.id)
    assert ids == [f"n{i}" for i in range(30)]
    as_dict, depth = root.to_dict(), 1
    while as_dict["children"]:
        (as_dict,) = as_dict["children"]
        depth += 1
    assert depth == 30


def test_twenty_thousand_deep_chain() -> None:
    n = 20_000
    store = MemoryStore(HEADER, [e(f"n{i}", f"n{i - 1}" if i else None) for i in range(n)])
    tree = TreeIndex(store)
    assert tree.path_to_root(n - 1) == list(range(n))
    (root,) = tree.get_tree()
    depth, node = 1, root
    while node.children:
        node = node.children[0]
        depth += 1
    assert depth == n
    as_dict = root.to_dict()
    depth = 1
    while as_dict["children"]:
        as_dict = as_dict["children"][0]
        depth += 1
    assert depth == n


def test_siblings_sort_by_time_stably_with_nan_last_like_pi() -> None:
    store = MemoryStore(
        HEADER,
        [
            e("r", None),
            e("late", "r", "2025-01-01T00:00:09.000Z"),
            e("tie1", "r", "2025-01-01T00:00:05.000Z"),
            e("none", "r", None),
            e("tie2", "r", "2025-01-01T00:00:05.000Z"),
            e("early", "r", "2025-01-01T00:00:01+02:00"),
        ],
    )
    (root,) = TreeIndex(store).get_tree()
    # the order Node 20's Array.prototype.sort gives for this comparator (NaN compares as "not less")
    assert [c.id for c in root.children] == ["early", "tie1", "tie2", "late", "none"]


def test_labels_and_to_dict_shape() -> None:
    store = MemoryStore(HEADER, [e("a", None), e("b", "a")])
    (root,) = TreeIndex(store).get_tree({"b": ("start", "2025-01-01T00:00:02.000Z"), "zz": ("x", None)})
    assert root.to_dict() == {
        "entry": e("a", None),
        "children": [
            {
                "entry": e("b", "a"),
                "children": [],
                "label": "start",
                "labelTimestamp": "2025-01-01T00:00:02.000Z",
            }
        ],
    }
    assert root.label is None and repr(root) == "TreeNode('a', children=1)"


def test_tree_nodes_are_told_apart_by_identity_and_shown_briefly() -> None:
    from rich.pretty import pretty_repr

    store = MemoryStore(HEADER, [e("a", None), e("b", "a")])
    tree = TreeIndex(store)
    (first,), (again,) = tree.get_tree(), tree.get_tree()
    assert first == first and first != again and first.id == again.id  # not equal by their fields
    assert len({first, again, first.children[0], TreeNode(store, 0)}) == 4  # hashable, by identity
    first.label = "kept"
    assert (first.label, again.label) == ("kept", None)
    with pytest.raises(AttributeError):
        first.other = 1  # type: ignore[attr-defined]
    # what rich's pretty printer shows is repr's brief form, not every field and the whole subtree
    assert pretty_repr(first) == repr(first) == "TreeNode('a', children=1)"


def test_incremental_index_matches_a_fresh_one() -> None:
    rnd = random.Random(7)
    store = MemoryStore(HEADER)
    tree = TreeIndex(store)
    ids: list[str] = []
    for i in range(400):
        parent = rnd.choice([None, *ids[-20:]]) if ids else None
        if ids and rnd.random() < 0.03:
            parent = "missing"
        entry_id = f"e{i}" if rnd.random() > 0.02 or not ids else rnd.choice(ids)
        store.append(e(entry_id, parent, f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"))
        tree.on_append(len(store) - 1)
        ids.append(entry_id)
        if i % 37 == 0:
            fresh = TreeIndex(store)
            probe = rnd.randrange(len(store))
            assert tree.path_to_root(probe) == fresh.path_to_root(probe)
            for pid in (None, *ids[-5:]):
                assert tree.children_of(pid) == fresh.children_of(pid)
            assert preorder(tree.get_tree()) == preorder(fresh.get_tree())


def test_tree_follows_a_store_that_was_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = JsonlStore.create(path, HEADER)
    writer.append(e("a", None))
    late = JsonlStore.open(path)
    tree = TreeIndex(late)
    assert tree.children_of("a") == []
    writer.append(e("b", "a"))
    writer.close()
    late.append(e("c", "b"))  # re-indexes the file under the lock first
    tree.on_append(len(late) - 1)
    assert tree.path_to_root(2) == [0, 1, 2]
    assert tree.children_of("a") == [1]
    late.close()


def test_a_parent_appended_after_its_child_is_found() -> None:
    store = MemoryStore(HEADER, [e("a", None), e("o", "later")])
    tree = TreeIndex(store)
    assert tree.path_to_root(1) == [1]
    assert [r.id for r in tree.get_tree()] == ["a", "o"]
    store.append(e("later", "a"))
    tree.on_append(2)
    assert tree.path_to_root(1) == [0, 2, 1]
    assert [r.id for r in tree.get_tree()] == ["a"]
    assert tree.children_of("later") == [1]


@pytest.mark.parametrize("start", [0, 1])
def test_a_cycle_is_reported_once_by_its_first_entry_whatever_the_walk(start: int) -> None:
    store = MemoryStore(HEADER, [e("a", "b"), e("b", "a")])
    tree = TreeIndex(store)
    tree.path_to_root(start)
    tree.get_tree()
    tree.find_cycles()
    assert [(p.kind, p.entry_id) for p in tree.problems] == [("cycle", "a")]


def test_a_duplicate_cycle_is_reported_by_its_first_entry() -> None:
    store = MemoryStore(HEADER, [e("r", None), e("x", "r"), e("a", "x"), e("b", "a"), e("x", "b")])
    tree = TreeIndex(store)
    tree.get_tree()
    tree.path_to_root(4)
    assert [p.kind for p in tree.problems] == ["cycle"]


def _random_entries(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Mostly runs of consecutive links with branches back, and now and then a parent that comes later, is
    missing, empty, the entry itself or null; timestamps that tie, so siblings keep their order."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        roll = rng.random()
        if i == 0 or roll < 0.03:
            parent: str | None = None
        elif roll < 0.06:
            parent = rng.choice(["missing", "", f"n{i}", f"n{min(n - 1, i + rng.randint(1, 5))}"])
        elif roll < 0.25:
            parent = f"n{rng.randrange(i)}"
        else:
            parent = f"n{i - 1}"
        out.append(e(f"n{i}", parent, f"2025-01-01T00:00:{rng.randint(0, 9):02d}.000Z"))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_tree_of_ordered_parents_is_the_tree_of_the_walk(seed: int, tmp_path: Path) -> None:
    """A store's ``ordered_parents`` (the runs' starts and their parents, no id map, no walk) gives the very
    tree the walk that looks for cycles gives, and leaves any tree it cannot prove ordered to that walk."""
    rng = random.Random(seed)
    entries = _random_entries(rng, rng.choice([5, 40, 300]))
    if seed % 3 == 0:  # no odd parents at all: the ordered construction must be taken
        entries = [e(x["id"], x["parentId"] if x["parentId"] in {y["id"] for y in entries[:k]} else None)
                   for k, x in enumerate(entries)]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [HEADER, *entries]))
    labels = {f"n{k}": (f"L{k}", None) for k in range(0, len(entries), 7)}
    for store in (JsonlStore.open(path, read_only=True), MemoryStore(HEADER, entries)):
        ordered = store.ordered_parents()
        if seed % 3 == 0:
            assert ordered is not None
        fast = TreeIndex(store)
        got = preorder(fast.get_tree(labels))
        cycles = fast.find_cycles()
        store.ordered_parents = lambda: None  # type: ignore[method-assign]
        walked = TreeIndex(store)
        assert got == preorder(walked.get_tree(labels))
        assert cycles == walked.find_cycles() and fast.problems == walked.problems
        if ordered is not None:
            assert walked.problems == []  # proven ordered: there was no cycle to find
            assert all(p < s for s, p in zip(*ordered, strict=True))


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_path_asked_before_its_awaited_parent_arrives_is_walked_again(kind: str, tmp_path: Path) -> None:
    """The path to an entry whose parent is missing is cached as a root's; appending that parent later must
    re-point it, even when nothing asked for the whole tree in between (which once computed the awaited
    ids as a side effect)."""
    entries = [e("a", None), e("o", "later")]
    if kind == "memory":
        store: Any = MemoryStore(HEADER, entries)
    else:
        path = tmp_path / "s.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in [HEADER, *entries]))
        store = JsonlStore.open(path)
    tree = TreeIndex(store)
    assert tree.path_to_root(1) == [1]
    store.append(e("later", "a"))
    tree.on_append(2)
    assert tree.path_to_root(1) == [0, 2, 1]
    store.append(e("c", "o"))
    tree.on_append(3)
    assert tree.path_to_root(3) == [0, 2, 1, 3]
    store.append(e("d", "gone"))  # awaits an id of its own
    tree.on_append(4)
    assert tree.path_to_root(4) == [4]
    store.append(e("gone", "c"))
    tree.on_append(5)
    assert tree.path_to_root(4) == [0, 2, 1, 3, 5, 4]
    store.close()
