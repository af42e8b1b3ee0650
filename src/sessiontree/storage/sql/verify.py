"""``check`` of a session in a SQL store: everything its file check would find, plus whatever in its rows and
its session row disagrees with its lines, found by reading all of them (read-only, in one snapshot).

The lines are read as a file (``loaded.py``: bad lines, duplicate ids, dangling parents, key columns that
disagree, missing rows); then every row's pointer columns are computed again from the lines, as they were at
insert, and compared; then the session row's counts, name and first message, and its irregular flag; then
SQLite's tree chunks against the rows they cover.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sessiontree.storage.session_dirs import SessionInfoBuilder
from sessiontree.storage.sql.database import Conn
from sessiontree.storage.sql.loaded import LoadedSession
from sessiontree.storage.sql.rows import (
    ROW_COLUMNS,
    WIDTH,
    Damage,
    as_bytes,
    decode_line,
    parse_row,
    row_problem,
)
from sessiontree.storage.sql.session_row import LOAD, SessionRow, parse_session_row
from sessiontree.storage.sql.text import display
from sessiontree.storage.sql.tree_chunks import check_chunks
from sessiontree.tree.context import settings_kind
from sessiontree.tree.entry_store import Problem
from sessiontree.tree.session_index import LocalIndex

__all__ = ["check_pointers", "check_session"]

_BATCH = 512
_NAMES = ("parent_seq", "depth", "compaction_seq", "model_seq", "thinking_seq", "tools_seq")


@dataclass(slots=True)
class _Expected:
    seq: int
    depth: int
    compaction: int | None
    model: int | None
    thinking: int | None
    tools: int | None


def _rows(conn: Conn, session_id: str) -> Iterator[tuple[Any, ...]]:
    sql = f"SELECT {ROW_COLUMNS}, line FROM st_entries WHERE session_id = ?"
    last: Any = None
    while True:
        if last is None:
            rows = conn.query(f"{sql} ORDER BY seq LIMIT ?", (session_id, _BATCH))
        else:
            rows = conn.query(f"{sql} AND seq > ? ORDER BY seq LIMIT ?", (session_id, last, _BATCH))
        yield from rows
        if len(rows) < _BATCH:
            return
        last = rows[-1][0]


def check_session(conn: Conn, session_id: str, where: str) -> list[Problem]:
    """Every problem of the stored session, read in one snapshot (``CorruptSessionError`` when its header is
    unreadable, as a file's check reports a damaged header)."""
    from sessiontree.errors import SessionNotFoundError

    with conn.transaction(write=False):
        if conn.dialect == "postgresql":
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        found = conn.query_one(LOAD, (session_id, session_id))
        if found is None:
            raise SessionNotFoundError(f"Session not found: {where}")
        stored = parse_session_row(found, session_id, where)
        first_line = stored.header_line.count(b"\n") + 2
        whole = LocalIndex(LoadedSession(conn, session_id, stored.header, where, first_line))
        return [
            *stored.import_problems,
            *stored.problems,
            *whole.problems,
            *check_pointers(conn, session_id, where, stored),
            *check_chunks(conn, session_id, where),
            *whole.cycle_problems(),
        ]


def _entry(line: Any) -> dict[str, Any] | None:
    """A row's line as an entry, when it is one (what the read of the lines keeps)."""
    try:
        entry = decode_line(as_bytes(line, "line"), "line")
    except Damage:
        return None
    kind, entry_id = entry.get("type"), entry.get("id")
    return entry if isinstance(kind, str) and kind != "session" and isinstance(entry_id, str) else None


def check_pointers(conn: Conn, session_id: str, where: str, stored: SessionRow) -> list[Problem]:
    """Problems of the pointer columns and of the session row: each computed again from the lines."""
    problems: list[Problem] = []
    by_id: dict[str, _Expected] = {}
    info = SessionInfoBuilder(keep_texts=False)
    irregular = False
    rows = 0
    last_seq = 0
    for raw in _rows(conn, session_id):
        rows += 1
        try:
            row = parse_row(raw, where)
        except Damage as exc:
            problems.append(row_problem(str(exc)))
            continue
        last_seq = max(last_seq, row.seq)
        entry = _entry(raw[WIDTH])  # None for a bad line (reported by the read of the lines)
        if entry is not None:
            info.add(entry)
        # a bad line's columns stand in for it, so that its descendants are compared as they were written
        entry_id = entry["id"] if entry is not None else row.id
        parent_id = row.parent_id
        if entry is not None:
            raw_parent = entry.get("parentId")
            parent_id = raw_parent if isinstance(raw_parent, str) else None
        kind = entry["type"] if entry is not None else row.type
        setting = settings_kind(entry) if entry is not None else None
        parent = by_id.get(parent_id) if parent_id is not None else None
        if entry_id in by_id or (parent_id is not None and (parent is None or parent_id == entry_id)):
            irregular = True
        stored_pointers = _Expected(
            row.seq, row.depth, row.compaction_seq, row.model_seq, row.thinking_seq, row.tools_seq
        )
        if parent_id is not None and parent is None:
            by_id[entry_id] = (
                stored_pointers  # a dangling parent (reported with the lines): nothing to compare
            )
            continue
        expected = _Expected(
            row.seq,
            parent.depth + 1 if parent else 0,
            row.seq if kind == "compaction" else parent.compaction if parent else None,
            row.seq if setting == "model" else parent.model if parent else None,
            row.seq if setting == "thinking" else parent.thinking if parent else None,
            row.seq if setting == "tools" else parent.tools if parent else None,
        )
        want = (parent.seq if parent else None, *(getattr(expected, f) for f in _FIELDS))
        got = (row.parent_seq, *(getattr(stored_pointers, f) for f in _FIELDS))
        wrong = [f"{n} is {g}, not {w}" for n, g, w in zip(_NAMES, got, want, strict=True) if g != w]
        if entry is not None and kind in ("label", "leaf"):
            target = entry.get("targetId")
            if row.target_id != (target if isinstance(target, str) else None):
                wrong.append(f"target_id is {row.target_id!r}, but its line says {target!r}")
        if wrong:
            problems.append(
                row_problem(f"{where}: row {row.seq} (entry {entry_id!r}): {'; '.join(wrong)}", entry_id)
            )
        by_id[entry_id] = expected
    problems.extend(_session_row(where, stored, info, rows, last_seq, irregular))
    return problems


_FIELDS = ("depth", "compaction", "model", "thinking", "tools")


def _session_row(
    where: str, stored: SessionRow, info: SessionInfoBuilder, rows: int, last_seq: int, irregular: bool
) -> list[Problem]:
    out: list[Problem] = []

    def wrong(what: str) -> None:
        out.append(Problem("bad_session_row", None, f"{where}: the session row's {what}"))

    if stored.entry_count != last_seq or rows != last_seq:
        wrong(
            f"entry_count is {stored.entry_count}, but {rows} entry rows are stored, the last is row {last_seq}"
        )
    if stored.message_count != info.message_count:
        wrong(f"message_count is {stored.message_count}, but its lines hold {info.message_count} messages")
    if stored.name != display(info.name):
        wrong(f"name is {stored.name!r}, but its lines name it {display(info.name)!r}")
    if stored.first_message != display(info.first_message):
        wrong("first_message is not its first user message")
    activity = int(info.last_activity) if info.last_activity is not None else None
    stored_activity = int(stored.last_activity) if stored.last_activity is not None else None
    if stored_activity != activity:
        wrong(f"modified_ms is {stored_activity}, but its last message is at {activity}")
    if irregular and not stored.irregular:
        wrong(
            "irregular flag is 0, but its entries repeat ids or name parents that come later: reads would "
            "follow pointers that do not say what its lines say"
        )
    return out
