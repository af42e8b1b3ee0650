"""Rows of a SQL store as they are read back, checked: every column has the type it was written with, every
line is one JSON object that agrees with its key columns, and a path of rows hangs together (each row's
parent pointer names the row before it, with a smaller ``seq``, one level up).

What a plain database client can change, the reads here notice: ``Damage`` says what disagrees, and the
session's reads go on from its lines alone (``loaded.py``), as its file would be read. Nothing here runs
queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any, NamedTuple

from sessiontree.errors import CorruptSessionError
from sessiontree.format import pi_json as _json
from sessiontree.storage.sql.text import unkey
from sessiontree.tree.entry_store import Problem

__all__ = [
    "KEY_COLUMNS",
    "ROW_COLUMNS",
    "Damage",
    "Row",
    "as_bytes",
    "as_int",
    "as_opt_int",
    "as_opt_text",
    "as_text",
    "check_path",
    "entry_of",
    "parse_row",
    "row_problem",
]

Entry = dict[str, Any]

ROW_COLUMNS = (
    "seq, parent_seq, depth, id, type, parent_id, timestamp, target_id, "
    "compaction_seq, model_seq, thinking_seq, tools_seq"
)
"""The columns ``parse_row`` reads, in its order (a query adds ``line`` after them when it wants lines)."""
KEY_COLUMNS = "seq, NULL, 0, id, type, parent_id, timestamp, target_id, NULL, NULL, NULL, NULL"
"""``ROW_COLUMNS`` for a read that checks a row's line against its key columns only: no pointers travel
(the ``Row`` holds none, and depth 0)."""
WIDTH = 12


class Damage(CorruptSessionError):
    """A stored row that disagrees with itself or with the rows it points at.

    Raised inside the SQL reads, which then read the session from its lines (a ``CorruptSessionError``, so
    that even one that escaped would be a documented error).
    """

    def __init__(
        self, message: str, *, seq: int | None = None, entry_id: str | None = None, in_lines: bool = False
    ) -> None:
        super().__init__(message)
        self.seq = seq
        self.entry_id = entry_id
        self.in_lines = in_lines
        """Whether reading the session from its lines finds (and reports) it too: a bad line, or a key
        column that disagrees with its line; else only pointers show it."""

    def problem(self) -> Problem:
        return row_problem(str(self), self.entry_id)


def row_problem(message: str, entry_id: str | None = None, line: int | None = None) -> Problem:
    """A ``bad_row`` problem: what a SQL row's columns or pointers say disagrees with its line (``line``: its
    line in a file of the session, where known)."""
    return Problem("bad_row", line, message, entry_id)


def as_int(value: Any, what: str) -> int:
    """An integer column's value (``Damage`` for anything else: SQLite keeps whatever a client stored)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Damage(f"{what} is {_shown(value)}, not a whole number")
    return value


def as_opt_int(value: Any, what: str) -> int | None:
    return None if value is None else as_int(value, what)


def as_text(value: Any, what: str) -> str:
    """A key column's string, unescaped (``Damage`` when it is not text or its escape is broken)."""
    if not isinstance(value, str):
        raise Damage(f"{what} is {_shown(value)}, not text")
    try:
        text = unkey(value)
    except ValueError as exc:
        raise Damage(f"{what} holds a broken escape ({exc})") from None
    assert text is not None
    return text


def as_opt_text(value: Any, what: str) -> str | None:
    return None if value is None else as_text(value, what)


def as_bytes(value: Any, what: str) -> bytes:
    """A line or header column's bytes (text stored by a client is taken as its UTF-8 bytes)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    raise Damage(f"{what} is {_shown(value)}, not bytes")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Row(NamedTuple):
    """One entry row's columns (``ROW_COLUMNS``), typed."""

    seq: int
    parent_seq: int | None
    depth: int
    id: str
    type: str
    parent_id: str | None
    timestamp: str | None
    target_id: str | None
    compaction_seq: int | None
    model_seq: int | None
    thinking_seq: int | None
    tools_seq: int | None

    def setting(self, kind: str) -> int | None:
        """The pointer column of a settings kind (``model``, ``thinking``, ``tools``)."""
        return (
            self.model_seq if kind == "model" else self.thinking_seq if kind == "thinking" else self.tools_seq
        )


_ESCAPED = "\ufffd"  # how an escaped key begins (``text.key``): such a value takes the slow path


_INT_TYPES = frozenset({int, type(None)})
_TEXT_TYPES = frozenset({str, type(None)})


