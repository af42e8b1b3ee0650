"""The SQL stores' mutation fuzzer (``tests/property/fuzz_sql.py``): a quick run on SQLite in every test run,
and longer campaigns on SQLite and PostgreSQL marked ``slow``. ``SESSIONTREE_SQL_FUZZ_CASES`` sets the quick
run's size and ``SESSIONTREE_FUZZ_SEED`` replays a run (the seed is in the summary and the failure).
"""

from __future__ import annotations

import os

import pytest

from tests.backends.damage import damages_for
from tests.conftest import require_conformance
from tests.property import fuzz_sql
from tests.property.fuzz_store import default_seed
from tests.property.test_store_fuzz import FUZZ_RUNS

QUICK_CASES = 30


def _expect_clean(report: fuzz_sql.Report, cases: int, kinds: list[str]) -> None:
    FUZZ_RUNS.append(report.summary())
    assert report.cases == cases
    assert report.opened > cases // 3  # most damage leaves something to read: the properties really ran
    if report.failures:
        pytest.fail(report.summary() + "\n" + "\n".join(report.failures[:10]), pytrace=False)
    assert set(report.damages) <= set(kinds)


def test_damaged_sqlite_rows_keep_the_store_promise() -> None:
    require_conformance()
    cases = int(os.environ.get("SESSIONTREE_SQL_FUZZ_CASES", QUICK_CASES))
    report = fuzz_sql.run(default_seed(), cases)
    _expect_clean(report, cases, damages_for("sqlite:"))


@pytest.mark.slow
def test_a_longer_campaign_on_sqlite_with_big_rows() -> None:
    require_conformance()
    # 16 MB lines: a quarter of the time and memory of 64 MB (about 1 min of one worker instead of 2.5);
    # ``python -m tests.property.fuzz_sql --cases 600 --big 67108864`` is the longer run.
    report = fuzz_sql.run(default_seed(), 600, big=16 << 20)
    _expect_clean(report, 600, damages_for("sqlite:"))
    assert set(report.damages) == set(damages_for("sqlite:"))  # every kind of damage was tried


@pytest.mark.slow
def test_a_longer_campaign_on_postgresql(postgres_url: str) -> None:
    require_conformance()
    report = fuzz_sql.run(default_seed(), 300, fuzz_sql.postgres_stores(postgres_url))
    kinds = damages_for(postgres_url, whole_store=False)
    _expect_clean(report, 300, kinds)
    assert set(report.damages) == set(kinds)
