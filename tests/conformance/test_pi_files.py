"""Reading pi's own files gives pi's results: reopen.json, contexts-by-leaf.json, tree.json, labels.json."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from sessiontree import CorruptSessionError, SessionManager
from tests.conformance.checks import (
    ALL_CASES,
    Load,
    case_dir,
    expect_contexts_by_leaf,
    expect_current_state,
    expect_reopen_like_pi,
)
from tests.conformance.support import case_paths, current_file
from tests.conftest import require_conformance


@pytest.fixture
def load_copy(tmp_path: Path) -> Iterator[Load]:
    """Open a copy of a case's file (inputs are never opened in place), closed after the test."""
    numbers = itertools.count()
    with ExitStack() as opened:

        def load(source: Path) -> SessionManager:
            target = tmp_path / f"{next(numbers)}-{source.name}"
            shutil.copyfile(source, target)
            return opened.enter_context(SessionManager.open(target, read_only=True))

        yield load


@pytest.mark.parametrize("name", ALL_CASES)
def test_every_written_file_reopens_like_pi(name: str, load_copy: Load) -> None:
    expect_reopen_like_pi(case_dir(name), load_copy)


@pytest.mark.parametrize("name", ALL_CASES)
def test_contexts_by_leaf_match_pi(name: str, load_copy: Load) -> None:
    expect_contexts_by_leaf(case_dir(name), load_copy)


@pytest.mark.parametrize("name", ALL_CASES)
def test_current_state_tree_labels_context(name: str, load_copy: Load) -> None:
    expect_current_state(case_dir(name), load_copy)


def test_case_list_is_complete() -> None:
    root = require_conformance()
    assert len(case_paths(root, "cases")) >= 90
    assert current_file(root / "cases" / "case-001") is not None


def test_invalid_header_is_never_overwritten(tmp_path: Path) -> None:
    case = case_dir("cases/edge-open-invalid-header")
    target = tmp_path / "damaged.jsonl"
    shutil.copyfile(case / "input.jsonl", target)
    before = target.read_bytes()
    with pytest.raises(CorruptSessionError) as info:
        SessionManager.open(target)
    assert str(target) in str(info.value)
    assert "line 1" in str(info.value)
    assert target.read_bytes() == before
