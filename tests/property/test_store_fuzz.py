"""The store's mutation fuzzer, bounded: mutated pi files open (or fail with a ``SessionError``) in bounded
time, index exactly what a line-by-line reference parse finds, are unchanged by read-only use and lose
nothing when written to. ``SESSIONTREE_FUZZ_CASES`` sets the size (long runs: ``python -m
tests.property.fuzz_store``); ``SESSIONTREE_FUZZ_SEED`` replays a run (the seed is printed in the summary).
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import require_conformance
from tests.property import fuzz_store
from tests.property.mutations import MUTATIONS

QUICK_CASES = 3_000
FUZZ_RUNS: list[str] = []  # summaries printed at the end of the test session (see tests/conftest.py)


def test_mutated_pi_files_keep_the_store_promise() -> None:
    require_conformance()
    cases = int(os.environ.get("SESSIONTREE_FUZZ_CASES", QUICK_CASES))
    report = fuzz_store.run(fuzz_store.default_seed(), cases)
    FUZZ_RUNS.append(report.summary())
    assert report.cases == cases
    assert report.opened > cases // 2  # most mutations leave a readable session: the checks really ran
    assert set(report.mutations) == set(MUTATIONS)  # every kind of damage was tried
    if report.failures:
        pytest.fail(report.summary() + "\n" + "\n".join(report.failures[:10]), pytrace=False)
