"""The tree of a SQL session read from its key columns alone: every row's id, parent id, type and timestamp in
one query, no line read or decoded, indexed by the same ``IndexedStore`` and tree index a file's envelopes
are, so the tree is the one its lines give while the columns agree with them.

The rows are checked as they are read: the ``seq`` of each is the next one, the columns have their types, no
id repeats and every parent is an entry before it (a regular session's rows, which the pointer reads rely on
too). Anything else raises ``Damage``, and the session is then read from its lines. A node's entry is fetched
by its ``seq`` when asked for and checked against its row (``entry_of``); a disagreement found then is
reported to ``on_damage``, so that every later read goes through the lines, and the line's entry is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.storage.sql.conn import Conn
from sessiontree.storage.sql.read_through import ReadThroughStore
from sessiontree.storage.sql.rows import Damage, Row, as_bytes, entry_of

__all__ = ["ColumnTree", "Plain"]

_BATCH = 512
_ESCAPED = "\ufffd"  # how an escaped key column begins (``text.key``): such a session is read from its lines
_TEXT = frozenset({str})
_OPT_TEXT = frozenset({str, type(None)})
_NULL = "\x01"  # NULL in a concatenated column (``_sqlite_columns``): a key column that is this reads slowly
_Columns = tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]


class Plain(ValueError):
    """The key columns cannot be taken as they are (an escaped value): read the lines instead (no damage)."""


def _columns(conn: Conn, session_id: str) -> _Columns:
    rows = conn.query(
        "SELECT seq, id, parent_id, type, timestamp FROM st_entries WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    if not rows:
        return [], [], [], [], []
    seqs, ids, parents, types, stamps = (list(c) for c in zip(*rows, strict=True))
    return seqs, ids, parents, types, stamps


_CONCAT = (
    "SELECT group_concat(seq, ','), group_concat(id, char(0)), group_concat(ifnull(parent_id, char(1)), char(0)), "
    "group_concat(type, char(0)), group_concat(ifnull(timestamp, char(1)), char(0)), "
    "total(typeof(id) = 'text' AND typeof(type) = 'text' AND typeof(seq) = 'integer'), "
    "total(typeof(parent_id) IN ('text', 'null') AND typeof(timestamp) IN ('text', 'null')), count(*) "
    "FROM st_entries INDEXED BY sqlite_autoindex_st_entries_1 WHERE session_id = ?"
)


def _sqlite_columns(conn: Conn, session_id: str) -> _Columns | None:
    """The key columns in one row of five strings, split here: a tuple of five objects per row costs more
    than SQLite's reading of the rows (``None``: read them row by row; they are not all plain text).

    Key columns hold no NUL (``text.key`` escapes it) but a client may have put one in; every column must
    then split into as many values as there are rows, in ``seq`` order (the primary key's), or this gives up.
    """
    try:
        found = conn.query_one(_CONCAT, (session_id,))
    except SessionError:  # a database without that index name: read row by row
        return None
    if found is None or found[0] is None:
        return None
    seq_text, id_text, parent_text, type_text, stamp_text, plain, optional, count = found
    if plain != count or optional != count or not all(isinstance(v, str) for v in found[:5]):
        return None
    ids, types = id_text.split("\0"), type_text.split("\0")
    parents = [None if p == _NULL else p for p in parent_text.split("\0")]
    stamps = [None if t == _NULL else t for t in stamp_text.split("\0")]
    if _NULL in ids or not len(ids) == len(types) == len(parents) == len(stamps) == count:
        return None
    try:
        seqs = list(map(int, seq_text.split(",")))
    except ValueError:
        return None
    return seqs, ids, parents, types, stamps


class ColumnTree(ReadThroughStore):
    """Position ``i`` is row ``i + 1``; lines are fetched by ``seq`` only for the entries asked for."""

    WHAT = "a SQL session's tree"

    def __init__(
        self, conn: Conn, session_id: str, count: int, where: str, on_damage: Callable[[Damage], None]
    ) -> None:
        super().__init__()
        self._conn = conn
        self._session_id = session_id
        self._where_text = where
        self.location = where
        self.read_only = True
        self.header = None
        self._on_damage = on_damage
        columns = _sqlite_columns(conn, session_id) if conn.dialect == "sqlite" else None
        if columns is None:
            columns = _columns(conn, session_id)
        seqs, ids, parents, types, stamps = columns
        # (rows another writer appended since the session was read are in the tree, as a read of the lines has them)
        if len(ids) < count or seqs != list(range(1, len(ids) + 1)):
            raise Damage(f"{where}: the entry rows are not rows 1 to {count} or more", in_lines=True)
        if not (
            set(map(type, ids)) <= _TEXT
            and set(map(type, types)) <= _TEXT
            and set(map(type, parents)) <= _OPT_TEXT
            and set(map(type, stamps)) <= _OPT_TEXT
        ):
            raise Damage(f"{where}: a key column is not text")
        if any(_ESCAPED in "".join(filter(None, c)) for c in (ids, parents, types, stamps)):
            raise Plain(f"{where}: a key column is escaped")  # (or holds U+FFFD): the lines say what it is
        self._install(ids, parents, types, stamps)
        if self.problems or self.has_duplicates:
            raise Damage(f"{where}: the key columns name a repeated id or a parent that is not there")

    # -- reads ---------------------------------------------------------------------------------------------
    def _where(self) -> str:
        return self._where_text

    def _row(self, i: int) -> Row:
        return Row(
            i + 1, None, 0, self._ids[i], self._types[i], self._parents[i], self._timestamps[i],
            None, None, None, None, None,
        )  # fmt: skip

    def _lines(self, positions: Sequence[int]) -> dict[int, bytes]:
        got: dict[int, bytes] = {}
        wanted = list(dict.fromkeys(positions))
        for start in range(0, len(wanted), _BATCH):
            batch = [i + 1 for i in wanted[start : start + _BATCH]]
            marks = ",".join("?" * len(batch))
            for seq, line in self._conn.query(
                f"SELECT seq, line FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                (self._session_id, *batch),
            ):
                try:
                    got[int(seq) - 1] = as_bytes(line, f"{self._where_text}: row {seq}: its line")
                except Damage as exc:
                    raise SessionError(str(exc), kind="invalid_session") from None
        missing = [i for i in wanted if i not in got]
        if missing:
            raise SessionError(f"{self._where_text}: row {missing[0] + 1} is gone", kind="invalid_session")
        return got

    def _checked(self, i: int, line: bytes) -> dict[str, Any]:
        try:
            return entry_of(self._row(i), line, self._where_text)
        except Damage as exc:
            if exc.in_lines:  # (the target_id of a label or leaf is not read here: only that may differ)
                self._on_damage(exc)
        return self._decode_raw(i, line[:-1] if line.endswith(b"\r") else line)

    def _decode(self, i: int) -> dict[str, Any]:
        return self._checked(i, self._lines([i])[i])

    def raw_at(self, i: int) -> bytes:
        if i < 0:
            i += len(self._ids)
        line = self._lines([i])[i]
        return line[:-1] if line.endswith(b"\r") else line

    def raws_at(self, positions: Sequence[int]) -> list[bytes]:
        lines = self._lines(positions)
        return [lines[i][:-1] if lines[i].endswith(b"\r") else lines[i] for i in positions]

    def preload(self, positions: Iterable[int]) -> None:
        todo = [i for i in positions if i not in self._cache]
        for start in range(0, len(todo), _BATCH):
            lines = self._lines(todo[start : start + _BATCH])
            for i, line in lines.items():
                self._cache[i] = self._checked(i, line)

    def entries(self) -> list[dict[str, Any]]:
        self.preload(range(len(self._ids)))
        return [self._cache[i] for i in range(len(self._ids))]

    def line_of(self, i: int) -> int | None:
        return None