def parse_row(raw: Sequence[Any], where: str) -> Row:
    """The first ``WIDTH`` values of a query row as a ``Row`` (``Damage`` naming the column that is wrong)."""
    seq, parent_seq, depth, entry_id, kind, parent_id, timestamp, target, comp, model, think, tools = raw[
        :WIDTH
    ]
    if (
        type(seq) is int
        and type(depth) is int
        and type(entry_id) is str
        and type(kind) is str
        and {type(parent_seq), type(comp), type(model), type(think), type(tools)} <= _INT_TYPES
        and {type(parent_id), type(timestamp), type(target)} <= _TEXT_TYPES
        and _ESCAPED
        not in (entry_id[:1], kind[:1], (parent_id or "")[:1], (timestamp or "")[:1], (target or "")[:1])
    ):
        return Row(
            seq, parent_seq, depth, entry_id, kind, parent_id, timestamp, target, comp, model, think, tools
        )
    return _parse_row(raw, where)


def _parse_row(raw: Sequence[Any], where: str) -> Row:
    """``parse_row`` of a row that is not plain: escaped keys unescaped, a wrong type named."""
    try:
        seq = as_int(raw[0], f"{where}: a row's seq")
        at = f"{where}: row {seq}:"
        entry_id = as_text(raw[3], f"{at} id")
        kind = as_text(raw[4], f"{at} type")
        parent_id = as_opt_text(raw[5], f"{at} parent_id")
        timestamp = as_opt_text(raw[6], f"{at} timestamp")
    except Damage as exc:
        exc.in_lines = True  # the columns a read from the lines compares
        raise
    return Row(
        seq,
        as_opt_int(raw[1], f"{at} parent_seq"),
        as_int(raw[2], f"{at} depth"),
        entry_id,
        kind,
        parent_id,
        timestamp,
        as_opt_text(raw[7], f"{at} target_id"),
        as_opt_int(raw[8], f"{at} compaction_seq"),
        as_opt_int(raw[9], f"{at} model_seq"),
        as_opt_int(raw[10], f"{at} thinking_seq"),
        as_opt_int(raw[11], f"{at} tools_seq"),
    )


def decode_line(line: bytes, what: str) -> Entry:
    """A stored line as an entry object (``Damage`` when it is not one JSON object on one line)."""
    if b"\n" in line:
        raise Damage(
            f"{what}: the stored line holds a line break (a file of it would split it)", in_lines=True
        )
    try:
        value = _json.loads(line)
    except ValueError as exc:
        raise Damage(f"{what}: the stored line is not valid JSON ({exc})", in_lines=True) from None
    if not isinstance(value, dict):
        raise Damage(f"{what}: the stored line is not a JSON object", in_lines=True)
    return value


def envelope_of(entry: Entry) -> tuple[Any, Any, str | None, str | None, str | None]:
    """``(id, type, parentId, timestamp, targetId)`` as an entry row keeps them in its key columns."""
    kind = entry.get("type")
    parent = entry.get("parentId")
    stamp = entry.get("timestamp")
    target = entry.get("targetId") if kind in ("label", "leaf") else None
    return (
        entry.get("id"),
        kind,
        parent if isinstance(parent, str) else None,
        stamp if isinstance(stamp, str) else None,
        target if isinstance(target, str) else None,
    )


def disagreements(row: Row, entry: Entry) -> list[str]:
    """The key columns of ``row`` that do not say what its line says (empty when they agree)."""
    entry_id, kind, parent, stamp, target = envelope_of(entry)
    out = []
    if not isinstance(kind, str) or not isinstance(entry_id, str) or kind == "session":
        return ["the line is not a session entry (it needs a string 'type' other than 'session' and an 'id')"]
    for name, column, body in (
        ("id", row.id, entry_id),
        ("type", row.type, kind),
        ("parent_id", row.parent_id, parent),
        ("timestamp", row.timestamp, stamp),
        ("target_id", row.target_id, target),
    ):
        if column != body:
            out.append(f"its {name} column is {column!r} but its line says {body!r}")
    return out


def entry_of(row: Row, line: bytes, where: str) -> Entry:
    """The entry of ``row`` from its line, checked against the row's key columns."""
    try:
        entry = decode_line(line, "")
    except Damage as exc:
        raise Damage(f"{where}: row {row.seq} (entry {row.id!r}){exc}", in_lines=True) from None
    kind = entry.get("type")
    parent = entry.get("parentId")
    stamp = entry.get("timestamp")
    if (
        entry.get("id") == row.id
        and kind == row.type
        and kind != "session"
        and (parent if type(parent) is str else None) == row.parent_id
        and (stamp if type(stamp) is str else None) == row.timestamp
        and (row.target_id is None if kind not in ("label", "leaf") else row.target_id == _target(entry))
    ):
        return entry
    what = f"{where}: row {row.seq} (entry {row.id!r})"
    wrong = disagreements(row, entry)
    only_target = all(w.startswith("its target_id") for w in wrong)
    raise Damage(f"{what}: {'; '.join(wrong)}", seq=row.seq, entry_id=row.id, in_lines=not only_target)


