"""Paths through a SQL session by its pointer columns, checked as they are read: the walk from an entry up to
the root (or to the latest compaction), and the context view, which adds the settings entries in force.

A walk is one recursive query bounded by the number of rows, so a cycle in the pointers ends it; every row it
returns is checked against its line and against the row above it (``rows.py``), and anything that does not
hang together raises ``Damage``: ``reading.py`` then reads the session from its lines instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.storage.sql.database import Conn
from sessiontree.storage.sql.loaded import strip_cr
from sessiontree.storage.sql.rows import (
    ROW_COLUMNS,
    SETTINGS,
    WIDTH,
    Damage,
    Row,
    as_bytes,
    check_path,
    check_setting_row,
    check_settings,
    entry_of,
    parse_row,
)
from sessiontree.tree.context import settings_kind
from sessiontree.tree.session_index import PathView

__all__ = ["BY_ID", "CACHE", "PathReads", "Pointers", "last_seq_of_id", "session_of_id"]

Entry = dict[str, Any]
# (seq, depth, compaction_seq, model_seq, thinking_seq, tools_seq)
Pointers = tuple[int, int, int | None, int | None, int | None, int | None]


def session_of_id(column: str = "session_id", value: str = "?") -> str:
    """The session condition of a read by id. The index of ids holds the id alone (ids are all but unique
    across a store, and a session's id beside each made the index three times larger: SQLite's since schema 4,
    PostgreSQL's since 7), and the bare column would let a planner walk the session's primary key instead of
    searching that index (PostgreSQL's does when its statistics count the session as one row)."""
    return f"{column} || '' = {value}"


BY_ID = f"{session_of_id()} AND id = ?"
"""``WHERE`` of the rows of this session (the first parameter) with this id (the second)."""


def last_seq_of_id(dialect: str, row: str, session: str = "?") -> str:
    """The last ``seq`` of the session's rows with the id of ``row`` (an alias). SQLite: when no other row of
    the store has the id (nearly always), that row's own, counted in the index of ids alone, without a read of
    each row's session."""
    last = (
        f"(SELECT MAX(x.seq) FROM st_entries x WHERE {session_of_id('x.session_id', session)} "
        f"AND x.id = {row}.id)"
    )
    if dialect != "sqlite":
        return last
    return f"CASE WHEN (SELECT COUNT(*) FROM st_entries x WHERE x.id = {row}.id) = 1 THEN {row}.seq ELSE {last} END"


CACHE = 32_768
"""Decoded entries (and ids' pointers) a session keeps; when full, it starts again. A path longer than this
is decoded again on every read, so it is sized for the long paths adapters read whole (the Agents SDK's
``get_items``: 10k items are 10k entries) while bounding a server's memory per open session."""
_BATCH = 256
_PICKED = ", ".join(f"e.{c.strip()}" for c in ROW_COLUMNS.split(","))


class PathReads:
    """Walks and views over pointer columns (a base of ``SessionReads``, which holds the state)."""

    conn: Conn
    session_id: str
    _count: int
    _entries: dict[int, Entry]
    _walks: dict[int, tuple[int, list[Row]]]

    @property
    def location(self) -> str | None:
        raise NotImplementedError

    def _where(self) -> str:
        return str(self.location)

    def _pointers_strict(self, entry_id: str) -> Pointers | None:
        raise NotImplementedError

    # -- rows and entries --------------------------------------------------------------------------------
    def _decode_row(self, row: Row, line: Any) -> Entry:
        """The entry of ``row`` (cached by ``seq``: a row never changes once written), checked."""
        entry = self._entries.get(row.seq)
        if entry is None:
            if type(line) is bytes:
                raw = line
            else:
                try:
                    raw = as_bytes(line, f"{self._where()}: row {row.seq}: its line")
                except Damage as exc:
                    exc.in_lines = True
                    raise
            entry = entry_of(row, raw, self._where())
            if len(self._entries) >= CACHE:
                self._entries.clear()
            self._entries[row.seq] = entry
        return entry

    def _decode_rows(self, rows: Sequence[Row], lines: dict[int, Any]) -> list[Entry]:
        """The entries of ``rows`` (lines not given are fetched in batches), each checked against its row."""
        out: list[Entry | None] = [self._entries.get(r.seq) for r in rows]
        need = [i for i, e in enumerate(out) if e is None and rows[i].seq not in lines]
        for start in range(0, len(need), _BATCH):
            batch = [rows[i].seq for i in need[start : start + _BATCH]]
            marks = ",".join("?" * len(batch))
            for seq, line in self.conn.query(
                f"SELECT seq, line FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                (self.session_id, *batch),
            ):
                lines[seq] = line
        for i, entry in enumerate(out):
            if entry is None:
                row = rows[i]
                if row.seq not in lines:
                    raise Damage(f"{self._where()}: row {row.seq} is gone", seq=row.seq)
                out[i] = self._decode_row(row, lines[row.seq])
        return [e for e in out if e is not None]

    def _line_of_seq(self, seq: int) -> bytes:
        row = self.conn.query_one(
            "SELECT line FROM st_entries WHERE session_id = ? AND seq = ?", (self.session_id, seq)
        )
        if row is None:
            raise SessionError(f"{self._where()}: row {seq} is gone", kind="invalid_session")
        return strip_cr(as_bytes(row[0], f"{self._where()}: row {seq}: its line"))

    def _view(
        self, rows: Sequence[Row], lines: dict[int, Any], entries: list[Entry] | None = None
    ) -> PathView:
        """A path view of checked rows; every entry is decoded and checked now (a damaged line is found
        before the view is handed out, not while it is read)."""
        decoded = entries if entries is not None else self._decode_rows(rows, lines)
        seqs = [r.seq for r in rows]
        return PathView(
            [r.id for r in rows],
            [r.type for r in rows],
            [r.parent_id for r in rows],
            decoded.__getitem__,
            lambda i: self._line_of_seq(seqs[i]),
        )

    # -- walks -------------------------------------------------------------------------------------------
    def _walk(self, seq: int, stop_depth: int, *, lines: bool) -> tuple[list[Row], dict[int, Any]]:
        """Rows from the root side down to ``seq``: its ancestors up to depth ``stop_depth``, root first, and
        the lines that came with them (``lines``), checked as a path.

        A row never changes once written (its parent is a ``seq``, fixed at insert), so the last walk to
        each depth is kept and the next one stops where it joins it: after a turn appended a few entries
        the context reads those few rows, not the whole path again. The kept rows hold no lines (decoded
        entries are cached by ``seq``; the others are fetched in batches), so a long path is walked whole.
        """
        memo = self._walks.get(stop_depth)
        if memo is not None and memo[0] == seq:
            return list(memo[1]), {}
        known = memo[0] if memo is not None and len(memo[1]) <= CACHE // 2 else -1
        raw = self._walk_rows(seq, stop_depth, known, lines=lines)
        where = self._where()
        rows: list[Row] = []
        got: dict[int, Any] = {}
        for r in raw:
            row = self._unique(r)
            rows.append(row)
            if lines:
                got[row.seq] = r[WIDTH + 1]
        if not rows or rows[-1].seq != seq:
            raise Damage(f"{where}: row {seq} is gone", seq=seq)
        check_path(rows, stop_depth, where, joined_at=known if known >= 0 else None)
        if memo is not None and rows[0].seq == known:
            rows = [*memo[1][:-1], *rows]
        if len(self._walks) >= 4:
            self._walks.clear()
        self._walks[stop_depth] = (seq, rows)
        return list(rows), got

    def _unique(self, raw: Sequence[Any]) -> Row:
        """The ``Row`` of a query row whose next column is the last ``seq`` with its id: ``Damage`` unless that
        is its own (ids are unique in a session read by its pointers)."""
        row = parse_row(raw, self._where())
        if raw[WIDTH] != row.seq:
            raise Damage(
                f"{self._where()}: row {row.seq}: its id {row.id!r} is also the id of row {raw[WIDTH]}",
                seq=row.seq,
                entry_id=row.id,
            )
        return row

    def _walk_rows(self, seq: int, stop_depth: int, known: int, *, lines: bool) -> list[tuple[Any, ...]]:
        """The walk in SQL, ending at depth ``stop_depth``, at the row ``known``, or after as many steps as
        the session has rows (pointers that go round in a circle), whichever comes first; each row comes
        with the ``seq`` of the last row with its id (the same row unless ids repeat).

        The columns travel through the recursion (one primary-key lookup per step): joining the walk back
        to the table let PostgreSQL hash the whole session when its statistics were off (a fresh import).
        """
        columns = ROW_COLUMNS + (", line" if lines else "")
        picked = _PICKED + (", e.line" if lines else "")
        step = (
            "st_entries e JOIN p ON e.session_id = ? AND e.seq = p.parent_seq"
            if self.conn.dialect == "sqlite"
            # a lateral lookup: PostgreSQL's planner, counting one row for a session its statistics do not
            # know yet (one just copied in), put the session's rows outside the loop and scanned them all at
            # every step; the lookup by seq runs once per row of the walk whatever it counts
            else f"p CROSS JOIN LATERAL (SELECT {columns} FROM st_entries WHERE session_id = ? "
            "AND seq = p.parent_seq LIMIT 1) e"
        )
        return self.conn.query(
            f"WITH RECURSIVE p({columns}, n) AS ("
            f" SELECT {columns}, 1 FROM st_entries WHERE session_id = ? AND seq = ?"
            " UNION ALL"
            f" SELECT {picked}, p.n + 1 FROM {step} WHERE p.depth > ? AND p.seq <> ? AND p.n <= ?"
            f") SELECT {ROW_COLUMNS}, {last_seq_of_id(self.conn.dialect, 'p')}"
            f"{', line' if lines else ''} FROM p ORDER BY n DESC",
            (self.session_id, seq, self.session_id, stop_depth, known, self._count + 1, self.session_id),
        )

    # -- views -------------------------------------------------------------------------------------------
    def _leaf_rows(
        self, leaf_id: str, stop_depth: int, pointers: Pointers, *, lines: bool
    ) -> tuple[list[Row], dict[int, Any]]:
        """The walk from ``leaf_id`` (whose pointers are ``pointers``), its last row checked against them."""
        rows, got = self._walk(pointers[0], stop_depth, lines=lines)
        leaf = rows[-1]
        if (
            leaf.id != leaf_id
            or (leaf.depth, leaf.compaction_seq, leaf.model_seq, leaf.thinking_seq, leaf.tools_seq)
            != pointers[1:]
        ):
            raise Damage(
                f"{self._where()}: row {leaf.seq} is not the entry {leaf_id!r} it was",
                seq=leaf.seq,
                entry_id=leaf_id,
            )
        return rows, got

    def _pointer_path(self, leaf_id: str | None) -> PathView:
        pointers = None if leaf_id is None else self._pointers_strict(leaf_id)
        if leaf_id is None or pointers is None:
            return self._view([], {})
        rows, lines = self._leaf_rows(leaf_id, 0, pointers, lines=False)
        return self._view(rows, lines)

    def _pointer_context(self, leaf_id: str | None) -> PathView:
        """The context view by pointers: the path back to the latest compaction (to its ``firstKeptEntryId``
        without a ``retainedTail``) and the settings entries in force above it."""
        pointers = None if leaf_id is None else self._pointers_strict(leaf_id)
        if leaf_id is None or pointers is None:
            return self._view([], {})
        where = self._where()
        seq, _, compaction = pointers[:3]
        if compaction is None:
            rows, lines = self._leaf_rows(leaf_id, 0, pointers, lines=True)
            entries = self._decode_rows(rows, lines)
            check_settings(rows, entries, where, settings_kind)
            return self._view(rows, lines, entries)
        comp, comp_line = self._rows_at([compaction])[0]
        comp_entry = self._decode_row(comp, comp_line)
        if comp.type != "compaction" or comp.seq > seq:
            raise Damage(
                f"{where}: row {seq}: its compaction_seq names row {comp.seq}, which is not a compaction above it",
                seq=seq,
                entry_id=leaf_id,
            )
        stop = comp.depth
        first_kept = comp_entry.get("firstKeptEntryId")
        kept_depth: int | None = None
        if not isinstance(comp_entry.get("retainedTail"), list) and isinstance(first_kept, str):
            kept = self._pointers_strict(first_kept)
            if kept is not None and kept[1] < comp.depth:
                kept_depth = stop = kept[1]
        rows, lines = self._leaf_rows(leaf_id, stop, pointers, lines=True)
        at = comp.depth - stop
        if at >= len(rows) or rows[at].seq != comp.seq or any(r.type == "compaction" for r in rows[at + 1 :]):
            raise Damage(
                f"{where}: row {seq}: its compaction_seq ({comp.seq}) is not the latest compaction on its path",
                seq=seq,
                entry_id=leaf_id,
            )
        if kept_depth is not None and rows[0].id != first_kept:
            rows = rows[at:]  # firstKeptEntryId is not on this path: nothing kept
        entries = self._decode_rows(rows, lines)
        check_settings(rows, entries, where, settings_kind)
        present = {r.seq for r in rows}
        named = {kind: rows[-1].setting(kind) for kind in SETTINGS}
        extra = sorted({s for s in named.values() if s is not None and s not in present})
        before = self._rows_at(extra)
        before_entries = [self._decode_row(row, line) for row, line in before]
        for kind, at_seq in named.items():
            for (row, _), entry in zip(before, before_entries, strict=True):
                if row.seq == at_seq:
                    check_setting_row(row, entry, kind, rows[0].seq, where, settings_kind)
        return self._view([r for r, _ in before] + rows, lines, before_entries + entries)

    def _rows_at(self, seqs: Sequence[int]) -> list[tuple[Row, Any]]:
        """The rows with these ``seq`` (and their lines), in ``seq`` order; ``Damage`` when one is not there."""
        if not seqs:
            return []
        marks = ",".join("?" * len(seqs))
        found = self.conn.query(
            f"SELECT {ROW_COLUMNS}, {last_seq_of_id(self.conn.dialect, 'e', 'e.session_id')}, line "
            f"FROM st_entries e WHERE session_id = ? AND seq IN ({marks}) ORDER BY seq",
            (self.session_id, *seqs),
        )
        rows = [(self._unique(r), r[WIDTH + 1]) for r in found]
        missing = sorted(set(seqs) - {row.seq for row, _ in rows})
        if missing:
            raise Damage(
                f"{self._where()}: a pointer names row {missing[0]}, which is not there", seq=missing[0]
            )
        return rows
