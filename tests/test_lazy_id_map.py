"""The id -> position map of a scanned file store is built on first use: lookups, walks, duplicates and
appends give the same answers before and after it exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessiontree import SessionManager
from sessiontree.storage import JsonlStore
from sessiontree.tree.tree_index import TreeIndex
from tests.test_storage_jsonl import msg, write


def _branchy(count: int, far_every: int) -> list[dict[str, Any]]:
    """A chain ``e0 .. e<count-1>`` where every ``far_every``-th entry branches from ``e0`` (a parent as
    far back as the file allows) and every 7th from the entry three before it."""
    out = [msg("e0", None)]
    for k in range(1, count):
        parent = f"e{k - 1}"
        if k % far_every == 0:
            parent = "e0"
        elif k % 7 == 0:
            parent = f"e{k - 3}"
        out.append(msg(f"e{k}", parent, f"t{k}"))
    return out


def _expected_path(entries: list[dict[str, Any]], leaf: int) -> list[int]:
    where = {e["id"]: k for k, e in enumerate(entries)}
    out = [leaf]
    while entries[out[-1]]["parentId"] is not None:
        out.append(where[entries[out[-1]]["parentId"]])
    return out[::-1]


def test_open_and_context_build_no_id_map_and_walks_match(tmp_path: Path) -> None:
    entries = _branchy(40_000, 20_011)  # far parents: past the near-search windows
    write(tmp_path / "s.jsonl", *entries)
    manager = SessionManager.open(tmp_path / "s.jsonl", read_only=True)
    store = manager._store
    assert isinstance(store, JsonlStore)
    manager.build_session_context()
    assert store._index_map is None  # nothing needed the map
    tree = TreeIndex(store)
    for leaf in (39_999, 20_011, 20_012, 39_990, 1, 0):
        positions = tree.path_to_root(leaf)
        assert positions == _expected_path(entries, leaf), leaf
    assert store.index_of("e123") == 123 and store.index_of("nope") is None
    assert store.has_id("e39999") and not store.has_id("nope")
    assert store._index_map is not None and store._id_set is None  # a lookup in the middle built it
    assert store.index_of("e123") == 123 and store.has_id("e5") and not store.has_id("nope")
    assert tree.path_to_root(39_999) == _expected_path(entries, 39_999)
    manager.close()


def test_far_parent_lookup_before_the_map_exists(tmp_path: Path) -> None:
    entries = _branchy(30_000, 29_999)
    write(tmp_path / "s.jsonl", *entries)
    store = JsonlStore.open(tmp_path / "s.jsonl", read_only=True)
    assert store.index_before("e0", 29_999) == 0  # beyond every window: the map answers
    store.close()
    store = JsonlStore.open(tmp_path / "s.jsonl", read_only=True)
    assert store.index_before("e29000", 29_100) == 29_000 and store._index_map is None
    assert store.index_before("e29500", 29_100) == 29_500  # after ``before``: the map answers
    assert store.index_before("missing", 10) is None
    store.close()


def test_append_after_a_lazy_open_reports_a_repeated_id(tmp_path: Path) -> None:
    write(tmp_path / "s.jsonl", msg("a", None), msg("b", "a"), msg("c", "b"))
    store = JsonlStore.open(tmp_path / "s.jsonl")
    assert store._index_map is None
    store.append(msg("b", "c", "again"))
    assert store.has_duplicates and store.index_of("b") == 3
    (problem,) = [p for p in store.problems if p.kind == "duplicate_id"]
    assert problem.entry_id == "b" and problem.line == 5 and "also on line 3" in problem.message
    store.append(msg("d", "b"))
    assert store.index_of("d") == 4 and store.parent_positions() == [-1, 0, 3, 2, 3]  # the later "b" wins
    store.close()


def test_duplicates_and_dangling_parents_found_at_open(tmp_path: Path) -> None:
    write(tmp_path / "s.jsonl", msg("a", None), msg("b", "zz"), msg("a", "b"))
    store = JsonlStore.open(tmp_path / "s.jsonl", read_only=True)
    assert [p.kind for p in store.problems] == ["duplicate_id", "dangling_parent"]
    assert store.index_of("a") == 2 and store.has_id("b") and not store.has_id("zz")
    store.close()
    write(tmp_path / "t.jsonl", msg("a", None), msg("b", "zz"), msg("c", ""))
    store = JsonlStore.open(tmp_path / "t.jsonl", read_only=True)
    assert [p.kind for p in store.problems] == ["dangling_parent", "dangling_parent"]
    assert store.index_of("") is None and store.index_of("c") == 2 and store._index_map is None
    store.close()
