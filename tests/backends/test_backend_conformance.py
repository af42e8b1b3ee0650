"""pi's files read from every back end give pi's results: the same contexts at every leaf, trees, labels,
names and reopened state as the JSONL store (SPEC A1; issue: one suite, every back end).

Each file is put into the store as ``sessiontree copy`` would (its exact lines; for damaged files what the
JSONL store reads) and read back through the ``SessionManager``.
"""

from __future__ import annotations

import pytest

from tests.backends.conftest import Backend
from tests.conformance.checks import (
    ALL_CASES,
    case_dir,
    expect_contexts_by_leaf,
    expect_current_state,
    expect_reopen_like_pi,
)


@pytest.mark.parametrize("name", ALL_CASES)
def test_every_written_file_reopens_like_pi(name: str, backend: Backend) -> None:
    expect_reopen_like_pi(case_dir(name), backend.load)


@pytest.mark.parametrize("name", ALL_CASES)
def test_contexts_at_every_leaf_match_pi(name: str, backend: Backend) -> None:
    expect_contexts_by_leaf(case_dir(name), backend.load)


@pytest.mark.parametrize("name", ALL_CASES)
def test_current_state_tree_labels_and_context(name: str, backend: Backend) -> None:
    expect_current_state(case_dir(name), backend.load)
