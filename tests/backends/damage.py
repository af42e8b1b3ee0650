"""Rows of a SQL store damaged behind sessiontree's back, with the plain driver (``sqlite3``, ``psycopg``), the way
a hostile operator or a buggy migration script would: lines, key columns, pointer columns, the session row,
the schema version. Used by the damage tests and the SQL mutation fuzzer.

Each damage is a function ``(plain, session_id, rng) -> bool`` (``False`` when it found nothing to change);
``SQLITE_ONLY`` are those that store a value of another type, which PostgreSQL's typed columns refuse.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessiontree import SessionManager


class Plain:
    """A plain connection to the database of a store URL (every statement committed at once)."""

    def __init__(self, url: str) -> None:
        self.sqlite = url.startswith("sqlite:")
        if self.sqlite:
            self._db: Any = sqlite3.connect(url.split("///", 1)[1].split("?", 1)[0], isolation_level=None)
        else:
            import psycopg

            self._db = psycopg.connect(url.split("?", 1)[0], autocommit=True)

    def _sql(self, sql: str) -> str:
        return sql if self.sqlite else sql.replace("?", "%s")

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._db.execute(self._sql(sql), params)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._db.execute(self._sql(sql), params).fetchall()]

    def seqs(self, sid: str) -> list[int]:
        return [
            r[0] for r in self.query("SELECT seq FROM st_entries WHERE session_id = ? ORDER BY seq", (sid,))
        ]

    def line(self, sid: str, seq: int) -> bytes:
        value = self.query("SELECT line FROM st_entries WHERE session_id = ? AND seq = ?", (sid, seq))[0][0]
        return value.encode() if isinstance(value, str) else bytes(value)

    def set_line(self, sid: str, seq: int, line: bytes) -> None:
        self.execute("UPDATE st_entries SET line = ? WHERE session_id = ? AND seq = ?", (line, sid, seq))

    def set_column(self, sid: str, seq: int, column: str, value: Any) -> None:
        self.execute(
            f"UPDATE st_entries SET {column} = ? WHERE session_id = ? AND seq = ?", (value, sid, seq)
        )

    def table(self, name: str) -> list[tuple[Any, ...]]:
        """Every row of a table, in a stable order (to see that a read changed nothing); ``[("gone",)]``
        for a table that is not there."""
        try:
            rows = self.query(f"SELECT * FROM {name}")
        except Exception:  # sqlite3.OperationalError, psycopg.errors.UndefinedTable
            if not self.sqlite:
                self._db.rollback()
            return [("gone",)]
        return sorted(tuple(map(_digest, r)) for r in rows)

    def close(self) -> None:
        self._db.close()


def _digest(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "b:" + hashlib.sha256(value).hexdigest()
    return f"{type(value).__name__}:{value!r}"


def as_file(plain: Plain, sid: str, path: Path) -> Path:
    """The session as the file ``copy`` would write: its stored header block and lines, byte for byte."""
    header = plain.query("SELECT header FROM st_sessions WHERE id = ?", (sid,))[0][0]
    lines = [
        r[0].encode() if isinstance(r[0], str) else bytes(r[0])
        for r in plain.query("SELECT line FROM st_entries WHERE session_id = ? ORDER BY seq", (sid,))
    ]
    block = header.encode() if isinstance(header, str) else bytes(header)
    path.write_bytes(b"".join([block, b"\n", *(line + b"\n" for line in lines)]))
    return path


def shape(manager: SessionManager) -> dict[str, Any]:
    """What the reads of a session give: the branch, the context and the tree (ids, nesting, messages)."""

    def nodes(roots: list[Any]) -> list[Any]:
        out: list[Any] = []
        stack = [(r, out) for r in reversed(roots)]
        while stack:
            node, into = stack.pop()
            kids: list[Any] = []
            into.append((node.id, kids))
            stack.extend((c, kids) for c in reversed(node.children))
        return out

    context = manager.build_session_context()
    return {
        "leaf": manager.get_leaf_id(),
        "branch": [e.get("id") for e in manager.get_branch()],
        "messages": context.messages,
        "model": context.model,
        "thinking": context.thinking_level,
        "entries": [e.get("id") for e in manager.get_entries()],
        "tree": nodes(manager.get_tree()),
    }


def read_all(url: str, sid: str) -> tuple[SessionManager, dict[str, Any]]:
    """Open the session read-only and do every read of it: its shape, every entry's children and context,
    the labels, and the listing of the store."""
    from sessiontree import open_repo

    repo = open_repo(url)
    manager = repo.open(sid, read_only=True)
    got = shape(manager)
    for entry in manager.get_entries():
        manager.get_children(str(entry["id"]))
        manager.build_session_context(str(entry["id"]))
    manager.get_labels()
    repo.list()
    return manager, got


def read_into(url: str, sid: str, out: str) -> None:
    """``read_all`` in a worker process (a read that never ends cannot hold up the test): writes the
    problems' kinds and the shape to ``out`` as JSON."""
    manager, got = read_all(url, sid)
    problems = [p.kind for p in manager.problems if not p.is_note]
    Path(out).write_text(json.dumps({"problems": problems, "shape": got}))


