"""The checks of pi's results shared by the file suite and the every-back-end suite: each takes a way to load
a case's file (a copy opened from a temporary directory, or the file put into a store) and asserts pi's
reopen.json, contexts-by-leaf.json and current state (tree, labels, context) on what it loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from tests.conformance.support import (
    flatten_tree,
    labels_of,
    read_json,
    rebuild_context,
    unique_id_tree,
    written_files,
)
from tests.conftest import list_cases, require_conformance

Load = Callable[[Path], SessionManager]
"""Open (read-only) what a case holds at this path."""

ALL_CASES = [f"cases/{c}" for c in list_cases("cases")] + [
    f"pi-fixtures/{c}" for c in list_cases("pi-fixtures")
]


def case_dir(name: str) -> Path:
    case = require_conformance() / name
    if not case.is_dir():
        pytest.fail(f"conformance case missing: {case}")
    return case


def expect_reopen_like_pi(case: Path, load: Load) -> None:
    """Every file pi wrote reopens with pi's leaf, branch, entry count, name, labels, header and context."""
    if case.parent.name == "pi-fixtures":
        files = {"session.jsonl": case / "session.jsonl"}
    else:
        files = {f["name"]: case / f["name"] for f in written_files(case)}
    for expected in read_json(case / "reopen.json"):
        manager = load(files[expected["file"]])
        assert manager.get_leaf_id() == expected["leafId"]
        assert [e["id"] for e in manager.get_branch()] == expected["branch"]
        assert len(manager.get_entries()) == expected["entryCount"]
        assert manager.get_session_name() == expected["sessionName"]
        assert labels_of(manager) == expected["labels"]
        assert manager.get_header() == expected["header"]
        assert manager.build_session_context().to_dict() == expected["context"]


def expect_contexts_by_leaf(case: Path, load: Load) -> None:
    """pi's context at every leaf of the session it held (memory.jsonl) and of the other files it names."""
    data = read_json(case / "contexts-by-leaf.json")
    table = data["messages"]
    checked = 0
    manager = load(case / "memory.jsonl")  # the current session as pi held it: header + getEntries()
    for row in data["contexts"]:
        if row["leafId"] is None:
            manager.reset_leaf()
        else:
            manager.branch(row["leafId"])
        assert manager.build_session_context().to_dict() == rebuild_context(table, row), row["leafId"]
        checked += 1
    others: dict[str, Any] = data.get("otherFiles") or {}
    for other_name, rows in others.items():
        other = load(case / other_name)
        for row in rows:
            other.branch(row["leafId"])
            assert other.build_session_context().to_dict() == rebuild_context(table, row), (other_name, row)
            checked += 1
    assert checked == len(data["contexts"]) + sum(len(r) for r in others.values())


def expect_current_state(case: Path, load: Load) -> None:
    """At pi's leaf: its context, branch, tree (one node per id), name, labels and label order."""
    manager = load(case / "memory.jsonl")
    leaf = read_json(case / "leaf.json")
    if leaf["leafId"] is None:
        manager.reset_leaf()
    else:
        manager.branch(leaf["leafId"])
    assert manager.build_session_context().to_dict() == read_json(case / "context.json")
    assert [e["id"] for e in manager.get_branch()] == read_json(case / "branch.json")["ids"]
    assert flatten_tree(manager.get_tree()) == unique_id_tree(read_json(case / "tree.json"))
    labels: dict[str, Any] = read_json(case / "labels.json")
    assert manager.get_session_name() == labels["sessionName"]
    assert labels_of(manager) == labels["labels"]
    assert list(manager.get_labels()) == labels["labelsInternalOrder"]
