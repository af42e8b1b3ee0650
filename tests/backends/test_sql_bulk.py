"""Copying a file into a SQL store in batches, and what the store keeps: an import writes its rows with a few
batched statements in one transaction (not three statements per entry), the rows are the ones single appends
write, and schema version 3 keeps only label and name entries in the type index (upgrading older databases).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, open_repo
from sessiontree.format import pi_json as _json
from sessiontree.session.copying import read_source
from sessiontree.storage.sql.conn import Conn
from sessiontree.storage.sql.database import Database
from sessiontree.storage.sql.schema import SCHEMA_VERSION
from sessiontree.storage.sql.session import SqlSession
from tests.backends.old_schema import schema_at
from tests.builders import assistant, user

COLUMNS = (
    "seq, id, parent_id, type, timestamp, line, parent_seq, depth, compaction_seq, model_seq, thinking_seq, "
    "tools_seq, target_id"
)
SESSION_COLUMNS = "entry_count, name, message_count, first_message, modified_ms, irregular"


def _source(tmp_path: Path, *, damaged: bool) -> Path:
    """A pi file with branches, settings changes, a compaction, labels and a name (and, when ``damaged``, a
    duplicate id and a dangling parent: an irregular session)."""
    manager = SessionManager.create("/work/project", tmp_path / "sessions")
    first = manager.append_message(user("first"))
    manager.append_model_change("anthropic", "claude-test")
    manager.append_thinking_level_change("high")
    for k in range(40):
        manager.append_message(user(f"question {k}"))
        manager.append_message(assistant(f"answer {k}"))
    manager.append_active_tools_change(["read", "bash"])
    kept = manager.append_message(user("kept"))
    manager.append_compaction("summary of the start", kept, 1234)
    manager.append_label_change(first, "start")
    manager.branch(kept)
    manager.append_message(user("on a branch"))
    manager.append_session_info("bulk test")
    path = Path(str(manager.get_session_file()))
    manager.close()
    if damaged:
        lines = path.read_bytes().splitlines(keepends=True)
        twin = _json.loads(lines[3])
        twin["parentId"] = "not-there"
        again = _json.loads(lines[5])  # a second entry with the id of an earlier one
        again["parentId"] = _json.loads(lines[-1])["id"]
        path.write_bytes(
            b"".join([*lines, _json.dumps_bytes(twin) + b"\n", _json.dumps_bytes(again) + b"\n"])
        )
    return path


def _dump(url: str, sid: str) -> tuple[list[tuple[Any, ...]], tuple[Any, ...], list[tuple[Any, ...]]]:
    """Entry rows, the session row and the search rows of ``sid``, read with the plain driver."""
    entries = f"SELECT {COLUMNS} FROM st_entries WHERE session_id = ? ORDER BY seq"
    session = f"SELECT {SESSION_COLUMNS} FROM st_sessions WHERE id = ?"
    texts = "SELECT entry_id, text FROM st_entry_text WHERE session_id = ? ORDER BY entry_id, text"
    if url.startswith("sqlite:"):
        # SQLite's search index keeps no text: which rows it holds (its rowids: the session's number, seq)
        texts = (
            "SELECT t.rowid & 4294967295 FROM st_entry_text t JOIN st_search_keys k ON k.num = t.rowid >> 32 "
            "WHERE k.session_id = ? ORDER BY 1"
        )
        db = sqlite3.connect(url.split("///", 1)[1])
        try:
            return (
                [tuple(r) for r in db.execute(entries, (sid,))],
                tuple(db.execute(session, (sid,)).fetchone()),
                [tuple(r) for r in db.execute(texts, (sid,))],
            )
        finally:
            db.close()
    import psycopg

    with psycopg.connect(url) as conn:
        return (
            [(*r[:5], bytes(r[5]), *r[6:]) for r in conn.execute(entries.replace("?", "%s"), (sid,))],
            tuple(conn.execute(session.replace("?", "%s"), (sid,)).fetchone() or ()),
            [tuple(r) for r in conn.execute(texts.replace("?", "%s"), (sid,))],
        )


@pytest.mark.parametrize("damaged", [False, True], ids=["regular", "irregular"])
def test_a_batched_import_stores_what_single_appends_store(
    sql_url: str, tmp_path: Path, damaged: bool
) -> None:
    source = read_source(str(_source(tmp_path, damaged=damaged)))
    lines = list(source.lines)
    with open_repo(sql_url) as repo:
        batched = repo.import_session(source.header_block, lines)
        header = dict(_json.loads(source.header_block))
        header["id"] = f"{batched[:-4]}beef"
        one_by_one = SqlSession.new(repo.db, header)  # type: ignore[attr-defined]
        try:
            with one_by_one.transaction():
                for line in lines:
                    one_by_one.append_line(_json.loads(line), line)
        finally:
            one_by_one.close()
        opened = repo.open(batched, read_only=True)
        kinds = {p.kind for p in opened.problems if not p.is_note}
        assert kinds == ({"dangling_parent", "duplicate_id", "cycle"} if damaged else set())
        opened.close()
    rows, session, texts = _dump(sql_url, batched)
    assert len(rows) == len(lines)
    assert session[5] == (1 if damaged else 0)
    assert (rows, session, texts) == _dump(sql_url, header["id"])


def test_an_import_writes_in_a_few_batched_statements(
    sql_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not three statements per entry (row, search text, a duplicate-id query): batches of rows."""
    source = read_source(str(_source(tmp_path, damaged=False)))
    lines = list(source.lines)
    calls: list[str] = []
    for name in ("execute", "query", "executemany", "copy_rows"):
        for cls in {type(Database(sql_url).connect()), *Conn.__subclasses__()}:
            real = getattr(cls, name)

            def counting(self: Any, sql: str, *args: Any, _real: Any = real, _name: str = name) -> Any:
                calls.append(_name)
                return _real(self, sql, *args)

            monkeypatch.setattr(cls, name, counting)
    with open_repo(sql_url) as repo:
        repo.setup()
        calls.clear()
        repo.import_session(source.header_block, lines)
    assert len(lines) > 80
    assert len(calls) < 30, calls


