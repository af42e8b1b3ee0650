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
from itertools import compress, repeat
from operator import lt, ne, sub
from typing import Any

from sessiontree._bulk import bulk_allocation
from sessiontree.errors import SessionError
from sessiontree.storage.sql.conn import Conn
from sessiontree.storage.sql.read_through import ReadThroughStore
from sessiontree.storage.sql.rows import Damage, Row, as_bytes, entry_of
from sessiontree.storage.sql.tree_chunks import KEY_ROWS, Chunked, read_chunks

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
    "group_concat(ifnull(parent_seq, 0), ','), "
    "total(typeof(id) = 'text' AND typeof(type) = 'text' AND typeof(seq) = 'integer'), "
    "total(typeof(parent_id) IN ('text', 'null') AND typeof(timestamp) IN ('text', 'null') "
    "AND typeof(parent_seq) IN ('integer', 'null')), count(*) "
    "FROM st_entries INDEXED BY sqlite_autoindex_st_entries_1 WHERE session_id = ? AND seq > ?"
)


def _sqlite_columns(conn: Conn, session_id: str, after: int = 0) -> tuple[_Columns, list[int]] | None:
    """The key columns of the rows after row ``after`` in one row of strings, split here, and their
    ``parent_seq`` (0 for NULL): a tuple of objects per row costs more than SQLite's reading of the rows
    (``None``: read them row by row; they are not all plain text, or there are none).

    Key columns hold no NUL (``text.key`` escapes it) but a client may have put one in; every column must
    then split into as many values as there are rows, in ``seq`` order (the primary key's), or this gives up.
    """
    try:
        found = conn.query_one(_CONCAT, (session_id, after))
    except SessionError:  # a database without that index name: read row by row
        return None
    if found is not None and found[-1] == 0:
        return ([], [], [], [], []), []
    if found is None or found[0] is None:
        return None
    seq_text, id_text, parent_text, type_text, stamp_text, pseq_text, plain, optional, count = found
    if plain != count or optional != count or not all(isinstance(v, str) for v in found[:6]):
        return None
    ids, types = id_text.split("\0"), type_text.split("\0")
    parents = [None if p == _NULL else p for p in parent_text.split("\0")]
    stamps = [None if t == _NULL else t for t in stamp_text.split("\0")]
    if _NULL in ids or not len(ids) == len(types) == len(parents) == len(stamps) == count:
        return None
    try:
        seqs = list(map(int, seq_text.split(",")))
        parent_seqs = list(map(int, pseq_text.split(",")))
    except ValueError:
        return None
    return (seqs, ids, parents, types, stamps), parent_seqs


_AFTER = f"{KEY_ROWS} AND seq > ? ORDER BY seq"


def _row_columns(conn: Conn, session_id: str, after: int = 0) -> tuple[_Columns, list[int]] | None:
    """``_sqlite_columns`` read a row at a time (PostgreSQL); ``None`` when a key column is not text."""
    rows = conn.query(_AFTER, (session_id, after))
    if not rows:
        return ([], [], [], [], []), []
    seqs, ids, parents, types, stamps, parent_seqs = (list(c) for c in zip(*rows, strict=True))
    if not (
        set(map(type, ids)) <= _TEXT
        and set(map(type, types)) <= _TEXT
        and set(map(type, parents)) <= _OPT_TEXT
        and set(map(type, stamps)) <= _OPT_TEXT
    ):
        return None
    return (seqs, ids, parents, types, stamps), [0 if p is None else p for p in parent_seqs]


_Ordered = tuple[Chunked, dict[int, str | None]]


