"""Schema 4: SQLite's search index keeps no copy of the text (hits are joined to their entry rows and their
snippets taken from the lines), the index of children holds branch points only, and a database at schema 3
(built and filled by schema 3's code) is upgraded in place on first use, reading the same sessions and
search results as a store the same sessions are copied into. The tree is read from the key columns."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, open_repo
from sessiontree.storage.repository import Repo
from sessiontree.storage.search import query_terms, snippet
from sessiontree.storage.sql import loaded
from sessiontree.storage.sql.schema import SCHEMA_VERSION
from sessiontree.tree.tree_index import preload_entries
from tests.backends.damage import Plain, as_file, shape
from tests.backends.old_schema import schema_at
from tests.backends.test_sql_damage import build
from tests.builders import assistant, user

QUERIES = ("parser timeout", "timeout", "story", "named", "three", "élan", "nothing-matches-this")


def _fill(repo: Repo[SessionManager]) -> list[str]:
    """Three sessions: the damage tests' (branches, a compaction, a label), one with words to search, and
    one with a name; their ids."""
    ids = [build(repo)]
    m = repo.create("/work/other")
    m.append_message(user("the parser hit a timeout"))
    m.append_message(assistant("raise the timeout of the parser"))
    m.append_message(user("Élan and elan, accents folded"))
    ids.append(m.get_session_id())
    m.close()
    m = repo.create("/work/other")
    m.append_message(user("a timeout in a named session"))
    m.append_session_info("named one")
    ids.append(m.get_session_id())
    m.close()
    return ids


def _search(repo: Repo[SessionManager], query: str) -> list[tuple[Any, ...]]:
    return [(h.session_id, h.entry_id, h.snippet, h.session_name) for h in repo.search(query)]


def _v3_sqlite_search(url: str, query: str, limit: int = 20) -> list[tuple[Any, ...]]:
    """Schema 3's SQLite search, as ``SqlRepo.search`` ran it: the text, session and entry id from the index."""
    terms = query_terms(query)
    match = " ".join('"' + t.replace('"', '""') + '"' for t in terms)
    db = sqlite3.connect(url.split("///", 1)[1])
    try:
        rows = db.execute(
            "SELECT t.session_id, t.entry_id, t.text, s.name FROM st_entry_text t "
            "JOIN st_sessions s ON s.id = t.session_id WHERE st_entry_text MATCH ? ORDER BY rank LIMIT ?",
            (match, limit),
        ).fetchall()
    finally:
        db.close()
    return [(sid, eid, snippet(body, terms), name) for sid, eid, body, name in rows]


def _shapes(repo: Repo[SessionManager], ids: list[str]) -> list[Any]:
    out = []
    for sid in ids:
        manager = repo.open(sid, read_only=True)
        out.append(shape(manager))
        manager.close()
    return out


def _copy(source: Repo[SessionManager], target: Repo[SessionManager], ids: list[str]) -> None:
    for sid in ids:
        block, lines = source.export(sid)
        target.import_session(block, [line.rstrip(b"\n") for line in lines])


def test_a_schema_3_database_is_upgraded_in_place_and_reads_the_same(sql_url: str, tmp_path: Path) -> None:
    sqlite = sql_url.startswith("sqlite:")
    with schema_at(3), open_repo(sql_url) as old:
        ids = _fill(old)
        before = _shapes(old, ids)
        # what schema 3's search found (its SQLite query is no longer sessiontree's: run here as it was)
        found_before = {q: (_v3_sqlite_search(sql_url, q) if sqlite else _search(old, q)) for q in QUERIES}
        assert old.schema_version() == 3
    with open_repo(sql_url) as repo:
        hits = {q: _search(repo, q) for q in QUERIES}  # the first use upgrades the database
        assert repo.schema_version() == SCHEMA_VERSION >= 4
        assert _shapes(repo, ids) == before
        if sqlite:  # and a store the same sessions are copied into finds the same
            with open_repo(f"sqlite:///{tmp_path}/copy.db") as fresh:
                _copy(repo, fresh, ids)
                assert {q: _search(fresh, q) for q in QUERIES} == hits
    assert hits == found_before
    assert [h[0] for h in hits["parser timeout"]] == [ids[1], ids[1]]
    assert "timeout" in hits["parser timeout"][0][2] and hits["nothing-matches-this"] == []
    assert {h[0] for h in hits["élan"]} == {ids[1]}  # diacritics folded, as before
    assert {h[3] for h in hits["named"]} == {"named one"}


def test_search_after_the_upgrade_follows_new_writes_and_deletes(sql_url: str) -> None:
    with schema_at(3), open_repo(sql_url) as old:
        ids = _fill(old)
    with open_repo(sql_url) as repo:
        assert {h[0] for h in _search(repo, "timeout")} == {ids[1], ids[2]}
        repo.delete(ids[1])
        assert {h[0] for h in _search(repo, "timeout")} == {ids[2]}
        m = repo.create("/work/new")
        m.append_message(user("a timeout after the upgrade"))
        new = m.get_session_id()
        m.close()
        got = _search(repo, "timeout")
        assert {h[0] for h in got} == {ids[2], new}
        assert any("after the upgrade" in h[2] for h in got)
        repo.delete(new)
        repo.delete(ids[2])
        assert _search(repo, "timeout") == []
    if sql_url.startswith("sqlite:"):
        db = sqlite3.connect(sql_url.split("///", 1)[1])
        try:
            # the words of deleted sessions left the index, and the text is kept nowhere in it
            assert db.execute(
                "SELECT COUNT(*) FROM st_entry_text WHERE st_entry_text MATCH 'timeout'"
            ).fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM st_entry_text WHERE text IS NOT NULL").fetchone() == (0,)
            numbers = [r[0] for r in db.execute("SELECT num FROM st_search_keys ORDER BY num")]
            assert numbers == [1]  # the session left; the one made after the upgrade had number 4, and the
            # numbers of deleted sessions are not given again
            assert db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'st_search_keys'").fetchone() == (
                4,
            )
        finally:
            db.close()


