"""Random operation sequences against a small reference model: same path, context, tree, and re-open state."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import SessionManager, build_session_context


class Reference:
    """The simplest possible session: a list of entry dicts, a leaf id and a label map."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.labels: dict[str, str] = {}

    def by_id(self) -> dict[str, dict[str, Any]]:
        return {e["id"]: e for e in self.entries}

    def path(self, leaf: str | None = None) -> list[str]:
        leaf = self.leaf if leaf is None else leaf
        index = self.by_id()
        out: list[str] = []
        while leaf is not None and leaf in index:
            out.append(leaf)
            leaf = index[leaf]["parentId"]
        return out[::-1]

    def add(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        if entry["type"] == "label":
            if entry.get("label"):
                self.labels[entry["targetId"]] = entry["label"]
            else:
                self.labels.pop(entry["targetId"], None)
        self.leaf = entry["id"]

    def tree(self) -> list[tuple[str, int]]:
        """(id, depth) in pre-order; children in file order (timestamps increase with file order here)."""
        children: dict[str | None, list[str]] = {}
        for e in self.entries:
            children.setdefault(e["parentId"], []).append(e["id"])
        out: list[tuple[str, int]] = []

        def walk(node_id: str, depth: int) -> None:
            out.append((node_id, depth))
            for child in children.get(node_id, []):
                walk(child, depth + 1)

        for root in children.get(None, []):
            walk(root, 0)
        return out


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.text(max_size=12)),
        st.tuples(st.just("assistant"), st.text(max_size=12)),
        st.tuples(st.just("branch"), st.integers(0, 10_000)),
        st.tuples(st.just("reset"), st.none()),
        st.tuples(st.just("label"), st.tuples(st.integers(0, 10_000), st.sampled_from(["a", "b", "", None]))),
        st.tuples(st.just("compact"), st.integers(0, 10_000)),
        st.tuples(st.just("branch_summary"), st.integers(-1, 10_000)),
        st.tuples(st.just("fork"), st.integers(0, 10_000)),
        st.tuples(st.just("reopen"), st.none()),
        st.tuples(st.just("thinking"), st.sampled_from(["low", "high"])),
    ),
    max_size=40,
)


def _flatten(manager: SessionManager) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    stack = [(n, 0) for n in reversed(manager.get_tree())]
    while stack:
        node, depth = stack.pop()
        out.append((node.entry["id"], depth))
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return out


@pytest.fixture(params=["file", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path_factory: Any) -> str | None:
    """Where the sessions live: files (``None``), a SQLite database, the run's PostgreSQL database."""
    if request.param == "postgres":
        return str(request.getfixturevalue("shared_postgres_store"))
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('prop-db')}/sessions.db"
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_random_operations_match_reference(
    ops: list[tuple[str, Any]], tmp_path_factory: Any, store: str | None
) -> None:
    tmp: Path = tmp_path_factory.mktemp("prop")
    ticks = itertools.count(1_700_000_000_000, 1000)
    counter = itertools.count()
    options = {"clock": lambda: next(ticks), "id_factory": lambda existing: f"e{next(counter):05d}"}
    manager = (
        SessionManager.create("/proj", tmp, **options)
        if store is None
        else SessionManager.create("/proj", store=store, **options)
    )
    ref = Reference()
    for kind, arg in ops:
        ids = [e["id"] for e in ref.entries]
        pick = ids[arg % len(ids)] if ids and isinstance(arg, int) and arg >= 0 else None
        if kind in ("user", "assistant"):
            message: dict[str, Any] = {
                "role": kind,
                "content": [{"type": "text", "text": arg}],
                "timestamp": 1,
            }
            if kind == "assistant":
                message.update({"api": "x", "provider": "p", "model": "m", "stopReason": "stop"})
            new_id = manager.append_message(message)
            ref.add(_last(manager, new_id))
        elif kind == "thinking":
            ref.add(_last(manager, manager.append_thinking_level_change(arg)))
        elif kind == "branch" and pick is not None:
            manager.branch(pick)
            ref.leaf = pick
        elif kind == "reset":
            manager.reset_leaf()
            ref.leaf = None
        elif kind == "label" and ids:
            target = ids[arg[0] % len(ids)]
            ref.add(_last(manager, manager.append_label_change(target, arg[1])))
        elif kind == "compact" and ids:
            path = ref.path()
            first_kept = path[arg % len(path)] if path else ids[arg % len(ids)]
            ref.add(_last(manager, manager.append_compaction("summary", first_kept, 10)))
        elif kind == "branch_summary":
            abandoned = ref.leaf
            new_id = manager.branch_with_summary(pick, "left behind")
            entry = _last(manager, new_id)
            assert entry["fromId"] == (abandoned if abandoned is not None else "root")
            assert entry["parentId"] == pick
            ref.leaf = pick
            ref.add(entry)
        elif kind == "fork" and pick is not None:
            manager.create_branched_session(pick)
            ref = _forked(ref, pick, manager)
        elif kind == "reopen":
            manager = _reopen(manager, store, **options)
            ref.leaf = ref.entries[-1]["id"] if ref.entries else None
        _compare(manager, ref)
    if ref.entries:
        reopened = _reopen(manager, store, read_only=True)
        ref.leaf = ref.entries[-1]["id"]
        _compare(reopened, ref)
        reopened.close()
    else:
        manager.close()


def _reopen(manager: SessionManager, store: str | None, **options: Any) -> SessionManager:
    if store is not None:
        sid = manager.get_session_id()
        written = manager.index.is_persisted
        manager.close()
        if not written:  # nothing was stored yet: like a file never written, a new session begins
            return SessionManager.create("/proj", store=store, **options)
        return SessionManager.open(sid, store=store, **options)
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return SessionManager.open(path, **options)


def _last(manager: SessionManager, entry_id: str) -> dict[str, Any]:
    entry = manager.get_entry(entry_id)
    assert entry is not None
    return dict(entry)


def _forked(ref: Reference, leaf: str, manager: SessionManager) -> Reference:
    """What create_branched_session must produce: the path without labels, chain kept, labels re-created."""
    new = Reference()
    index = ref.by_id()
    previous: str | None = None
    kept: list[str] = []
    for entry_id in ref.path(leaf):
        entry = index[entry_id]
        if entry["type"] == "label":
            continue
        new.entries.append({**entry, "parentId": previous} if entry["parentId"] != previous else entry)
        kept.append(entry_id)
        previous = entry_id
    actual = manager.get_entries()
    relabels = actual[len(new.entries) :]
    expected_targets = [t for t in ref.labels if t in kept]
    assert [e["targetId"] for e in relabels] == expected_targets
    for entry in relabels:
        assert entry["label"] == ref.labels[entry["targetId"]]
        new.add(entry)
    new.leaf = new.entries[-1]["id"] if new.entries else None
    return new


def _compare(manager: SessionManager, ref: Reference) -> None:
    assert manager.get_leaf_id() == ref.leaf
    assert [e["id"] for e in manager.get_branch()] == ref.path()
    assert [e["id"] for e in manager.get_entries()] == [e["id"] for e in ref.entries]
    # The oracle reads compactions the way pi does (firstKeptEntryId); the manager prefers retainedTail.
    pi_entries = [{k: v for k, v in e.items() if k != "retainedTail"} for e in ref.entries]
    expected = (
        build_session_context(pi_entries, ref.leaf)
        if ref.leaf is not None
        else build_session_context([], None)
    )
    assert manager.build_session_context() == expected
    assert _flatten(manager) == ref.tree()
    assert manager.get_labels() == ref.labels
