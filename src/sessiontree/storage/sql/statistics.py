"""PostgreSQL's planner statistics after a bulk load: ``ANALYZE st_entries`` when a load added many rows to a
table whose statistics do not count them yet.

Without statistics (a new database; a table that grew severalfold since autovacuum last analyzed it) the
planner reads a session's rows by a bitmap scan of every row of that session and filters them, where the
primary key finds the few it wants: fetching the timestamps a tree sorts by took 50-70 ms instead of 4 ms for
a session of 100,000 entries just copied in, and its ``get_tree`` 310 ms instead of 180 ms. Autovacuum
analyzes the table too, but only within a minute or so; a copy is usually read right after it is made.
SQLite's planner takes the indexes without statistics; it needs none of this.
"""

from __future__ import annotations

import logging

from sessiontree.errors import StorageError
from sessiontree.storage.sql.conn import Conn

__all__ = ["LOAD_ROWS", "LOCK_WAIT", "STALE_SHARE", "analyze_after_load"]

LOAD_ROWS = 2_000
"""Loads of fewer rows leave the statistics to autovacuum (they do not change a plan)."""
STALE_SHARE = 0.2
"""A load of more rows than this share of what the statistics count makes them stale (autovacuum's own
threshold is 0.1 of the table, plus 50 rows)."""
LOCK_WAIT = "2s"
"""How long ``ANALYZE`` waits for the table's lock (another analyze or vacuum holds it) before giving up."""

_COUNTED = "SELECT reltuples FROM pg_class WHERE oid = to_regclass('st_entries')"
_log = logging.getLogger(__name__)


def analyze_after_load(conn: Conn, rows: int) -> bool:
    """``ANALYZE st_entries`` (PostgreSQL, outside a transaction) when ``rows`` just committed make its
    statistics stale; whether it ran. A failure only costs the plans until autovacuum analyzes: it is
    logged, not raised (the rows are stored), and the statement waits at most ``LOCK_WAIT`` for the table's
    lock."""
    if conn.dialect != "postgresql" or rows < LOAD_ROWS or conn.in_transaction:
        return False
    try:
        found = conn.read(_COUNTED)
        counted = float(found[0][0]) if found and found[0][0] is not None else -1.0
        if counted >= 0 and rows <= counted * STALE_SHARE:  # (-1: never analyzed)
            return False
        with conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            conn.execute("ANALYZE st_entries")
    except StorageError as exc:
        _log.info("%s: the statistics of st_entries were not refreshed after a load: %s", conn.display, exc)
        return False
    return True
