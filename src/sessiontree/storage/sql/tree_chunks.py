"""Tree chunks: the key columns of ``CHUNK_ROWS`` consecutive entry rows in one compressed row of
``st_tree_chunks`` (SQLite since schema 5, PostgreSQL since schema 6), so that the tree of a long session is
read from a few blobs instead of every entry row.

A chunk holds, for rows ``first_seq`` to ``first_seq + CHUNK_ROWS - 1``: their ids and types, and the rows
whose parent is not the row just before them (where runs start, a few per thousand rows) with their
parents' positions, which spares a reader the id lookups that turn parent ids into positions (the parent ids
are the ids at those positions). Timestamps are not in it: a reader fetches those it needs from the rows.
It is written in the transaction that inserts its last row (``ChunkWriter``; a PostgreSQL append of that row
is then a transaction of two statements, not one); the rows after the last full chunk are read from
``st_entries``. Only a regular session's rows are chunked (every parent an earlier entry, no id repeated),
and only values a chunk can keep as they are (no NUL, no escaped key): a chunk that cannot be written is
not, and its session's tree is read from the key columns.

A chunk is checked when read: its number, first row and row count, a CRC over those and its blob, its
sections' lengths, every parent before its child, and the first and last rows it covers against their entry
rows (``read_chunks``). Any disagreement raises ``Damage`` (the session is then read from its lines);
``check_chunks`` compares every chunk with the rows it covers.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from sessiontree.storage.sql.conn import Conn
from sessiontree.storage.sql.rows import Damage, row_problem
from sessiontree.tree.entry_store import Problem

__all__ = [
    "CHUNK_ROWS",
    "KEY_ROWS",
    "ChunkWriter",
    "Chunked",
    "check_chunks",
    "encode_chunk",
    "fill_chunks",
    "read_chunks",
]

CHUNK_ROWS = 8192
_HEAD = struct.Struct("<3I")  # the byte lengths of the ids and the type names; how many runs start
_ESCAPED = "\ufffd"  # how an escaped key begins: in no value of a chunk (nor NUL, the separator)
_SWAP = sys.byteorder != "little"
_INSERT = (
    "INSERT INTO st_tree_chunks (session_id, chunk, first_seq, row_count, body, checksum) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, chunk) DO UPDATE SET first_seq = excluded.first_seq, "
    "row_count = excluded.row_count, body = excluded.body, checksum = excluded.checksum"
)
KEY_ROWS = "SELECT seq, id, parent_id, type, timestamp, parent_seq FROM st_entries WHERE session_id = ?"
"""The key columns of a session's entry rows, as a chunk keeps them (a reader adds its range of ``seq``)."""
_KEYS = f"{KEY_ROWS} AND seq BETWEEN ? AND ? ORDER BY seq"
KeyRow = tuple[int, str, "str | None", str, "str | None", "int | None"]
"""``(seq, id, parent_id, type, timestamp, parent_seq)`` of one entry row, as its key columns hold them."""
Chunked = tuple[list[str], list[str], list[int], list[int]]
"""Ids and types of consecutive positions from 0, the positions whose parent is not the position before
(where runs start), and those parents' positions (-1: none)."""


def checksum(session_id: str, number: int, first_seq: int, count: int, body: bytes) -> int:
    """The CRC a chunk row carries: of where it belongs and of its blob."""
    where = f"{session_id}\0{number}\0{first_seq}\0{count}".encode("utf-8", "surrogatepass")
    return zlib.crc32(body, zlib.crc32(where))


def _ints(kind: str, values: Sequence[int]) -> bytes:
    packed = array(kind, values)
    if _SWAP:
        packed.byteswap()
    return packed.tobytes()


def _array(kind: str, raw: bytes) -> array[int]:
    values = array(kind)
    values.frombytes(raw)
    if _SWAP:
        values.byteswap()
    return values


