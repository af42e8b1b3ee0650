"""PostgreSQL: a copy of many entries into a table whose planner statistics do not count them yet is followed
by ``VACUUM (ANALYZE) st_entries`` (the reads of a session then take the primary key), one into a table whose
statistics count them by a vacuum that leaves the statistics alone (the new pages all-visible, so a count
over the primary key reads no heap page); a small copy, or one inside a caller's transaction, by neither; a
lock that keeps the analyze waiting costs the statistics only, and one held when no analyze is due makes the
vacuum skip the table at once."""

from __future__ import annotations

import logging
import random
import time
from typing import Any

import pytest

from sessiontree import open_repo
from sessiontree.errors import StorageError
from sessiontree.format.pi_json import dumps_bytes
from sessiontree.storage.sql import statistics
from tests.backends.test_sql_tree_chunks import HEADER, _random_lines

pytest.importorskip("psycopg")


def _counted(url: str) -> float:
    import psycopg

    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'st_entries'::regclass").fetchone()
        assert row is not None
        return float(row[0])


def _maintained(url: str) -> tuple[int, int, bool]:
    """How often ``st_entries`` was analyzed and vacuumed (not by autovacuum), and whether all its pages are
    marked all-visible."""
    import psycopg

    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        counts = conn.execute(
            "SELECT analyze_count, vacuum_count FROM pg_stat_user_tables WHERE relname = 'st_entries'"
        ).fetchone()
        pages = conn.execute(
            "SELECT relpages, relallvisible FROM pg_class WHERE relname = 'st_entries'"
        ).fetchone()
    assert counts is not None and pages is not None
    return int(counts[0]), int(counts[1]), pages[0] > 0 and pages[0] == pages[1]


def _copy(url: str, n: int, k: int) -> str:
    sid = f"0197e89e-a300-7226-a91b-cd61d8f1{k:04x}"
    with open_repo(url) as repo:
        repo.import_session(HEADER % sid.encode(), _random_lines(random.Random(k), n))
    return sid


def test_a_large_copy_into_a_new_database_is_analyzed_and_its_reads_take_the_key(postgres_url: str) -> None:
    import psycopg

    sid = _copy(postgres_url, statistics.LOAD_ROWS + 500, 1)
    assert _counted(postgres_url) == statistics.LOAD_ROWS + 500
    assert _maintained(postgres_url) == (1, 1, True)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        plan = conn.execute(
            "EXPLAIN SELECT seq, timestamp FROM st_entries WHERE session_id = %s AND seq = ANY(%s)",
            (sid, list(range(1, 2000, 40))),
        ).fetchall()
        # the count that proves a session's tree chunks cover its rows: the key alone, no heap page read
        counted = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM st_entries WHERE session_id = %s "
            "AND seq BETWEEN 1 AND %s",
            (sid, statistics.LOAD_ROWS),
        ).fetchone()
    assert "st_entries_pkey" in plan[0][0], plan
    assert counted is not None
    scans = _scans(counted[0][0]["Plan"])
    assert [s["Node Type"] for s in scans] == ["Index Only Scan"], scans
    assert scans[0]["Heap Fetches"] == 0, scans


def _scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    own = [plan] if plan.get("Relation Name") == "st_entries" else []
    return own + [s for p in plan.get("Plans", ()) for s in _scans(p)]


def test_small_copies_leave_the_statistics_to_autovacuum(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statistics, "LOAD_ROWS", 10)
    _copy(postgres_url, 9, 1)
    assert _counted(postgres_url) == -1  # never analyzed: fewer rows than LOAD_ROWS
    assert _maintained(postgres_url)[:2] == (0, 0)
    _copy(postgres_url, 50, 2)
    assert _counted(postgres_url) == 59
    assert _maintained(postgres_url) == (1, 1, True)
    _copy(postgres_url, 11, 3)  # 11 of 59 counted: fewer than STALE_SHARE of them, so only a vacuum
    assert _maintained(postgres_url) == (1, 2, True)
    _copy(postgres_url, 30, 4)
    assert _counted(postgres_url) == 100
    assert _maintained(postgres_url) == (2, 3, True)


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
            with pytest.raises(StorageError, match="VACUUM cannot run inside a transaction"):
                conn.maintenance("VACUUM st_entries", "1s")
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


