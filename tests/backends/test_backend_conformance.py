"""pi's files read from every back end give pi's results: the same contexts at every leaf, trees, labels,
names and reopened state as the JSONL store (SPEC A1; issue: one suite, every back end).

Each file is put into the store as ``sessiontree copy`` would (its exact lines; for damaged files what the
JSONL store reads) and read back through the ``SessionManager``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.backends.conftest import Backend
from tests.conformance.support import (
    flatten_tree,
    labels_of,
    read_json,
    rebuild_context,
    unique_id_tree,
    written_files,
)
from tests.conftest import list_cases, require_conformance

ALL_CASES = [f"cases/{c}" for c in list_cases("cases")] + [
    f"pi-fixtures/{c}" for c in list_cases("pi-fixtures")
]


def _case(name: str) -> Path:
    case = require_conformance() / name
    if not case.is_dir():
        pytest.fail(f"conformance case missing: {case}")
    return case


@pytest.mark.parametrize("name", ALL_CASES)
def test_every_written_file_reopens_like_pi(name: str, backend: Backend) -> None:
    case = _case(name)
    if case.parent.name == "pi-fixtures":
        files = {"session.jsonl": case / "session.jsonl"}
    else:
        files = {f["name"]: case / f["name"] for f in written_files(case)}
    for expected in read_json(case / "reopen.json"):
        manager = backend.load(files[expected["file"]])
        assert manager.get_leaf_id() == expected["leafId"]
        assert [e["id"] for e in manager.get_branch()] == expected["branch"]
        assert len(manager.get_entries()) == expected["entryCount"]
        assert manager.get_session_name() == expected["sessionName"]
        assert labels_of(manager) == expected["labels"]
        assert manager.get_header() == expected["header"]
        assert manager.build_session_context().to_dict() == expected["context"]


@pytest.mark.parametrize("name", ALL_CASES)
def test_contexts_at_every_leaf_match_pi(name: str, backend: Backend) -> None:
    case = _case(name)
    data = read_json(case / "contexts-by-leaf.json")
    table = data["messages"]
    manager = backend.load(case / "memory.jsonl")
    for row in data["contexts"]:
        if row["leafId"] is None:
            manager.reset_leaf()
        else:
            manager.branch(row["leafId"])
        assert manager.build_session_context().to_dict() == rebuild_context(table, row), row["leafId"]
    for other_name, rows in (data.get("otherFiles") or {}).items():
        other = backend.load(case / other_name)
        for row in rows:
            other.branch(row["leafId"])
            assert other.build_session_context().to_dict() == rebuild_context(table, row), (other_name, row)


@pytest.mark.parametrize("name", ALL_CASES)
def test_current_state_tree_labels_and_context(name: str, backend: Backend) -> None:
    case = _case(name)
    manager = backend.load(case / "memory.jsonl")
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