def encode_chunk(rows: Sequence[KeyRow]) -> bytes | None:
    """The compressed blob of ``CHUNK_ROWS`` consecutive rows (``None`` when they cannot be chunked: a value a
    chunk does not keep, or a parent that is not an earlier row, which the caller checks for rows before).

    It holds the ids, the types (names, and a code per row), and where runs start: each row whose parent is
    not the row before it, with its parent's position + 1 (0: none). Timestamps stay in the rows."""
    first = rows[0][0]
    ids: list[str] = []
    names: dict[str, int] = {}
    codes: list[int] = []
    starts: list[int] = []
    parents: list[int] = []
    for k, (seq, entry_id, parent_id, kind, _stamp, parent_seq) in enumerate(rows):
        if seq != first + k or not isinstance(entry_id, str) or not isinstance(kind, str):
            return None
        if (parent_id is None) != (parent_seq is None):
            return None
        if parent_seq is not None:
            if not isinstance(parent_seq, int) or not 0 < parent_seq < seq:
                return None
            if parent_seq >= first and ids[parent_seq - first] != parent_id:
                return None
        if parent_seq != seq - 1:
            starts.append(k)
            parents.append(parent_seq or 0)  # the parent's position + 1 is its seq
        ids.append(entry_id)
        codes.append(names.setdefault(kind, len(names)))
    values = (ids, list(names))
    texts = ["\0".join(v) for v in values]
    if any(_ESCAPED in t or t.count("\0") != len(v) - 1 for t, v in zip(texts, values, strict=True)):
        return None
    id_bytes, name_bytes = (t.encode("utf-8") for t in texts)
    head = _HEAD.pack(len(id_bytes), len(name_bytes), len(starts))
    tail = _ints("H", codes) + _ints("I", starts) + _ints("I", parents)
    return zlib.compress(head + id_bytes + name_bytes + tail, 6)


def _decode(body: Any, first: int, where: str) -> Chunked:
    """A chunk's columns (``Damage`` when its blob does not hold ``CHUNK_ROWS`` rows of them, or names a
    parent that is not an earlier row)."""
    n = CHUNK_ROWS
    bad = f"{where}: the tree chunk from row {first}"
    try:
        raw = zlib.decompress(body)
        id_length, name_length, runs = _HEAD.unpack_from(raw)
        at = _HEAD.size
        id_text = raw[at : at + id_length].decode("utf-8")
        at += id_length
        name_text = raw[at : at + name_length].decode("utf-8")
        at += name_length
    except (zlib.error, struct.error, TypeError, UnicodeDecodeError) as exc:
        raise Damage(f"{bad} does not decode ({exc})") from None
    if len(raw) - at != 2 * n + 8 * runs:
        raise Damage(f"{bad} does not hold {n} rows")
    codes = _array("H", raw[at : at + 2 * n])
    at += 2 * n
    starts, parents = _array("I", raw[at : at + 4 * runs]), _array("I", raw[at + 4 * runs :])
    ids, names = id_text.split("\0"), name_text.split("\0")
    if len(ids) != n or _ESCAPED in id_text or _ESCAPED in name_text:
        raise Damage(f"{bad} does not hold {n} rows")
    base = first - 1  # the position of its first row
    start_positions = [base + k for k in starts]
    parent_positions = [p - 1 for p in parents]
    previous = -1
    for k, p in zip(starts, parent_positions, strict=True):
        if not previous < k < n or not -1 <= p < base + k:
            raise Damage(f"{bad} names a parent that is not an earlier row")
        previous = k
    try:
        types = list(map(names.__getitem__, codes))
    except IndexError:
        raise Damage(f"{bad} names a type it does not hold") from None
    return ids, types, start_positions, parent_positions


_PRESENT = "SELECT count(*) FROM st_entries WHERE session_id = ? AND seq BETWEEN 1 AND ?"