def test_the_type_index_keeps_labels_and_names_only_and_old_databases_are_upgraded(sql_url: str) -> None:
    """Schema 3: the (session, type, seq) index holds label and session_info entries only (what reads
    search it for); a database at version 2 is upgraded on first use and its labels still read."""
    with schema_at(2), open_repo(sql_url) as repo:  # as sessiontree at schema 2 built and wrote it
        manager = repo.create("/work/project")
        first = manager.append_message(user("first"))
        manager.append_label_change(first, "start")
        manager.append_session_info("named")
        sid = manager.get_session_id()
        manager.close()
    assert "WHERE" not in _index_definition(sql_url)
    with open_repo(sql_url) as repo:
        again = repo.open(sid, read_only=True)
        assert again.get_label(first) == "start" and again.get_session_name() == "named"
        again.close()
        assert repo.schema_version() == SCHEMA_VERSION
    definition = _index_definition(sql_url)
    assert "WHERE" in definition and "label" in definition and "session_info" in definition
    if sql_url.startswith("sqlite:"):
        db = sqlite3.connect(sql_url.split("///", 1)[1])
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM st_entries WHERE session_id = ? AND type = 'label'", (sid,)
        ).fetchall()
        db.close()
        assert "st_entries_type" in str(plan)


def test_sqlite_reads_do_not_map_the_file(tmp_path: Path) -> None:
    """A mapped file turns an I/O error or a truncation under a reader into SIGBUS: reads copy pages in."""
    conn: Any = Database(f"sqlite:///{tmp_path}/s.db").connect()
    try:
        assert conn.query_one("PRAGMA mmap_size") == (0,)
    finally:
        conn.close()


def _index_definition(url: str) -> str:
    if url.startswith("sqlite:"):
        db = sqlite3.connect(url.split("///", 1)[1])
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'st_entries_type'").fetchone()
        db.close()
        return str(sql)
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'st_entries_type'").fetchone()
    return str(row[0]) if row else ""


def test_the_session_columns_are_gathered_without_keeping_every_messages_text() -> None:
    """What the SQL stores keep of a session (counts, first user message, name, last activity) is the same
    when the builder keeps no texts, which the search table takes from the lines instead."""
    from sessiontree.storage.session_dirs import SessionInfoBuilder

    entries: list[Any] = [
        {"type": "message", "message": {"role": "assistant", "content": "hello first", "timestamp": 5}},
        {"type": "message", "message": {"role": "user", "content": [], "timestamp": 7}},
        {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "the ask"}]}},
        {"type": "session_info", "name": "  named  "},
        {
            "type": "message",
            "message": {"role": "user", "content": "later"},
            "timestamp": "2025-01-01T00:00:00Z",
        },
        {"type": "message", "message": "not a dict"},
        [1, 2],
    ]
    full, lean = SessionInfoBuilder(), SessionInfoBuilder(keep_texts=False)
    for entry in entries:
        full.add(entry)
        lean.add(entry)
    got = (lean.message_count, lean.first_message, lean.name, lean.last_activity)
    assert got == (full.message_count, full.first_message, full.name, full.last_activity)
    assert got[1] == "the ask" and full.texts and lean.texts == []
