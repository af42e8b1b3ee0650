"""A session's row in ``st_sessions`` as it is read back, checked: the header must be a session header with the
row's id (else ``CorruptSessionError``, as a file whose header is damaged); the other columns are what a
listing shows and what was recorded on import, so damage there is reported as a problem and read around.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sessiontree.errors import CorruptSessionError
from sessiontree.format import pi_json as _json
from sessiontree.storage._fileformat import header_problem
from sessiontree.storage.sql.rows import ROW_COLUMNS, Damage, as_bytes
from sessiontree.tree.entry_store import Problem

__all__ = ["LOAD", "SessionRow", "parse_session_row"]

LOAD = (
    "SELECT s.header, s.irregular, s.problems, s.name, s.message_count, s.first_message, s.modified_ms, "
    "s.entry_count, " + ", ".join(f"e.{c.strip()}" for c in ROW_COLUMNS.split(",")) + ", e.line "
    "FROM st_sessions s LEFT JOIN st_entries e ON e.session_id = s.id "
    "AND e.seq = (SELECT MAX(seq) FROM st_entries WHERE session_id = ?) WHERE s.id = ?"
)
"""A session row and its last entry row (``ROW_COLUMNS`` and the line, from column 8) in one statement: one
snapshot of both. Parameters: the session id twice."""


@dataclass(slots=True)
class SessionRow:
    """The session row's columns, checked; ``problems`` lists the columns that were not what they should be."""

    header_line: bytes
    header: dict[str, Any]
    irregular: bool
    entry_count: int
    name: str | None = None
    message_count: int = 0
    first_message: str | None = None
    last_activity: float | None = None
    import_problems: list[Problem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _header(value: Any, session_id: str, where: str) -> tuple[bytes, dict[str, Any]]:
    try:
        block = as_bytes(value, "the stored header")
        header = _json.first_object(block)
    except (Damage, ValueError) as exc:
        raise CorruptSessionError(f"{where}: the stored session header is unreadable: {exc}") from None
    problem = header_problem(header)
    if problem is not None:
        raise CorruptSessionError(
            f"{where}: the stored session header: {problem.replace('first line', 'it')}"
        )
    assert isinstance(header, dict)
    if header.get("id") != session_id:
        raise CorruptSessionError(
            f"{where}: the stored session header names session {header.get('id')!r}, not {session_id!r}"
        )
    return block, header


def _problem(where: str, what: str) -> Problem:
    return Problem("bad_session_row", None, f"{where}: the session row's {what}")


def _import_problems(value: Any, where: str, out: list[Problem]) -> list[Problem]:
    if value is None:
        return []
    try:
        items = json.loads(value)
        if not isinstance(items, list):
            raise ValueError("not a list")
        problems = []
        for item in items:
            if not isinstance(item, dict):
                raise ValueError("an item is not an object")
            kind, line, message, entry = (item.get(k) for k in ("kind", "line", "message", "entry_id"))
            if not isinstance(kind, str) or not isinstance(message, str):
                raise ValueError("an item has no kind or message")
            problems.append(
                Problem(
                    kind,
                    line if isinstance(line, int) and not isinstance(line, bool) else None,
                    message,
                    entry if isinstance(entry, str) else None,
                )
            )
        return problems
    except (TypeError, ValueError, RecursionError) as exc:
        out.append(_problem(where, f"record of the problems found on import is unreadable ({exc})"))
        return []


def _count(value: Any, name: str, where: str, out: list[Problem]) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    out.append(_problem(where, f"{name} is {value!r}, not a count"))
    return 0


def _text(value: Any, name: str, where: str, out: list[Problem]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    out.append(_problem(where, f"{name} is {type(value).__name__}, not text"))
    return None


def parse_session_row(found: tuple[Any, ...], session_id: str, where: str) -> SessionRow:
    """``(header, irregular, problems, name, message_count, first_message, modified_ms, entry_count, …)``."""
    header_line, header = _header(found[0], session_id, where)
    problems: list[Problem] = []
    irregular = found[1]
    if irregular not in (0, 1):  # a damaged flag: reading the session from its lines is always right
        problems.append(_problem(where, f"irregular flag is {irregular!r}, not 0 or 1"))
    modified = found[6]
    if modified is not None and (isinstance(modified, bool) or not isinstance(modified, (int, float))):
        problems.append(_problem(where, f"modified_ms is {modified!r}, not a time"))
        modified = None
    row = SessionRow(
        header_line,
        header,
        irregular != 0,
        _count(found[7], "entry_count", where, problems),
        _text(found[3], "name", where, problems),
        _count(found[4], "message_count", where, problems),
        _text(found[5], "first_message", where, problems),
        float(modified) if modified is not None else None,
    )
    row.import_problems = _import_problems(found[2], where, problems)
    row.problems = problems
    return row
