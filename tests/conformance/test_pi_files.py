"""Reading pi's own files gives pi's results: reopen.json, contexts-by-leaf.json, tree.json, labels.json."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree import CorruptSessionError, SessionManager
from tests.conformance.support import (
    case_paths,
    current_file,
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
    root = require_conformance()
    case = root / name
    if not case.is_dir():
        pytest.fail(f"conformance case missing: {case}")
    return case


def _open_copy(source: Path, tmp: Path, name: str | None = None) -> SessionManager:
    target = tmp / (name or source.name)
    shutil.copyfile(source, target)
    return SessionManager.open(target, read_only=True)


def _file_for(case: Path, fixture_name: str) -> Path:
    return case / fixture_name


def _expect_reopen(case: Path, manager: SessionManager, expected: dict[str, Any]) -> None:
    assert manager.get_leaf_id() == expected["leafId"]
    assert [e["id"] for e in manager.get_branch()] == expected["branch"]
    assert len(manager.get_entries()) == expected["entryCount"]
    assert manager.get_session_name() == expected["sessionName"]
    assert labels_of(manager) == expected["labels"]
    assert manager.get_header() == expected["header"]
    assert manager.build_session_context().to_dict() == expected["context"]


@pytest.mark.parametrize("name", ALL_CASES)
def test_every_written_file_reopens_like_pi(name: str, tmp_path: Path) -> None:
    case = _case(name)
    if case.parent.name == "pi-fixtures":
        files = {"session.jsonl": case / "session.jsonl"}
    else:
        files = {f["name"]: case / f["name"] for f in written_files(case)}
    for expected in read_json(case / "reopen.json"):
        source = files[expected["file"]]
        manager = _open_copy(source, tmp_path, expected["file"])
        try:
            _expect_reopen(case, manager, expected)
        finally:
            manager.close()


@pytest.mark.parametrize("name", ALL_CASES)
def test_contexts_by_leaf_match_pi(name: str, tmp_path: Path) -> None:
    case = _case(name)
    data = read_json(case / "contexts-by-leaf.json")
    table = data["messages"]
    # The current session as pi held it in memory (memory.jsonl = header + getEntries()).
    manager = _open_copy(case / "memory.jsonl", tmp_path, "current.jsonl")
    checked = 0
    try:
        for row in data["contexts"]:
            if row["leafId"] is None:
                manager.reset_leaf()
            else:
                manager.branch(row["leafId"])
            assert manager.build_session_context().to_dict() == rebuild_context(table, row), row["leafId"]
            checked += 1
    finally:
        manager.close()
    for other_name, rows in (data.get("otherFiles") or {}).items():
        other = _open_copy(case / other_name, tmp_path, f"other-{other_name}")
        try:
            for row in rows:
                other.branch(row["leafId"])
                assert other.build_session_context().to_dict() == rebuild_context(table, row), (
                    other_name,
                    row,
                )
                checked += 1
        finally:
            other.close()
    assert checked == len(data["contexts"]) + sum(len(r) for r in (data.get("otherFiles") or {}).values())


@pytest.mark.parametrize("name", ALL_CASES)
def test_current_state_tree_labels_context(name: str, tmp_path: Path) -> None:
    case = _case(name)
    manager = _open_copy(case / "memory.jsonl", tmp_path, "current.jsonl")
    try:
        leaf = read_json(case / "leaf.json")
        if leaf["leafId"] is None:
            manager.reset_leaf()
        else:
            manager.branch(leaf["leafId"])
        assert manager.build_session_context().to_dict() == read_json(case / "context.json")
        assert [e["id"] for e in manager.get_branch()] == read_json(case / "branch.json")["ids"]
        assert flatten_tree(manager.get_tree()) == unique_id_tree(read_json(case / "tree.json"))
        labels = read_json(case / "labels.json")
        assert manager.get_session_name() == labels["sessionName"]
        assert labels_of(manager) == labels["labels"]
        assert list(manager.get_labels()) == labels["labelsInternalOrder"]
    finally:
        manager.close()


def test_case_list_is_complete() -> None:
    root = require_conformance()
    assert len(case_paths(root, "cases")) >= 90
    assert current_file(root / "cases" / "case-001") is not None


def test_invalid_header_is_never_overwritten(tmp_path: Path) -> None:
    case = _case("cases/edge-open-invalid-header")
    target = tmp_path / "damaged.jsonl"
    shutil.copyfile(case / "input.jsonl", target)
    before = target.read_bytes()
    with pytest.raises(CorruptSessionError) as info:
        SessionManager.open(target)
    assert str(target) in str(info.value)
    assert "line 1" in str(info.value)
    assert target.read_bytes() == before