Damage = Callable[[Plain, str, random.Random], bool]


def _pick(plain: Plain, sid: str, rng: random.Random) -> int | None:
    seqs = plain.seqs(sid)
    return rng.choice(seqs) if seqs else None


def _line_damage(make: Callable[[bytes, random.Random], bytes]) -> Damage:
    def damage(plain: Plain, sid: str, rng: random.Random) -> bool:
        seq = _pick(plain, sid, rng)
        if seq is None:
            return False
        plain.set_line(sid, seq, make(plain.line(sid, seq), rng))
        return True

    return damage


def _column(column: str, values: Callable[[Plain, str, random.Random], Any]) -> Damage:
    def damage(plain: Plain, sid: str, rng: random.Random) -> bool:
        seq = _pick(plain, sid, rng)
        if seq is None:
            return False
        plain.set_column(sid, seq, column, values(plain, sid, rng))
        return True

    return damage


def _other_seq(plain: Plain, sid: str, rng: random.Random) -> int | None:
    seqs = plain.seqs(sid)
    return rng.choice([*seqs, max(seqs, default=0) + 5, -1, None])


def _other_id(plain: Plain, sid: str, rng: random.Random) -> str | None:
    ids = [r[0] for r in plain.query("SELECT id FROM st_entries WHERE session_id = ? ORDER BY seq", (sid,))]
    return rng.choice([*ids, "nowhere", None])


def _some_id(plain: Plain, sid: str, rng: random.Random) -> str:
    return _other_id(plain, sid, rng) or "nowhere"


def _cycle(plain: Plain, sid: str, rng: random.Random) -> bool:
    """A row's parent pointer names itself or a row below it: a walk that follows it goes round for ever."""
    seqs = plain.seqs(sid)
    if not seqs:
        return False
    a = rng.choice(seqs)
    b = rng.choice([s for s in seqs if s >= a])
    plain.set_column(sid, a, "parent_seq", b)
    if rng.random() < 0.5:  # depths that keep the walk going
        plain.execute(
            "UPDATE st_entries SET depth = depth + 1000 WHERE session_id = ? AND seq >= ?", (sid, a)
        )
    return True


def _delete_row(plain: Plain, sid: str, rng: random.Random) -> bool:
    seq = _pick(plain, sid, rng)
    if seq is None:
        return False
    plain.execute("DELETE FROM st_entries WHERE session_id = ? AND seq = ?", (sid, seq))
    return True


def duplicate_id(plain: Plain, sid: str, rng: random.Random, pair: tuple[int, int] | None = None) -> bool:
    """One row takes another's id, in its column and its line (as an imported file with duplicates); ``pair``:
    the positions (in ``seq`` order) of the row whose id is taken and of the row that takes it."""
    rows = plain.query("SELECT seq, id FROM st_entries WHERE session_id = ? ORDER BY seq", (sid,))
    if len(rows) < 2:
        return False
    (_, a_id), (b, b_id) = rng.sample(rows, 2) if pair is None else (rows[pair[0]], rows[pair[1]])
    plain.set_column(sid, b, "id", a_id)
    plain.set_line(
        sid, b, plain.line(sid, b).replace(f'"id":"{b_id}"'.encode(), f'"id":"{a_id}"'.encode(), 1)
    )
    return True


def _body_parent(plain: Plain, sid: str, rng: random.Random) -> bool:
    """A line names another parent than its row's columns (the columns left as they were)."""
    seq = _pick(plain, sid, rng)
    other = _other_id(plain, sid, rng)
    if seq is None:
        return False
    line = plain.line(sid, seq)
    start = line.find(b'"parentId":')
    if start < 0:
        return False
    end = line.find(b",", start)
    value = b"null" if other is None else f'"{other}"'.encode()
    plain.set_line(sid, seq, line[:start] + b'"parentId":' + value + line[end:])
    return True


def _nested(depth: int) -> Callable[[bytes, random.Random], bytes]:
    def make(line: bytes, rng: random.Random) -> bytes:
        value = b"[" * depth + b"1" + b"]" * depth
        return line[:-1] + b',"deep":' + value + b"}" if line.endswith(b"}") else line

    return make


def _deep_role(line: bytes, rng: random.Random) -> bytes:
    """A message's role nested ~1,000 levels deep (JSON that parses: under the 1,024 limit)."""
    value = b'{"k":' * 1000 + b'"user"' + b"}" * 1000
    return line.replace(b'"role":"user"', b'"role":' + value, 1).replace(
        b'"role":"assistant"', b'"role":' + value, 1
    )


def huge_line(size: int) -> Callable[[bytes, random.Random], bytes]:
    def make(line: bytes, rng: random.Random) -> bytes:
        return line[:-1] + b',"huge":"' + b"x" * size + b'"}' if line.endswith(b"}") else line

    return make


def _header(value: bytes) -> Damage:
    def damage(plain: Plain, sid: str, rng: random.Random) -> bool:
        plain.execute("UPDATE st_sessions SET header = ? WHERE id = ?", (value, sid))
        return True

    return damage


