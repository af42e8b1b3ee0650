"""A SQL session loaded whole from its lines: every entry's envelope in memory, lines fetched by ``seq``.

The lines are the truth, as a file's are: each is judged as the file store's scanner judges a line (its own
verdict: ``_scan._envelope``) and indexed by the same ``IndexedStore``, so a session with bad lines, duplicate ids, dangling parents or cycles (an imported
damaged file, or rows changed behind sessiontree's back) is read exactly as the file a copy of it would give,
with the same problems on the same line numbers. Where a row's key columns or ``seq`` disagree with its line
that is reported too (``bad_row``, ``missing_rows``); the line wins. Read-only: the session index writes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.storage._scan import _envelope as line_envelope
from sessiontree.storage._scan import _why_not_json as why_not_json
from sessiontree.storage.sql.database import Conn
from sessiontree.storage.sql.read_through import ReadThroughStore
from sessiontree.storage.sql.rows import Damage, as_bytes, as_int, as_opt_text, row_problem
from sessiontree.tree.entry_store import Problem

__all__ = ["LoadedSession", "strip_cr"]

_BATCH = 512


def strip_cr(line: bytes) -> bytes:
    """A stored line as ``raw_at`` gives it: one trailing ``\\r`` (a CRLF file's) left out, as the file store does."""
    return line[:-1] if line.endswith(b"\r") else line


class LoadedSession(ReadThroughStore):
    """Position ``i`` is the ``i``-th valid line in ``seq`` order; ``line_of`` gives the line it has in a file of
    the session (its header block first). A stored line holding line breaks is the several lines its file has.
    """

    WHAT = "a loaded SQL session"

    def __init__(
        self, conn: Conn, session_id: str, header: dict[str, Any] | None, where: str, first_line: int = 2
    ) -> None:
        super().__init__()
        self._conn = conn
        self._session_id = session_id
        self._where_text = where
        self.location = where
        """Where the session lives (``STORE_URL#ID``), for the problems a tree walk reports."""
        self.header = header
        self.read_only = True
        self._keys: list[Any] = []  # each position's row, by its seq as stored (whatever a client put there)
        self._parts: list[
            int
        ] = []  # which of its line's pieces (-1: the whole line, which has no line break)
        self._line_numbers: list[int] = []
        self.row_problems: list[Problem] = []
        """Rows whose columns disagree with their lines, and missing rows (not in a file's problems)."""
        into: tuple[list[str], list[str | None], list[str], list[str | None]] = ([], [], [], [])
        blank = [0, 0]  # count, first line
        line_no = first_line
        stored: list[int] = []  # every row's seq, skipped lines included
        for rows in self._batches():
            line_no = self._read_batch(rows, line_no, into, blank, stored)
        expected = 1
        for seq in sorted(stored):
            if seq > expected:
                self._missing(expected, seq - 1)
            expected = max(expected, seq + 1)
        if blank[0]:
            self.problems.append(
                Problem(
                    "blank_lines",
                    blank[1],
                    f"{where}: {blank[0]} blank line(s) skipped, the first on line {blank[1]}",
                )
            )
        self._install(*into)
        self.problems.extend(self.row_problems)

    # -- loading -----------------------------------------------------------------------------------------
    def _batches(self) -> Iterator[list[tuple[Any, ...]]]:
        sql = "SELECT seq, id, parent_id, type, timestamp, line FROM st_entries WHERE session_id = ?"
        last: Any = None
        while True:
            if last is None:
                rows = self._conn.query(f"{sql} ORDER BY seq LIMIT ?", (self._session_id, _BATCH))
            else:
                rows = self._conn.query(
                    f"{sql} AND seq > ? ORDER BY seq LIMIT ?", (self._session_id, last, _BATCH)
                )
            if not rows:
                return
            last = rows[-1][0]
            yield rows
            if len(rows) < _BATCH:
                return

    def _missing(self, first: int, last: int) -> None:
        which = f"row {first} is" if first == last else f"rows {first} to {last} are"
        self.row_problems.append(
            Problem(
                "missing_rows", None, f"{self._where_text}: {which} missing (deleted outside sessiontree)"
            )
        )

    def _read_batch(
        self,
        rows: Sequence[tuple[Any, ...]],
        line_no: int,
        into: tuple[list[str], list[str | None], list[str], list[str | None]],
        blank: list[int],
        stored: list[int],
    ) -> int:
        """Read one batch of rows as the next lines of a file; returns the number of the line after them."""
        where = self._where_text
        for row in rows:
            try:
                stored.append(as_int(row[0], f"{where}: line {line_no}: its row's seq"))
            except Damage as exc:  # kept: a copy of the session writes it where it sorts
                self.row_problems.append(row_problem(str(exc), line=line_no))
            try:
                line = as_bytes(row[5], f"{where}: line {line_no}: its row's line")
            except Damage as exc:
                self.row_problems.append(row_problem(f"{exc}; the row is left out", line=line_no))
                line_no += 1
                continue
            pieces = line.split(b"\n")
            if len(pieces) > 1:
                self.row_problems.append(
                    row_problem(
                        f"{where}: line {line_no} (row {row[0]!r}): its stored line holds {len(pieces) - 1} line "
                        f"break(s): a file of it has {len(pieces)} lines there",
                        line=line_no,
                    )
                )
            for part, piece in enumerate(pieces):
                envelope = self._line(piece, line_no, blank)
                if envelope is not None:
                    if len(pieces) == 1:
                        self._compare(row, line_no, *envelope)
                    entry_id, parent, kind, stamp = envelope
                    into[0].append(entry_id)
                    into[1].append(parent)
                    into[2].append(kind)
                    into[3].append(stamp)
                    self._keys.append(row[0])
                    self._parts.append(part if len(pieces) > 1 else -1)
                    self._line_numbers.append(line_no)
                line_no += 1
        return line_no

    def _line(self, line: bytes, n: int, blank: list[int]) -> tuple[str, str | None, str, str | None] | None:
        """``(id, parentId, type, timestamp)`` of line ``n`` when it is an entry, as the file store judges a
        line (its own verdict, ``_scan._envelope``); else its problem is reported."""
        where = self._where_text
        if not line or (line[0] != 0x7B and not line.strip()):
            blank[0] += 1
            blank[1] = blank[1] or n
            return None
        parses, kind, entry_id, parent, stamp = line_envelope(line)
        if not parses:
            self.problems.append(
                Problem("bad_line", n, f"{where}: line {n}: {why_not_json(line)}; the line is skipped")
            )
            return None
        if kind == "session":
            self.problems.append(
                Problem("extra_header", n, f"{where}: line {n}: a second session header; it is ignored")
            )
            return None
        if not isinstance(kind, str) or not isinstance(entry_id, str):
            self.problems.append(
                Problem(
                    "bad_line",
                    n,
                    f"{where}: line {n}: not a session entry (needs a string 'type' and 'id'); the line is skipped",
                )
            )
            return None
        if parent is not None and not isinstance(parent, str):
            self.problems.append(
                Problem(
                    "bad_parent",
                    n,
                    f"{where}: line {n}: entry {entry_id!r} has a parentId that is not a string; "
                    "it is treated as a root",
                    entry_id,
                )
            )
            parent = None
        return entry_id, parent, sys.intern(kind), stamp if isinstance(stamp, str) else None

    def _compare(
        self, row: tuple[Any, ...], n: int, entry_id: str, parent: str | None, kind: str, stamp: str | None
    ) -> None:
        """Report key columns that disagree with the line (the line is what is read)."""
        wrong = []
        for name, column, body in (
            ("id", row[1], entry_id),
            ("parent_id", row[2], parent),
            ("type", row[3], kind),
            ("timestamp", row[4], stamp),
        ):
            try:
                value = as_opt_text(column, name)
            except Damage:
                value = column
            if value != body:
                wrong.append(f"its {name} column is {value!r} but its line says {body!r}")
        if wrong:
            self.row_problems.append(
                row_problem(f"{self._where_text}: line {n} (row {row[0]!r}): {'; '.join(wrong)}", entry_id, n)
            )

    # -- reads ---------------------------------------------------------------------------------------------
    def _where(self) -> str:
        return self._where_text

    def _piece(self, i: int, line: Any) -> bytes:
        try:
            whole = as_bytes(line, f"{self._where_text}: row {self._keys[i]!r}: its line")
        except Damage as exc:
            raise SessionError(str(exc), kind="invalid_session") from None
        part = self._parts[i]
        pieces = whole.split(b"\n") if part >= 0 else [whole]
        return strip_cr(pieces[max(part, 0)] if max(part, 0) < len(pieces) else b"")

    def raw_at(self, i: int) -> bytes:
        if i < 0:
            i += len(self._ids)
        return self.raws_at([i])[0]

    def raws_at(self, positions: Sequence[int]) -> list[bytes]:
        wanted = [self._keys[i] for i in positions]
        got: dict[Any, Any] = {}
        for start in range(0, len(wanted), _BATCH):
            batch = list(dict.fromkeys(wanted[start : start + _BATCH]))
            marks = ",".join("?" * len(batch))
            for key, line in self._conn.query(
                f"SELECT seq, line FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                (self._session_id, *batch),
            ):
                got[key] = line
        missing = [k for k in wanted if k not in got]
        if missing:
            raise SessionError(f"{self._where_text}: row {missing[0]!r} is gone", kind="invalid_session")
        return [self._piece(i, got[k]) for i, k in zip(positions, wanted, strict=True)]

    def preload(self, positions: Sequence[int] | Any) -> None:
        todo = [i for i in positions if i not in self._cache]
        for start in range(0, len(todo), _BATCH):
            batch = todo[start : start + _BATCH]
            for i, raw in zip(batch, self.raws_at(batch), strict=True):
                self._cache[i] = self._decode_raw(i, raw)

    def entries(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for start in range(0, len(self._ids), _BATCH):
            batch = list(range(start, min(start + _BATCH, len(self._ids))))
            need = [i for i in batch if i not in self._cache]
            raws = dict(zip(need, self.raws_at(need), strict=True)) if need else {}
            out.extend(self._cache[i] if i in self._cache else self._decode_raw(i, raws[i]) for i in batch)
        return out

    def line_of(self, i: int) -> int | None:
        if i < 0:
            i += len(self._ids)
        return self._line_numbers[i] if 0 <= i < len(self._line_numbers) else None
