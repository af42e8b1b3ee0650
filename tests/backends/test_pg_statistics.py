"""PostgreSQL: a copy of many entries into a table whose planner statistics do not count them yet is followed
by ``ANALYZE st_entries`` (the reads of a session then take the primary key); a small one, or one inside a
caller's transaction, is not; a lock that keeps the analyze waiting costs the statistics only."""

from __future__ import annotations

import logging
import random

import pytest

from sessiontree import open_repo
from sessiontree.storage.sql import statistics
from tests.backends.test_sql_tree_chunks import HEADER, _random_lines

pytest.importorskip("psycopg")


def _counted(url: str) -> float:
    import psycopg

    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'st_entries'::regclass").fetchone()
        assert row is not None
        return float(row[0])


def _copy(url: str, n: int, k: int) -> str:
    sid = f"0197e89e-a300-7226-a91b-cd61d8f1{k:04x}"
    with open_repo(url) as repo:
        repo.import_session(HEADER % sid.encode(), _random_lines(random.Random(k), n))
    return sid


def test_a_large_copy_into_a_new_database_is_analyzed_and_its_reads_take_the_key(postgres_url: str) -> None:
    import psycopg

    sid = _copy(postgres_url, statistics.LOAD_ROWS + 500, 1)
    assert _counted(postgres_url) == statistics.LOAD_ROWS + 500
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        plan = conn.execute(
            "EXPLAIN SELECT seq, timestamp FROM st_entries WHERE session_id = %s AND seq = ANY(%s)",
            (sid, list(range(1, 2000, 40))),
        ).fetchall()
    assert "st_entries_pkey" in plan[0][0], plan


def test_small_copies_leave_the_statistics_to_autovacuum(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statistics, "LOAD_ROWS", 10)
    _copy(postgres_url, 9, 1)
    assert _counted(postgres_url) == -1  # never analyzed: fewer rows than LOAD_ROWS
    _copy(postgres_url, 50, 2)
    assert _counted(postgres_url) == 59
    _copy(postgres_url, 11, 3)  # 11 of 59 counted: fewer than STALE_SHARE of them
    assert _counted(postgres_url) == 59
    _copy(postgres_url, 30, 4)
    assert _counted(postgres_url) == 100


def test_a_copy_inside_a_callers_transaction_is_not_analyzed_there(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statistics, "LOAD_ROWS", 10)
    with open_repo(postgres_url) as repo:
        repo.setup()
        conn = repo._conn  # type: ignore[attr-defined]
        with conn.transaction():
            conn.execute("SELECT 1")
            assert statistics.analyze_after_load(conn, 1_000) is False
        assert statistics.analyze_after_load(conn, 1_000) is True
    assert _counted(postgres_url) == 0  # analyzed, and the table is empty


def test_an_analyze_kept_waiting_by_a_lock_gives_up_and_the_copy_stands(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    monkeypatch.setattr(statistics, "LOAD_ROWS", 10)
    monkeypatch.setattr(statistics, "LOCK_WAIT", "200ms")
    with open_repo(postgres_url) as repo:
        repo.setup()
    holder = psycopg.connect(postgres_url.split("?", 1)[0])
    try:
        holder.execute("LOCK TABLE st_entries IN SHARE UPDATE EXCLUSIVE MODE")  # as a running VACUUM does
        with caplog.at_level(logging.INFO, logger=statistics.__name__):
            sid = _copy(postgres_url, 40, 5)  # returns: the analyze gave up after LOCK_WAIT
    finally:
        holder.rollback()
        holder.close()
    assert "were not refreshed after a load" in caplog.text and "lock" in caplog.text
    assert _counted(postgres_url) == -1
    with open_repo(postgres_url) as repo:
        assert len(repo.open(sid, read_only=True).get_entries()) == 40