def test_the_index_of_children_keeps_branch_points_only(sql_url: str) -> None:
    with open_repo(sql_url) as repo:
        sid = build(repo)
        manager = repo.open(sid, read_only=True)
        file_children = {
            str(e["id"]): [c["id"] for c in manager.get_children(str(e["id"]))] for e in manager.get_entries()
        }
        manager.close()
    plain = Plain(sql_url)
    try:
        (branch_rows,) = plain.query(
            "SELECT COUNT(*) FROM st_entries WHERE session_id = ? AND (parent_seq IS NULL OR parent_seq <> seq - 1)",
            (sid,),
        )[0]
        assert branch_rows < len(file_children) // 2
        with open_repo(sql_url) as repo:
            manager = repo.open(sid, read_only=True)
            # every child is found: the next row, or a branch point in the index
            got = {k: [c["id"] for c in manager.get_children(k)] for k in file_children}
            manager.close()
        assert got == file_children and any(len(v) > 1 for v in got.values())
        if sql_url.startswith("sqlite:"):
            assert "st_entries_parent" in _children_plan(sql_url, sid, next(iter(file_children)))
    finally:
        plain.close()


def _children_plan(url: str, sid: str, entry_id: str) -> str:
    """SQLite's plan of the query ``get_children`` runs (it searches the index, not the session's rows)."""
    from sessiontree.storage.sql.database import SqliteConn

    seen: list[tuple[str, tuple[Any, ...]]] = []
    real = SqliteConn.query

    def spy(self: Any, sql: str, params: Any = ()) -> Any:
        seen.append((sql, tuple(params)))
        return real(self, sql, params)

    with pytest.MonkeyPatch.context() as patch, open_repo(url) as repo:
        manager = repo.open(sid, read_only=True)
        patch.setattr(SqliteConn, "query", spy)
        manager.get_children(entry_id)
        manager.close()
    sql, params = next((q, p) for q, p in seen if "parent_id = ?" in q)
    db = sqlite3.connect(url.split("///", 1)[1])
    try:
        return str(db.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall())
    finally:
        db.close()


def test_get_tree_reads_no_line(sql_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with open_repo(sql_url) as repo:
        sid = build(repo)
    plain = Plain(sql_url)
    try:
        expected = shape(SessionManager.open(as_file(plain, sid, tmp_path / "f.jsonl"), read_only=True))[
            "tree"
        ]
    finally:
        plain.close()

    def no_lines(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the tree read every line")

    with open_repo(sql_url) as repo:
        manager = repo.open(sid, read_only=True)
        monkeypatch.setattr(loaded.LoadedSession, "__init__", no_lines)
        roots = manager.get_tree()
        assert _nodes(roots) == expected
        preload_entries(roots)  # the entries, fetched by seq and checked against their rows
        assert roots[0].entry["id"] == roots[0].id
        assert manager.problems == []
        manager.close()


def test_a_key_column_the_tree_used_is_checked_when_its_entry_is_read(sql_url: str, tmp_path: Path) -> None:
    with open_repo(sql_url) as repo:
        sid = build(repo)
    plain = Plain(sql_url)
    try:
        plain.set_column(sid, 10, "timestamp", "1999-01-01T00:00:00.000Z")
        expected = shape(SessionManager.open(as_file(plain, sid, tmp_path / "f.jsonl"), read_only=True))[
            "tree"
        ]
        with open_repo(sql_url) as repo:
            manager = repo.open(sid, read_only=True)
            roots = manager.get_tree()
            preload_entries(roots)
            assert "bad_row" in [p.kind for p in manager.problems]
            assert _nodes(manager.get_tree()) == expected  # from the lines from then on
            manager.close()
    finally:
        plain.close()


def _nodes(roots: list[Any]) -> list[Any]:
    out: list[Any] = []
    stack = [(r, out) for r in reversed(roots)]
    while stack:
        node, into = stack.pop()
        kids: list[Any] = []
        into.append((node.id, kids))
        stack.extend((c, kids) for c in reversed(node.children))
    return out


def test_a_tree_read_after_another_writer_appended_is_no_damage(sql_url: str) -> None:
    with open_repo(sql_url) as repo:
        sid = build(repo)
        reader = repo.open(sid, read_only=True)
        writer = repo.open(sid)
        added = writer.append_message(user("appended meanwhile"))
        writer.close()
        ids: list[str] = []
        stack = list(reader.get_tree())
        while stack:
            node = stack.pop()
            ids.append(node.id)
            stack.extend(node.children)
        assert added in ids  # the rows stored when the tree is read, as a read of the lines gives
        assert reader.problems == []
        assert not reader.index._irregular  # the next reads still follow the pointers
        reader.close()
