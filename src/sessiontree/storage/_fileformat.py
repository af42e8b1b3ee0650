"""Reading the framing of a pi session file: the header line, the version it gives (whether pi would migrate
the file) and the objects a migration keeps.

Pure functions on bytes; they must not touch the file system or interpret entries beyond the header.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sessiontree.format import pi_json as _json
from sessiontree.format.entries import CURRENT_SESSION_VERSION
from sessiontree.tree.entry_store import Problem

from ..errors import CorruptSessionError

__all__ = [
    "decode_for_migration",
    "find_header",
    "header_problem",
    "needs_migration",
    "parse_header",
    "session_version",
]

_BOM = b"\xef\xbb\xbf"


def find_header(data: bytes) -> tuple[int, int, int] | None:
    """``(start, stop, line_number)`` of the first non-blank line (a leading BOM skipped), or ``None``."""
    pos = len(_BOM) if data.startswith(_BOM) else 0
    line_no = 1
    while pos < len(data):
        nl = data.find(b"\n", pos)
        stop = len(data) if nl < 0 else nl
        if data[pos:stop].strip():
            return pos, stop, line_no
        pos = stop + 1
        line_no += 1
    return None


_HEADER_START = b'{"type":"session"'


def header_problem(header: Any) -> str | None:
    """Why a decoded first line is not a usable session header, or ``None`` when it is one.

    A ``version`` must be absent (a v1 file) or a JSON number: pi compares it as a JavaScript number, so a
    string or ``null`` there would have it rewrite the file on every open without ever migrating it.
    """
    if not isinstance(header, dict) or header.get("type") != "session":
        return "first line is not a valid session header"
    if not isinstance(header.get("id"), str):
        return "first line is not a valid session header (its id is not a string)"
    if "version" in header:
        version = header["version"]
        if isinstance(version, bool) or not isinstance(version, (int, float)):
            return f"unsupported session version {_json.dumps(version)[:40]} (a version must be a number)"
    return None


def parse_header(data: bytes, where: str) -> tuple[dict[str, Any], int, int] | int | None:
    """The header object, the offset after its line and its line number; raises on a damaged header.

    ``None`` when there is no non-blank line. An ``int`` (the header's line number) when the only content is
    the start of a header line without its newline: a crash during the very first write, which is a torn
    tail of an empty session rather than damage.
    """
    found = find_header(data)
    if found is None:
        return None
    start, stop, line_no = found
    line = data[start:stop]
    try:
        header = _json.loads(line)
    except ValueError:
        header = None
        if stop == len(data) and (line.startswith(_HEADER_START) or _HEADER_START.startswith(line)):
            return line_no
    problem = header_problem(header)
    if problem is not None:
        hint = (
            "the file is left unchanged; `sessiontree check --repair` can recover its entries"
            if _entries_follow(data, stop)
            else "not a session file: none of the lines after it look like session entries; it is left unchanged"
        )
        raise CorruptSessionError(f"{where}: line {line_no}: {problem} ({hint})", path=where, line=line_no)
    assert isinstance(header, dict)
    return header, stop, line_no


def _entries_follow(data: bytes, stop: int, sample: int = 20) -> bool:
    """Whether the lines after a damaged header look like session entries (at least half of the first
    ``sample`` non-blank ones start as pi writes an entry), i.e. whether a repair has anything to recover."""
    seen = entries = 0
    for line in data[stop + 1 :].split(b"\n", sample * 4):
        line = line.strip()
        if not line:
            continue
        seen += 1
        entries += line.startswith(b'{"type":"') or line.startswith(b'{"id":"')
        if seen >= sample:
            break
    return seen > 0 and entries * 2 >= seen


def decode_for_migration(data: bytes, where: str) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Every parseable object line (header first), as pi's loader keeps them, and the lines it drops."""
    objects: list[dict[str, Any]] = []
    problems: list[Problem] = []
    body = data[len(_BOM) :] if data.startswith(_BOM) else data
    for n, line in enumerate(body.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = _json.loads(line)
        except ValueError:
            value = None
        if isinstance(value, dict):
            objects.append(value)
        else:
            problems.append(
                Problem(
                    "bad_line",
                    n,
                    f"{where}: line {n}: not a JSON object; dropped by the migration (the backup keeps it)",
                )
            )
    return objects, problems


def _js_number(value: Any) -> float:
    """JavaScript's ``Number(value)`` for the JSON values a ``version`` field can hold."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # beyond the largest double: JavaScript reads it as +/-Infinity
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def session_version(header: Mapping[str, Any]) -> float:
    """The header's version as pi reads it: ``header.version ?? 1`` (compared as a JavaScript number)."""
    version = header.get("version")
    return 1.0 if version is None else _js_number(version)


def needs_migration(header: Mapping[str, Any]) -> bool:
    """Whether pi would migrate (and rewrite) a file with this header (``version < 3``; NaN compares false)."""
    return not session_version(header) >= CURRENT_SESSION_VERSION