def test_a_vacuum_with_current_statistics_skips_a_locked_table_at_once(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    monkeypatch.setattr(statistics, "LOAD_ROWS", 10)
    monkeypatch.setattr(statistics, "LOCK_WAIT", "60s")
    _copy(postgres_url, 50, 1)  # analyzed: the statistics count 50 rows
    holder = psycopg.connect(postgres_url.split("?", 1)[0])
    try:
        holder.execute("LOCK TABLE st_entries IN SHARE UPDATE EXCLUSIVE MODE")  # as a running VACUUM does
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger=statistics.__name__):
            sid = _copy(postgres_url, 10, 2)  # 10 of 50: no analyze due, and the vacuum does not wait
        waited = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    assert waited < 30, waited  # (LOCK_WAIT is 60 s: a vacuum that waited would take that long)
    assert "not vacuumed" not in caplog.text and "not refreshed" not in caplog.text
    assert _maintained(postgres_url)[:2] == (1, 1)  # skipped: only the first copy's vacuum counted
    with open_repo(postgres_url) as repo:
        assert len(repo.open(sid, read_only=True).get_entries()) == 10


def _chain(n: int) -> list[bytes]:
    """``n`` messages, each the child of the one before: a path as long as the session."""
    return [
        dumps_bytes(
            {
                "type": "message",
                "id": f"c{i:07x}",
                "parentId": f"c{i - 1:07x}" if i else None,
                "timestamp": "2025-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": f"m{i}", "timestamp": i},
            }
        )
        for i in range(n)
    ]


def _rows_read(plan: dict[str, Any]) -> int:
    """Rows the plan's scans of ``st_entries`` read (returned or filtered out), over all their loops."""
    own = 0
    if plan.get("Relation Name") == "st_entries":
        own = (plan["Actual Rows"] + plan.get("Rows Removed by Filter", 0)) * plan["Actual Loops"]
    return own + sum(_rows_read(p) for p in plan.get("Plans", ()))


def test_a_session_the_statistics_do_not_know_is_walked_by_its_key(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statistics count one session (analyzed after its copy), then a 1,000-entry session is copied in
    (too few rows for an analyze): its planner estimate is one row. Its context's walk still reads each row of
    the path once by the primary key and its id once (it read all 1,000 rows at every step: 1,000 x 1,000)."""
    import psycopg

    _copy(postgres_url, statistics.LOAD_ROWS * 2, 1)
    sid = "0197e89e-a300-7226-a91b-cd61d8f1beef"
    walks: list[tuple[str, tuple[Any, ...]]] = []
    with open_repo(postgres_url) as repo:
        repo.import_session(HEADER % sid.encode(), _chain(1_000))
        conn_type = type(repo._conn)  # type: ignore[attr-defined]
        query = conn_type.query

        def recorded(self: Any, sql: str, params: Any = ()) -> Any:
            if sql.startswith("WITH RECURSIVE"):
                walks.append((sql, tuple(params)))
            return query(self, sql, params)

        monkeypatch.setattr(conn_type, "query", recorded)
        manager = repo.open(sid, read_only=True)
        assert len(manager.build_session_context().messages) == 1_000
        manager.close()
    assert _counted(postgres_url) == statistics.LOAD_ROWS * 2  # the new session is not in them
    assert walks
    with psycopg.connect(postgres_url.split("?", 1)[0]) as conn:
        for sql, params in walks:
            row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql.replace("?", "%s"), params).fetchone()
            assert row is not None
            assert _rows_read(row[0][0]["Plan"]) <= 3 * 1_000, row[0]
