"""The search table's rows: what an entry row puts in it, how a session's rows leave it, and how the table is
filled from the stored lines (a migration's step).

SQLite keeps an FTS5 index with no copy of the text (``content=''``): an index row's rowid is the entry row's
key, ``(num << 32) + seq`` with ``num`` the session's number in ``st_search_keys`` (never reused, so an index
row left behind can name no other entry), and a hit's snippet is taken from the entry's line. Removing rows
from such an index needs the text they were given, which is recomputed from the lines with the function that
gave it (``entry_search_text``). PostgreSQL keeps the text beside its ``tsvector``, keyed by session and entry.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sessiontree.format import pi_json as _json
from sessiontree.storage.search import entry_search_text
from sessiontree.storage.sql.conn import Conn, Dialect, insert_sql
from sessiontree.storage.sql.one_statement import TEXT_COLUMNS
from sessiontree.storage.sql.text import display

__all__ = [
    "SEQ_BITS",
    "delete_session_text",
    "fill_search",
    "insert_text_sql",
    "line_hit",
    "line_text",
    "text_params",
]

SEQ_BITS = 32
"""Bits of an SQLite index rowid that hold the entry's ``seq`` (the rest: its session's number)."""
_SEQ_MASK = (1 << SEQ_BITS) - 1
_BATCH = 2000

_INSERT_SQLITE = (
    # VALUES with a scalar subquery: FTS5 takes rows from an INSERT ... SELECT about twice as slowly. A session
    # always has its number (a trigger gives it with the session row); without one the row number would be
    # negative, which no entry row's key joins, rather than NULL (a number FTS5 would pick, maybe another's)
    "INSERT INTO st_entry_text (rowid, text) VALUES "
    f"((COALESCE((SELECT num FROM st_search_keys WHERE session_id = ?3), -1) << {SEQ_BITS}) + ?1, ?2)"
)
_INSERT_PG = insert_sql("st_entry_text", TEXT_COLUMNS)


def insert_text_sql(dialect: Dialect) -> str:
    """The statement that adds an entry's search text (its parameters: ``text_params``)."""
    return _INSERT_SQLITE if dialect == "sqlite" else _INSERT_PG


def insert_texts(conn: Conn, texts: Sequence[Sequence[Any]]) -> None:
    """Add many search texts (each ``text_params``): PostgreSQL copies them, SQLite's FTS5 takes its
    statement a row at a time."""
    if conn.dialect == "sqlite":
        conn.executemany(_INSERT_SQLITE, texts)
    else:
        conn.copy_rows("st_entry_text", TEXT_COLUMNS, texts)


def text_params(
    dialect: Dialect, session_id: str, seq: int, entry_key: str | None, text: str
) -> tuple[Any, ...]:
    """The parameters of ``insert_text_sql`` for the entry row ``seq`` (id column ``entry_key``)."""
    if dialect == "sqlite":
        if not 0 < seq <= _SEQ_MASK:
            raise ValueError(f"row {seq} is beyond the search index's {SEQ_BITS}-bit row numbers")
        return (seq, display(text), session_id)
    return (display(text), session_id, entry_key)


def line_hit(line: Any) -> tuple[str, str] | None:
    """The entry id and search text an entry row's line gives (``None`` for no text, and for a line that is
    not an entry: a search hit is what the line says, whatever a client did to the row's columns)."""
    if isinstance(line, (bytearray, memoryview)):
        line = bytes(line)
    elif isinstance(line, str):
        line = line.encode("utf-8", "surrogatepass")
    if not isinstance(line, bytes):
        return None
    try:
        entry = _json.loads(line)
    except (ValueError, RecursionError):
        return None
    text = entry_search_text(entry)
    entry_id = entry.get("id") if isinstance(entry, dict) else None
    return None if text is None or not isinstance(entry_id, str) else (entry_id, display(text) or "")


def line_text(line: Any) -> str | None:
    """The search text an entry row's line gives (``None`` for none, and for a line that is not an entry)."""
    hit = line_hit(line)
    return None if hit is None else hit[1]


def _lines(conn: Conn, session_id: str) -> Iterator[Sequence[Any]]:
    """``(seq, line)`` of every row of a session, in batches (a session's lines need not fit in memory)."""
    last = 0
    while True:
        rows = conn.query(
            "SELECT seq, line FROM st_entries WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, last, _BATCH),
        )
        yield from rows
        if len(rows) < _BATCH or not isinstance(rows[-1][0], int):
            return
        last = rows[-1][0]


def delete_session_text(conn: Conn, session_id: str) -> None:
    """Remove a session's rows from the search table (inside the caller's transaction, before its entry rows
    go). SQLite: each row's text again from its line; a line changed since it was written leaves its old
    words in the index, where they name a number no session has any more (hits are joined to entry rows)."""
    if conn.dialect != "sqlite":
        conn.execute("DELETE FROM st_entry_text WHERE session_id = ?", (session_id,))
        return
    found = conn.query_one("SELECT num FROM st_search_keys WHERE session_id = ?", (session_id,))
    if found is None or not isinstance(found[0], int):
        return
    base = found[0] << SEQ_BITS
    batch: list[tuple[Any, ...]] = []
    for seq, line in _lines(conn, session_id):
        text = line_text(line)
        if text is not None and isinstance(seq, int) and 0 < seq <= _SEQ_MASK:
            batch.append((base + seq, text))
        if len(batch) >= _BATCH:
            _delete(conn, batch)
    _delete(conn, batch)


def _delete(conn: Conn, batch: list[tuple[Any, ...]]) -> None:
    if batch:
        conn.executemany(
            "INSERT INTO st_entry_text (st_entry_text, rowid, text) VALUES ('delete', ?, ?)", batch
        )
        batch.clear()


def fill_search(conn: Conn) -> None:
    """Index every stored entry's text from its line (SQLite; the migration to an index without the text)."""
    sessions = conn.query("SELECT num, session_id FROM st_search_keys ORDER BY num")
    batch: list[tuple[Any, ...]] = []
    for num, session_id in sessions:
        for seq, line in _lines(conn, session_id):
            text = line_text(line)
            if text is not None and isinstance(seq, int) and 0 < seq <= _SEQ_MASK:
                batch.append(((num << SEQ_BITS) + seq, text))
            if len(batch) >= _BATCH:
                conn.executemany("INSERT INTO st_entry_text (rowid, text) VALUES (?, ?)", batch)
                batch.clear()
    if batch:
        conn.executemany("INSERT INTO st_entry_text (rowid, text) VALUES (?, ?)", batch)
