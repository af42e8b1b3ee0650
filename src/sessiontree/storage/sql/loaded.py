"""A SQL session loaded whole from its lines: every entry's envelope in memory, lines fetched by ``seq``.

The lines are the truth, as a file's are: they are validated by the file store's scanner and indexed by the
same ``IndexedStore``, so a session with bad lines, duplicate ids, dangling parents or cycles (an imported
damaged file, or rows changed behind sessiontree's back) is read exactly as the file a copy of it would give,
with the same problems on the same line numbers. Where a row's key columns or ``seq`` disagree with its line
that is reported too (``bad_row``, ``missing_rows``); the line wins. Read-only: the session index writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.storage._scan import memory_chunks, scan
from sessiontree.storage.sql.database import Conn
from sessiontree.storage.sql.rows import Damage, as_bytes, as_int, as_opt_text, row_problem
from sessiontree.tree.entry_store import IndexedStore, Problem

__all__ = ["LoadedSession", "strip_cr"]

_BATCH = 512
_SENTINEL = b'{"type":"_","id":"_"}'  # ends every scanned batch: its last real line is never a torn tail
_LEFT_OUT = b"\x00"  # stands in for a row that cannot be scanned as a line (its problem is reported here)


def strip_cr(line: bytes) -> bytes:
    """A stored line as ``raw_at`` gives it: one trailing ``\\r`` (a CRLF file's) left out, as the file store does."""
    return line[:-1] if line.endswith(b"\r") else line


def _blank(line: bytes) -> bool:
    return not line or (line[0] != 0x7B and not line.strip())  # the scanner's rule


class LoadedSession(IndexedStore):
    """Position ``i`` is the ``i``-th valid line in ``seq`` order (``seqs[i]`` its row); ``line_of`` gives
    the line it would have in a file of the session (its header block first)."""

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
        self.seqs: list[int] = []
        self._line_numbers: list[int] = []
        self.last_seq = 0
        """The highest ``seq`` read: the session has changed when its last row's is another."""
        self.row_problems: list[Problem] = []
        """Rows whose columns disagree with their lines, and missing rows (not in a file's problems)."""
        ids: list[str] = []
        parents: list[str | None] = []
        types: list[str] = []
        stamps: list[str | None] = []
        blank = [0, 0]  # count, first line
        line_no = first_line
        stored: list[int] = []  # every row's seq, lines that are skipped included
        for rows in self._batches():
            line_no = self._scan_batch(rows, line_no, (ids, parents, types, stamps), blank, stored)
        self.last_seq = max(stored, default=0)
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
        self._install(ids, parents, types, stamps)
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

    def _scan_batch(
        self,
        rows: Sequence[tuple[Any, ...]],
        first_line: int,
        into: tuple[list[str], list[str | None], list[str], list[str | None]],
        blank: list[int],
        stored: list[int],
    ) -> int:
        """Scan one batch of rows as consecutive lines of a file; returns the line number after it."""
        where = self._where_text
        lines: list[bytes] = []
        seqs: list[int | None] = []
        left_out: set[int] = set()
        for k, row in enumerate(rows):
            n = first_line + k
            try:
                seq: int | None = as_int(row[0], f"{where}: line {n}: its row's seq")
                line = as_bytes(row[5], f"{where}: line {n}: its row's line")
            except Damage as exc:
                self.row_problems.append(row_problem(f"{exc}; the row is left out", line=n))
                seq, line = None, _LEFT_OUT
                left_out.add(n)
            if seq is not None:
                stored.append(seq)
            if b"\n" in line:
                self.problems.append(
                    Problem(
                        "bad_line",
                        n,
                        f"{where}: line {n}: the stored line holds a line break (a file of it would split "
                        "it); the line is skipped",
                    )
                )
                line = _LEFT_OUT
                left_out.add(n)
            if _blank(line):
                blank[0] += 1
                blank[1] = blank[1] or n
            lines.append(line)
            seqs.append(seq)
        buffer = b"\n".join([*lines, _SENTINEL, b""])
        found = scan(memory_chunks(buffer, 0, len(buffer)), first_line, where)
        self.problems.extend(
            p
            for p in found.problems
            if p.kind != "blank_lines" and (p.line is None or p.line not in left_out)
        )
        ids, parents, types, stamps = into
        for k in range(len(found.ids) - 1):  # the sentinel is the last
            n = found.lines[k]
            seq = seqs[n - first_line]
            if seq is None:
                continue
            self._compare(
                rows[n - first_line], n, found.ids[k], found.parents[k], found.types[k], found.timestamps[k]
            )
            ids.append(found.ids[k])
            parents.append(found.parents[k])
            types.append(found.types[k])
            stamps.append(found.timestamps[k])
            self.seqs.append(seq)
            self._line_numbers.append(n)
        return first_line + len(rows)

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
                row_problem(f"{self._where_text}: line {n} (row {row[0]}): {'; '.join(wrong)}", entry_id, n)
            )

    # -- reads ---------------------------------------------------------------------------------------------
    def _where(self) -> str:
        return self._where_text

    def raw_at(self, i: int) -> bytes:
        if i < 0:
            i += len(self._ids)
        seq = self.seqs[i]
        row = self._conn.query_one(
            "SELECT line FROM st_entries WHERE session_id = ? AND seq = ?", (self._session_id, seq)
        )
        if row is None:
            raise SessionError(f"{self._where_text}: row {seq} is gone", kind="invalid_session")
        try:
            return strip_cr(as_bytes(row[0], f"{self._where_text}: row {seq}: its line"))
        except Damage as exc:
            raise SessionError(str(exc), kind="invalid_session") from None

    def raws_at(self, positions: Sequence[int]) -> list[bytes]:
        wanted = [self.seqs[i] for i in positions]
        got: dict[int, bytes] = {}
        for start in range(0, len(wanted), _BATCH):
            batch = sorted(set(wanted[start : start + _BATCH]))
            marks = ",".join("?" * len(batch))
            for seq, line in self._conn.query(
                f"SELECT seq, line FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                (self._session_id, *batch),
            ):
                if isinstance(seq, int) and isinstance(line, (bytes, bytearray, memoryview, str)):
                    got[seq] = strip_cr(as_bytes(line, "line"))
        missing = [s for s in wanted if s not in got]
        if missing:
            raise SessionError(f"{self._where_text}: row {missing[0]} is gone", kind="invalid_session")
        return [got[s] for s in wanted]

    def preload(self, positions: Sequence[int] | Any) -> None:
        todo = [i for i in positions if i not in self._cache]
        for start in range(0, len(todo), _BATCH):
            batch = todo[start : start + _BATCH]
            for i, raw in zip(batch, self.raws_at(batch), strict=True):
                self._cache[i] = self._decode_raw(i, raw)

    def entries(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for start in range(0, len(self._ids), _BATCH):
            batch = [i for i in range(start, min(start + _BATCH, len(self._ids)))]
            need = [i for i in batch if i not in self._cache]
            raws = dict(zip(need, self.raws_at(need), strict=True)) if need else {}
            out.extend(self._cache[i] if i in self._cache else self._decode_raw(i, raws[i]) for i in batch)
        return out

    def line_of(self, i: int) -> int | None:
        if i < 0:
            i += len(self._ids)
        return self._line_numbers[i] if 0 <= i < len(self._line_numbers) else None

    @property
    def file_exists(self) -> bool:
        return False

    @property
    def is_persisted(self) -> bool:
        return True

    def append(self, entry: Mapping[str, Any]) -> None:
        raise SessionError("a loaded SQL session is read through; append through its session index")

    def set_header(self, header: Mapping[str, Any]) -> None:
        raise SessionError("a loaded SQL session already has its header")

    def sync(self) -> None:
        """Nothing to make durable: this view never writes."""

    def close(self) -> None:
        """The connection belongs to the session index."""
