"""PostgreSQL: the end of a write transaction in one statement, one round trip to the server instead of one per
statement: the entries and their search text inserted, the session row updated, and the writer lease
renewed (unless the transaction renewed it less than a third of its time to live ago).

When it renews the lease, the inserts and the update are made only when that renewal changed the lease row
(data-modifying ``WITH`` parts that read the renewal's ``RETURNING``), so a writer whose lease expired or was
taken over writes nothing; the statement then returns how many lease rows it renewed, for
``WriterLease.renewed`` to judge. A transaction that sent nothing before it (one append: its rows are held
for it) sends it alone, in autocommit (``Conn.query_last``): its own atomicity is the transaction's, and it
always renews the lease (no earlier renewal holds the lease row). One that sent statements before (which
renewed the lease first) sends it inside, and is rolled back when the renewal failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontree.storage.sql.paths import session_of_id

__all__ = ["ENTRY_COLUMNS", "ENTRY_TYPES", "MAX_ROWS", "TEXT_COLUMNS", "statement"]

ENTRY_COLUMNS = (
    "session_id, seq, id, parent_id, type, timestamp, line, parent_seq, depth, "
    "compaction_seq, model_seq, thinking_seq, tools_seq, target_id"
)
TEXT_COLUMNS = "text, session_id, entry_id"
ENTRY_TYPES = (
    "text", "bigint", "text", "text", "text", "text", "bytea",
    "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "text",
)  # fmt: skip
_TEXT_TYPES = ("text", "text", "text")
MAX_ROWS = 64
"""At most this many entries go in one statement (a larger transaction sends them in batches first)."""

_RENEWED = "EXISTS (SELECT 1 FROM lease)"
_TAKEN = f"EXISTS (SELECT 1 FROM st_entries WHERE {session_of_id()} AND id = ?)"


def _placeholders(width: int) -> str:
    return "(" + ", ".join(["?"] * width) + ")"


def statement(
    renewal: tuple[str, Sequence[Any]] | None,
    rows: Sequence[Sequence[Any]],
    texts: Sequence[Sequence[Any]],
    session_update: tuple[str, Sequence[Any]],
    fresh_id: str | None = None,
) -> tuple[str, list[Any]]:
    """The statement and its parameters. ``renewal`` is the lease's ``UPDATE`` statement (``None`` when the
    transaction renewed the lease recently: its row stays locked until the commit), ``rows`` and
    ``texts`` the rows for ``st_entries`` (``ENTRY_COLUMNS``) and ``st_entry_text`` (``TEXT_COLUMNS``), and
    ``session_update`` an ``UPDATE st_sessions … WHERE id = ?`` statement; all with ``?`` placeholders.
    ``fresh_id`` (keyed) is an entry id not checked yet: nothing is written when the session has an entry
    with it. The statement returns one row: how many lease rows it renewed (1 without a renewal), and whether
    ``fresh_id`` was taken (every part reads the rows as they were before the statement)."""
    if not rows or len(rows) > MAX_ROWS:
        raise ValueError(f"one statement takes 1 to {MAX_ROWS} entries, not {len(rows)}")
    update_sql, update_params = session_update
    session_id = update_params[-1]
    parts: list[str] = []
    params: list[Any] = []
    if renewal is not None:
        parts.append(f"lease AS ({renewal[0]} RETURNING 1)")
        params.extend(renewal[1])
    when = _RENEWED if renewal is not None else "TRUE"
    taken = "FALSE"
    if fresh_id is not None:
        taken = _TAKEN
        when += f" AND NOT {_TAKEN}"
    guard = [session_id, fresh_id] if fresh_id is not None else []
    parts.append(
        f"entries AS (INSERT INTO st_entries ({ENTRY_COLUMNS}) SELECT * FROM (VALUES "
        f"{_rows(ENTRY_TYPES, len(rows))}) AS v WHERE {when})"
    )
    for row in rows:
        params.extend(row)
    params.extend(guard)
    if texts:
        parts.append(
            f"texts AS (INSERT INTO st_entry_text ({TEXT_COLUMNS}) SELECT * FROM (VALUES "
            f"{_rows(_TEXT_TYPES, len(texts))}) AS v WHERE {when})"
        )
        for text in texts:
            params.extend(text)
        params.extend(guard)
    parts.append(f"session AS ({update_sql} AND {when})")
    params.extend(update_params)
    params.extend(guard)
    counted = f"SELECT COUNT(*), {taken} FROM lease" if renewal is not None else f"SELECT 1, {taken}"
    params.extend(guard)
    return "WITH " + ", ".join(parts) + " " + counted, params


def _rows(types: Sequence[str], count: int) -> str:
    """``count`` rows of placeholders, the first typed: a ``VALUES`` list read by a ``SELECT`` has no target
    columns to take its types from."""
    first = "(" + ", ".join(f"CAST(? AS {t})" for t in types) + ")"
    return ", ".join([first, *[_placeholders(len(types))] * (count - 1)])