def _session_column(column: str, values: list[Any]) -> Damage:
    def damage(plain: Plain, sid: str, rng: random.Random) -> bool:
        plain.execute(f"UPDATE st_sessions SET {column} = ? WHERE id = ?", (rng.choice(values), sid))
        return True

    return damage


def _future_schema(plain: Plain, sid: str, rng: random.Random) -> bool:
    plain.execute(
        "INSERT INTO st_schema (version, description, applied_at_ms) VALUES (99, 'from the future', 0)"
    )
    return True


DAMAGES: dict[str, Damage] = {
    "bad_json": _line_damage(lambda line, rng: line[: rng.randrange(1, max(2, len(line)))]),
    "not_an_object": _line_damage(lambda line, rng: rng.choice([b"[1,2]", b"5", b"null", b'"x"'])),
    "nul_bytes": _line_damage(lambda line, rng: line.replace(b'":"', b'":"\x00', 1)),
    "line_break": _line_damage(lambda line, rng: line.replace(b",", b",\n", 1)),
    "blank_line": _line_damage(lambda line, rng: rng.choice([b"", b"  ", b"\r"])),
    "no_envelope": _line_damage(lambda line, rng: b'{"type":"message"}'),
    "deep_nesting": _line_damage(lambda line, rng: _nested(rng.choice([600, 1023, 1030, 5000]))(line, rng)),
    "deep_role": _line_damage(_deep_role),
    "big_line": _line_damage(huge_line(1 << 20)),
    "id_column": _column("id", _some_id),
    "parent_id_column": _column("parent_id", _other_id),
    "type_column": _column("type", lambda p, s, rng: rng.choice(["message", "label", "compaction", "leaf"])),
    "timestamp_column": _column("timestamp", lambda p, s, rng: rng.choice([None, "2020-01-01T00:00:00Z"])),
    "target_id_column": _column("target_id", _other_id),
    "parent_seq": _column("parent_seq", _other_seq),
    "depth": _column("depth", lambda p, s, rng: rng.choice([0, 1, 7, 10_000, -3])),
    "compaction_seq": _column("compaction_seq", _other_seq),
    "model_seq": _column("model_seq", _other_seq),
    "thinking_seq": _column("thinking_seq", _other_seq),
    "tools_seq": _column("tools_seq", _other_seq),
    "cycle": _cycle,
    "delete_row": _delete_row,
    "duplicate_id": duplicate_id,
    "body_parent": _body_parent,
    "bad_header": _header(b'{"type":"session","id":'),
    "header_not_object": _header(b"[1]"),
    "header_other_id": _header(b'{"type":"session","id":"someone-else","cwd":"/"}'),
    "header_bad_version": _header(b'{"type":"session","version":"3","id":"x"}'),
    "problems_column": _session_column("problems", ["{", "5", '[{"kind":1}]', "[1]", "null"]),
    "entry_count": _session_column("entry_count", [0, 1, 99_999]),
    "message_count": _session_column("message_count", [0, 10**9]),
    "irregular_flag": _session_column("irregular", [0, 1]),
    "name_column": _session_column("name", [None, "renamed"]),
    "future_schema": _future_schema,
    # SQLite keeps a value of any type in any column
    "line_as_text": _line_damage(lambda line, rng: line),  # replaced below for SQLite: stored as TEXT
    "text_in_integer": _column("depth", lambda p, s, rng: rng.choice(["deep", b"\x01", 1.5])),
    "text_seq": _column("seq", lambda p, s, rng: rng.choice(["x", b"\x07", 2.5])),
    "blob_id": _column("id", lambda p, s, rng: rng.choice([b"id", b"\xff"])),
    "text_count": _session_column("message_count", ["many", 1.5]),
    "text_header": _session_column("header", ['{"type":"session"}']),
    "schema_table_gone": lambda plain, sid, rng: (plain.execute("DROP TABLE st_schema"), True)[1],
}
SQLITE_ONLY = frozenset(
    {"line_as_text", "text_in_integer", "text_seq", "blob_id", "text_count", "text_header"}
)


def _line_as_text(plain: Plain, sid: str, rng: random.Random) -> bool:
    seq = _pick(plain, sid, rng)
    if seq is None:
        return False
    plain.execute(
        "UPDATE st_entries SET line = CAST(line AS TEXT) WHERE session_id = ? AND seq = ?", (sid, seq)
    )
    return True


DAMAGES["line_as_text"] = _line_as_text


WHOLE_STORE = frozenset({"future_schema", "schema_table_gone"})
"""Damage to the store rather than to one session."""


def damages_for(url: str, *, whole_store: bool = True) -> list[str]:
    """The damage kinds that apply to the store at ``url`` (``whole_store``: with those to the whole store)."""
    sqlite = url.startswith("sqlite:")
    return [
        name
        for name in DAMAGES
        if (sqlite or name not in SQLITE_ONLY) and (whole_store or name not in WHOLE_STORE)
    ]