def _target(entry: Entry) -> str | None:
    target = entry.get("targetId")
    return target if isinstance(target, str) else None


def check_path(rows: Sequence[Row], stop_depth: int, where: str, *, joined_at: int | None = None) -> None:
    """That ``rows`` (root side first, as a walk returned them) is a path: each row's parent pointer names the
    row before it (an earlier row, one level up, with the id the child's ``parent_id`` names), and the first
    row is where the walk had to stop: the row ``joined_at``, or a row at ``stop_depth`` (a root for 0)."""
    if not rows:
        raise Damage(f"{where}: a walk up the tree found no rows")
    first = rows[0]
    if joined_at is None or first.seq != joined_at:
        if first.depth != stop_depth:
            raise Damage(
                f"{where}: row {first.seq} (entry {first.id!r}): the walk up the tree ended at depth "
                f"{first.depth}, not {stop_depth} (a parent pointer names a row that is not there)",
                seq=first.seq,
                entry_id=first.id,
            )
        if stop_depth == 0 and (first.parent_id is not None or first.parent_seq is not None):
            raise Damage(
                f"{where}: row {first.seq} (entry {first.id!r}) is at depth 0 but has a parent",
                seq=first.seq,
                entry_id=first.id,
            )
    own = first.seq if first.type == "compaction" else None
    if (own is not None or first.depth == 0) and first.compaction_seq != own:
        raise Damage(
            f"{where}: row {first.seq} (entry {first.id!r}): its compaction_seq is {first.compaction_seq}, "
            f"not {own}",
            seq=first.seq,
            entry_id=first.id,
        )
    for parent, row in pairwise(rows):
        if (
            row.parent_seq != parent.seq
            or row.parent_id != parent.id
            or row.depth != parent.depth + 1
            or parent.seq >= row.seq
        ):
            raise Damage(
                f"{where}: row {row.seq} (entry {row.id!r}): its parent pointers (parent_id "
                f"{row.parent_id!r}, parent_seq {row.parent_seq}, depth {row.depth}) do not lead to row "
                f"{parent.seq} (entry {parent.id!r}, depth {parent.depth}) above it",
                seq=row.seq,
                entry_id=row.id,
            )
        expected = row.seq if row.type == "compaction" else parent.compaction_seq
        if row.compaction_seq != expected:
            raise Damage(
                f"{where}: row {row.seq} (entry {row.id!r}): its compaction_seq is {row.compaction_seq}, "
                f"not {expected}",
                seq=row.seq,
                entry_id=row.id,
            )


SETTINGS = ("model", "thinking", "tools")


def check_settings(rows: Sequence[Row], entries: Sequence[Entry], where: str, kind_of: Any) -> None:
    """That each row's settings pointers (``model_seq``, ``thinking_seq``, ``tools_seq``) follow from its
    parent's and its own entry (``kind_of(entry)``: ``settings_kind``). The first row's pointers above it
    are checked by ``check_setting_row`` on the rows they name; a root has none."""
    for i, row in enumerate(rows):
        own = kind_of(entries[i])
        for kind in SETTINGS:
            got = row.setting(kind)
            if own == kind:
                ok = got == row.seq
            elif i:
                ok = got == rows[i - 1].setting(kind)
            else:
                ok = got is None if row.depth == 0 else got is None or got < row.seq
            if not ok:
                raise Damage(
                    f"{where}: row {row.seq} (entry {row.id!r}): its {kind}_seq ({got}) does not follow "
                    "from its parent's and its own entry",
                    seq=row.seq,
                    entry_id=row.id,
                )


def check_setting_row(row: Row, entry: Entry, kind: str, below: int, where: str, kind_of: Any) -> None:
    """That the row a settings pointer names (from a row with ``seq`` ``below``) sets that setting."""
    if kind_of(entry) != kind or row.setting(kind) != row.seq or row.seq >= below:
        raise Damage(
            f"{where}: row {below}: its {kind}_seq names row {row.seq} (entry {row.id!r}), which does not "
            f"set the {kind} above it",
            seq=below,
        )
