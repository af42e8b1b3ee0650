"""Reading the framing of a pi session file: the header line and the objects a migration keeps.

Pure functions on bytes; they must not touch the file system or interpret entries beyond the header.
"""

from __future__ import annotations

from typing import Any

from .. import _json
from ..errors import CorruptSessionError
from .base import Problem

__all__ = ["decode_for_migration", "find_header", "parse_header"]

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


def parse_header(data: bytes, where: str) -> tuple[dict[str, Any], int, int] | None:
    """The header object, the offset after its line and its line number; raises on a damaged header."""
    found = find_header(data)
    if found is None:
        return None
    start, stop, line_no = found
    try:
        header = _json.loads(data[start:stop])
    except ValueError:
        header = None
    if (
        not isinstance(header, dict)
        or header.get("type") != "session"
        or not isinstance(header.get("id"), str)
    ):
        raise CorruptSessionError(
            f"{where}: line {line_no}: first line is not a valid session header "
            "(the file is left unchanged; `sessiontree check --repair` can recover its entries)",
            path=where,
            line=line_no,
        )
    return header, stop, line_no


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