def read_chunks(conn: Conn, session_id: str, where: str) -> tuple[Chunked, int] | None:
    """The columns of every chunk of the session and how many rows they cover, checked (``Damage``);
    ``None`` when it has none."""
    found = conn.query(
        "SELECT chunk, first_seq, row_count, body, checksum FROM st_tree_chunks WHERE session_id = ? "
        "ORDER BY chunk",
        (session_id,),
    )
    if not found:
        return None
    ids: list[str] = []
    types: list[str] = []
    starts: list[int] = []
    parents: list[int] = []
    bounds: list[int] = []
    for expected, (number, first, count, body, crc) in enumerate(found):
        first_seq = expected * CHUNK_ROWS + 1
        if number != expected or first != first_seq or count != CHUNK_ROWS:
            raise Damage(f"{where}: tree chunk {number!r} is not chunk {expected} of rows from {first_seq}")
        if not isinstance(body, bytes) or crc != checksum(session_id, number, first, count, body):
            raise Damage(f"{where}: tree chunk {expected} does not match its checksum")
        columns = _decode(body, first, where)
        ids += columns[0]
        types += columns[1]
        starts += columns[2]
        parents += columns[3]
        bounds += (first, first + CHUNK_ROWS - 1)
    marks = ",".join(repeat("?", len(bounds)))
    rows = conn.query(
        f"SELECT seq, id FROM st_entries WHERE session_id = ? AND seq IN ({marks}) ORDER BY seq",
        (session_id, *bounds),
    )
    if [(seq, ids[seq - 1]) for seq in bounds] != [tuple(r) for r in rows]:
        raise Damage(f"{where}: the tree chunks do not match the entry rows they cover", in_lines=True)
    # Every row they cover is there: a row deleted from the middle of a chunk is not a node of the tree (as a
    # read of the lines does not have it); counted over the primary key, no row read.
    present = conn.query_one(_PRESENT, (session_id, len(ids)))
    if present is None or present[0] != len(ids):
        raise Damage(f"{where}: rows 1 to {len(ids)} are not all there", in_lines=True)
    return (ids, types, starts, parents), len(ids)


def _chunk_rows(conn: Conn, session_id: str, first: int) -> list[KeyRow]:
    return [tuple(r) for r in conn.query(_KEYS, (session_id, first, first + CHUNK_ROWS - 1))]  # type: ignore[misc]


def _parents_agree(conn: Conn, session_id: str, rows: Sequence[KeyRow]) -> bool:
    """Whether each parent before the rows is the row its ``parent_seq`` names (``encode_chunk`` checks the
    parents among them)."""
    first = rows[0][0]
    wanted = {r[5]: r[2] for r in rows if isinstance(r[5], int) and r[5] < first}
    if not wanted:
        return True
    marks = ",".join(repeat("?", len(wanted)))
    found: dict[Any, Any] = dict(
        conn.query(
            f"SELECT seq, id FROM st_entries WHERE session_id = ? AND seq IN ({marks})", (session_id, *wanted)
        )
    )
    return found == wanted


def _store(conn: Conn, session_id: str, number: int, rows: Sequence[KeyRow]) -> bool:
    body = encode_chunk(rows) if len(rows) == CHUNK_ROWS else None
    if body is None:
        return False
    first = number * CHUNK_ROWS + 1
    conn.execute(
        _INSERT,
        (session_id, number, first, CHUNK_ROWS, body, checksum(session_id, number, first, CHUNK_ROWS, body)),
    )
    return True