def _ordered_columns(conn: Conn, session_id: str, where: str) -> _Ordered | None:
    """The session's chunks and the key columns of the rows after them, where runs start and their
    parents, checked (``Damage``; ``None``: the rows after the chunks are not all plain text), and the
    timestamps of those rows. Their parents are their ``parent_seq``, which must name their parent ids and
    come before them; their ids must not be the chunks' (asked of the id index)."""
    chunked = read_chunks(conn, session_id, where)
    (ids, types, starts, parents), covered = chunked if chunked is not None else (([], [], [], []), 0)
    tail = (_sqlite_columns if conn.dialect == "sqlite" else _row_columns)(conn, session_id, covered)
    if tail is None:
        return None
    (seqs, t_ids, t_parents, t_types, t_stamps), parent_seqs = tail
    if seqs != list(range(covered + 1, covered + len(seqs) + 1)):
        raise Damage(
            f"{where}: the entry rows after row {covered} are not the rows that follow", in_lines=True
        )
    if any(_ESCAPED in "".join(filter(None, c)) for c in (t_ids, t_parents, t_types, t_stamps)):
        raise Plain(f"{where}: a key column is escaped")  # (or holds U+FFFD): the lines say what it is
    t_ppos = list(map(sub, parent_seqs, repeat(1)))  # (parent_seq NULL is read as 0: no parent)
    if t_ppos and (min(t_ppos) < -1 or not all(map(lt, t_ppos, range(covered, covered + len(t_ppos))))):
        raise Damage(f"{where}: a row's parent_seq is not a row before it")
    ids += t_ids
    if list(map([*ids, None].__getitem__, t_ppos)) != t_parents:
        raise Damage(f"{where}: a row's parent_seq does not name the row of its parent id")
    before = range(covered - 1, covered + len(t_ppos) - 1)
    t_starts = list(compress(range(covered, covered + len(t_ppos)), map(ne, t_ppos, before)))
    starts += t_starts
    parents += [t_ppos[i - covered] for i in t_starts]
    types += t_types
    stamps = dict(zip(range(covered, covered + len(t_stamps)), t_stamps, strict=True))
    return (ids, types, starts, parents), stamps


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
        self._start_parents: list[int] | None = None  # of the runs' starts, when read with them
        self._stamps: dict[int, str | None] | None = None  # then: the timestamps fetched so far
        try:
            ordered = _ordered_columns(conn, session_id, where)
        except Damage:
            raise
        except SessionError:  # a database without the chunks' table or that index: read row by row
            ordered = None
        if ordered is not None:
            (all_ids, all_types, starts, start_parents), known = ordered
            if len(all_ids) < count:
                raise Damage(f"{where}: the entry rows are not rows 1 to {count} or more", in_lines=True)
            self._install_ordered(all_ids, all_types, starts, start_parents, known)
            if len(self._id_set or ()) != len(all_ids):
                raise Damage(f"{where}: the key columns name a repeated id")
            return
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

    def _install_ordered(
        self,
        ids: list[str],
        types: list[str],
        starts: list[int],
        parents: list[int],
        stamps: dict[int, str | None],
    ) -> None:
        """Take the ids and types with where runs start and their parents' positions (every parent before its
        child, checked by the caller): every other position's parent is the one before it, so no id is looked
        up. Timestamps are fetched when asked for, those the tree sorts by now."""
        with bulk_allocation():
            n = len(ids)
            if n and (not starts or starts[0] != 0):  # the first row starts a run whatever it says
                starts, parents = [0, *starts], [-1, *parents]
            self._ids, self._types = ids, types
            self._parents = [None, *ids[:-1]] if n else []
            for start, parent in zip(starts, parents, strict=True):
                self._parents[start] = ids[parent] if parent >= 0 else None
            self._breaks, self._start_parents = starts, parents
            self._stamps = stamps
            self._cache = {}
            self._index_map, self._id_set = None, set(ids)
        # what the tree sorts by: the timestamps of the children of a node that has more than one
        wanted = {s for s, p in zip(starts, parents, strict=True) if p >= 0}
        wanted.update(p + 1 for p in parents if p >= 0 and p + 1 < n)
        self._fetch_stamps(sorted(wanted))

    def ordered_parents(self) -> tuple[list[int], list[int]] | None:
        if self._start_parents is None:
            return None
        return list(self._breaks), list(self._start_parents)

    def parent_positions(self, start: int = 0) -> list[int]:
        if self._start_parents is None:
            return super().parent_positions(start)
        ppos = list(range(-1, len(self._ids) - 1))
        for at, parent in zip(self._breaks, self._start_parents, strict=True):
            ppos[at] = parent
        return ppos[start:]

    def timestamp_at(self, i: int) -> str | None:
        stamps = self._stamps
        if stamps is None:
            return super().timestamp_at(i)
        if i < 0:
            i += len(self._ids)
        if i not in stamps:
            self._fetch_stamps([i])
        return stamps.get(i)

    def _fetch_stamps(self, positions: Sequence[int]) -> None:
        stamps = self._stamps
        if stamps is None:
            return
        for start in range(0, len(positions), _BATCH):
            batch = [i + 1 for i in positions[start : start + _BATCH] if 0 <= i < len(self._ids)]
            marks = ",".join("?" * len(batch))
            for seq, stamp in self._conn.query(
                f"SELECT seq, timestamp FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                (self._session_id, *batch),
            ):
                self._stamp(seq, stamp)

    def _stamp(self, seq: Any, stamp: Any) -> None:
        if self._stamps is not None and isinstance(seq, int):
            if stamp is not None and not isinstance(stamp, str):
                self._on_damage(Damage(f"{self._where_text}: row {seq}: its timestamp column is not text"))
                stamp = None
            self._stamps[seq - 1] = stamp

    # -- reads ---------------------------------------------------------------------------------------------
    def _where(self) -> str:
        return self._where_text

    def _row(self, i: int) -> Row:
        return Row(
            i + 1, None, 0, self._ids[i], self._types[i], self._parents[i], self.timestamp_at(i),
            None, None, None, None, None,
        )  # fmt: skip

    def _lines(self, positions: Sequence[int]) -> dict[int, bytes]:
        got: dict[int, bytes] = {}
        wanted = list(dict.fromkeys(positions))
        for start in range(0, len(wanted), _BATCH):
            batch = [i + 1 for i in wanted[start : start + _BATCH]]
            marks = ",".join("?" * len(batch))
            for seq, line, stamp in self._conn.query(
                f"SELECT seq, line, timestamp FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                (self._session_id, *batch),
            ):
                self._stamp(seq, stamp)
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
