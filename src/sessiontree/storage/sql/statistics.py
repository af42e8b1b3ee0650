"""PostgreSQL after a bulk load: ``VACUUM (ANALYZE) st_entries`` when a load added many rows to a table whose
planner statistics do not count them yet, else ``VACUUM (SKIP_LOCKED) st_entries``.

Without statistics (a new database; a table that grew severalfold since autovacuum last analyzed it) the
planner reads a session's rows by a bitmap scan of every row of that session and filters them, where the
primary key finds the few it wants: fetching the timestamps a tree sorts by took 50-70 ms instead of 4 ms for
a session of 100,000 entries just copied in, and its ``get_tree`` 310 ms instead of 180 ms. Autovacuum
analyzes the table too, but only within a minute or so; a copy is usually read right after it is made.
SQLite's planner takes the indexes without statistics; it needs none of this.

The vacuum marks the new rows' pages all-visible, which nothing else does until autovacuum gets to the table
(for inserts, when they reach a fifth of it): until then a count over the primary key must visit every heap
page it covers. The count that proves a session's tree chunks cover every row (``tree_chunks.read_chunks``)
took 19.8 ms after a copy of 100,000 entries and 7.8 ms after a vacuum, and that session's ``get_tree``
96.5 ms against 77.0 ms; the vacuum of the copied rows costs what the analyze alone did (248 against 295 ms
here). A vacuum whose statistics are current does not wait for the table's lock: another vacuum or analyze
that holds it marks the same pages.
"""

from __future__ import annotations

import logging

from sessiontree.errors import StorageError
from sessiontree.storage.sql.conn import Conn

__all__ = ["LOAD_ROWS", "LOCK_WAIT", "STALE_SHARE", "analyze_after_load"]

_VACUUM = "VACUUM (SKIP_LOCKED) st_entries"
_VACUUM_ANALYZE = "VACUUM (ANALYZE) st_entries"

LOAD_ROWS = 2_000
"""Loads of fewer rows leave the statistics to autovacuum (they do not change a plan)."""
STALE_SHARE = 0.2
"""A load of more rows than this share of what the statistics count makes them stale (autovacuum's own
threshold is 0.1 of the table, plus 50 rows)."""
LOCK_WAIT = "2s"
"""How long the analyze waits for the table's lock (another analyze or vacuum holds it) before giving up."""

_COUNTED = "SELECT reltuples FROM pg_class WHERE oid = to_regclass('st_entries')"
_log = logging.getLogger(__name__)


def analyze_after_load(conn: Conn, rows: int) -> bool:
    """After ``rows`` just committed by a load (PostgreSQL, outside a transaction): ``VACUUM (ANALYZE)`` when
    they make the statistics of ``st_entries`` stale, and whether that ran; else a vacuum that skips the table
    when its lock is taken. A failure only costs the plans (or the all-visible pages) until autovacuum gets to
    the table: it is logged, not raised (the rows are stored), and the analyze waits at most ``LOCK_WAIT`` for
    the table's lock."""
    if conn.dialect != "postgresql" or rows < LOAD_ROWS or conn.in_transaction:
        return False
    stale = False
    try:
        found = conn.read(_COUNTED)
        counted = float(found[0][0]) if found and found[0][0] is not None else -1.0
        stale = counted < 0 or rows > counted * STALE_SHARE  # (-1: never analyzed)
        conn.maintenance(_VACUUM_ANALYZE if stale else _VACUUM, LOCK_WAIT)
    except StorageError as exc:
        if stale:
            _log.info(
                "%s: the statistics of st_entries were not refreshed after a load: %s", conn.display, exc
            )
        else:
            _log.info("%s: st_entries was not vacuumed after a load: %s", conn.display, exc)
        return False
    return stale