class ChunkWriter:
    """Writes a session's chunk when the row that fills it is inserted (``add``, after the insert, in the same
    transaction). Rows added since the chunk began are kept; a chunk begun before is read from its rows."""

    def __init__(self, conn: Conn, session_id: str) -> None:
        self._conn = conn
        self._session_id = session_id
        self._rows: list[KeyRow] = []

    def reset(self) -> None:
        """Forget the rows kept (a rolled back transaction, a session read again)."""
        self._rows = []

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """Entry rows just inserted, as ``st_entries`` columns in order (session_id, seq, id, parent_id, type,
        timestamp, line, parent_seq, ...)."""
        kept = self._rows
        for row in rows:
            seq = row[1]
            if not kept or kept[-1][0] != seq - 1 or (seq - 1) % CHUNK_ROWS == 0:
                kept.clear()
            kept.append((seq, row[2], row[3], row[4], row[5], row[7]))
            if seq % CHUNK_ROWS == 0:
                self._write(seq // CHUNK_ROWS - 1)

    def _write(self, number: int) -> None:
        rows = self._rows
        if number and not self._conn.query(
            "SELECT 1 FROM st_tree_chunks WHERE session_id = ? AND chunk = ?", (self._session_id, number - 1)
        ):  # the chunk before could not be written: neither is this one (a reader takes chunks from 0 on)
            rows.clear()
            return
        if len(rows) != CHUNK_ROWS:  # begun before this writer: read from its rows
            rows[:] = _chunk_rows(self._conn, self._session_id, number * CHUNK_ROWS + 1)
        if _parents_agree(self._conn, self._session_id, rows):
            _store(self._conn, self._session_id, number, rows)
        rows.clear()


def fill_chunks(conn: Conn) -> None:
    """The chunks of every regular session (the migration to schema 5 in SQLite, to 6 in PostgreSQL): a
    session stops at its first chunk that cannot be written."""
    sessions = conn.query("SELECT id, entry_count FROM st_sessions WHERE irregular = 0 ORDER BY id")
    for session_id, count in sessions:
        if not isinstance(count, int):
            continue
        for number in range(count // CHUNK_ROWS):
            rows = _chunk_rows(conn, session_id, number * CHUNK_ROWS + 1)
            if not _parents_agree(conn, session_id, rows) or not _store(conn, session_id, number, rows):
                break


def check_chunks(conn: Conn, session_id: str, where: str) -> list[Problem]:
    """Every chunk of the session that does not hold what the rows it covers hold."""
    found = conn.query(
        "SELECT chunk, first_seq, row_count, body, checksum FROM st_tree_chunks WHERE session_id = ? "
        "ORDER BY chunk",
        (session_id,),
    )
    problems: list[Problem] = []
    for expected, (number, first, count, body, crc) in enumerate(found):
        at = f"{where}: tree chunk {number!r}"
        try:
            if number != expected or first != expected * CHUNK_ROWS + 1 or count != CHUNK_ROWS:
                raise Damage(f"{at} is not chunk {expected} of rows from {expected * CHUNK_ROWS + 1}")
            if not isinstance(body, bytes) or crc != checksum(session_id, number, first, count, body):
                raise Damage(f"{at} does not match its checksum")
            ids, types, starts, parents = _decode(body, first, where)
        except Damage as exc:
            problems.append(row_problem(str(exc)))
            continue
        rows = _chunk_rows(conn, session_id, first)
        base = first - 1
        ppos = list(range(base - 1, base + CHUNK_ROWS - 1))
        for start, parent in zip(starts, parents, strict=True):
            ppos[start - base] = parent
        for k, row in enumerate(rows):
            if row[0] != first + k:
                problems.append(row_problem(f"{at}: row {first + k} is not stored"))
                break
            p = ppos[k]
            parent_id = None if p < 0 else ids[p - base] if p >= base else _id_of(conn, session_id, p + 1)
            says: tuple[Any, ...] = (ids[k], parent_id, types[k])
            if says != tuple(row[1:4]):
                problems.append(
                    row_problem(
                        f"{at}: row {row[0]} is {says!r} there, but {tuple(row[1:4])!r} in st_entries"
                    )
                )
                break
        if len(rows) != CHUNK_ROWS:
            problems.append(row_problem(f"{at} covers {CHUNK_ROWS} rows, but {len(rows)} of them are stored"))
    return problems


def _id_of(conn: Conn, session_id: str, seq: int) -> Any:
    found = conn.query_one("SELECT id FROM st_entries WHERE session_id = ? AND seq = ?", (session_id, seq))
    return None if found is None else found[0]
