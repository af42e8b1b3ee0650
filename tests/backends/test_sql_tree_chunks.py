"""SQLite's tree chunks (schema 5, ``tree_chunks.py``), with chunks of a few rows so that small sessions have
many: the tree read from them is the tree the session's file gives, on many shapes and however the rows were
written; a damaged chunk is reported and the tree read from the lines is the same; ``check`` finds a chunk
that disagrees with its rows; a schema 4 database is upgraded in place and its sessions get their chunks."""

from __future__ import annotations

import random
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, open_repo
from sessiontree.errors import SessionLockedError
from sessiontree.format.pi_json import dumps_bytes
from sessiontree.storage.sql import repository, schema, session, tree_chunks
from sessiontree.storage.sql.tree_rows import ColumnTree
from tests.backends.conftest import with_options
from tests.backends.damage import Plain, as_file, shape
from tests.backends.sql_workers import stored
from tests.backends.test_pg_autocommit import _LONG_LEASE, _count, _take_over
from tests.backends.test_sql_damage import build
from tests.builders import assistant, user
from tests.conftest import require_conformance
from tests.property import fuzz_sql
from tests.property.fuzz_store import default_seed
from tests.property.test_store_fuzz import FUZZ_RUNS

CHUNK = 4


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_chunks, "CHUNK_ROWS", CHUNK)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each SQL back end (both keep tree chunks: SQLite since schema 5, PostgreSQL since 6)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return str(request.getfixturevalue("postgres_url"))


def _tree(manager: SessionManager) -> list[Any]:
    """Every node as (id, label, label time, child ids), depth first."""
    out = []
    stack = list(reversed(manager.get_tree()))
    while stack:
        node = stack.pop()
        out.append((node.id, node.label, node.label_timestamp, [c.id for c in node.children]))
        stack.extend(reversed(node.children))
    return out


def _file_tree(plain: Plain, sid: str, tmp_path: Path) -> list[Any]:
    manager = SessionManager.open(as_file(plain, sid, tmp_path / "as-file.jsonl"), read_only=True)
    try:
        return _tree(manager)
    finally:
        manager.close()


def _read(url: str, sid: str) -> tuple[list[Any], list[Any]]:
    with open_repo(url) as repo:
        manager = repo.open(sid, read_only=True)
        try:
            return _tree(manager), manager.problems
        finally:
            manager.close()


def _chunks(plain: Plain, sid: str) -> list[tuple[Any, ...]]:
    return plain.query("SELECT chunk, first_seq, row_count FROM st_tree_chunks WHERE session_id = ?", (sid,))


def _random_lines(rng: random.Random, n: int) -> list[bytes]:
    """A regular session of ``n`` entries: parents anywhere before (or none), timestamps that tie, go back
    or are missing, labels, several types."""
    lines: list[bytes] = []
    ids: list[str] = []
    for i in range(n):
        entry_id = f"{i:04x}{rng.randrange(1 << 16):04x}"
        roll = rng.random()
        parent = None if not ids or roll < 0.05 else ids[-1] if roll < 0.75 else rng.choice(ids)
        entry: dict[str, Any] = {"type": "message", "id": entry_id, "parentId": parent}
        if rng.random() < 0.9:
            entry["timestamp"] = f"2025-01-01T00:00:{rng.randrange(6):02d}.000Z"
        if ids and rng.random() < 0.1:
            entry.update(type="label", targetId=rng.choice(ids), label=f"l{i}")
        elif rng.random() < 0.1:
            entry.update(type="custom", customType=f"kind{rng.randrange(3)}")
        else:
            entry["message"] = {"role": "user", "content": f"m{i}", "timestamp": i}
        ids.append(entry_id)
        lines.append(dumps_bytes(entry))
    return lines


HEADER = b'{"type":"session","version":3,"id":"%s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 8, 9, 23, 64])
def test_the_chunked_tree_is_the_files_on_many_shapes(url: str, tmp_path: Path, n: int) -> None:
    rng = random.Random(n)
    with open_repo(url) as repo:
        sids = []
        for k in range(4):
            sid = f"0197e89e-a300-7226-a91b-cd61d8f1{n:02x}{k:02x}"
            repo.import_session(HEADER % sid.encode(), _random_lines(rng, n))
            sids.append(sid)
    plain = Plain(url)
    try:
        for sid in sids:
            assert len(_chunks(plain, sid)) == n // CHUNK
            tree, problems = _read(url, sid)
            assert tree == _file_tree(plain, sid, tmp_path)
            assert problems == []
    finally:
        plain.close()


def test_chunks_written_one_append_at_a_time_and_by_a_writer_that_reopened(url: str, tmp_path: Path) -> None:
    with open_repo(url) as repo:
        sid = build(repo)  # 11 entries, one transaction each, a branch and a label
        manager = repo.open(sid)
        for k in range(6):  # a writer that began after the chunk did: it reads the chunk's rows
            manager.append_message(user(f"more {k}") if k % 2 else assistant(f"more {k}"))
        manager.close()
    plain = Plain(url)
    try:
        assert [c[0] for c in _chunks(plain, sid)] == [0, 1, 2, 3]
        tree, problems = _read(url, sid)
        assert tree == _file_tree(plain, sid, tmp_path) and problems == []
        with open_repo(url) as repo:
            assert repo.check(sid) == []
    finally:
        plain.close()


def test_the_tree_reads_chunks_and_no_key_column_of_their_rows(url: str, tmp_path: Path) -> None:
    """A chunk is what the tree is read from: a parent id changed in a chunked row's column alone does not
    move a node (that row's line still says where it is; ``check`` reports the column)."""
    with open_repo(url) as repo:
        sid = build(repo)
    plain = Plain(url)
    try:
        before = _read(url, sid)[0]
        plain.execute("UPDATE st_entries SET timestamp = 'x' WHERE session_id = ? AND seq = 2", (sid,))
        plain.execute("UPDATE st_entries SET type = 'custom' WHERE session_id = ? AND seq = 6", (sid,))
        with open_repo(url) as repo:
            reads = repo.open(sid, read_only=True)
            index = reads._index  # type: ignore[attr-defined]
            tree = ColumnTree(index.conn, sid, len(index), "here", lambda d: None)
            assert tree.type_at(5) == "message"  # the chunk's
            assert tree.timestamp_at(1) == "x"  # timestamps are read from the rows
            reads.close()
        assert _read(url, sid)[0] == before
    finally:
        plain.close()


def _damage_body(plain: Plain, sid: str, body: bytes, *, crc: bool) -> None:
    value = tree_chunks.checksum(sid, 1, CHUNK + 1, CHUNK, body) if crc else 7
    plain.execute(
        "UPDATE st_tree_chunks SET body = ?, checksum = ? WHERE session_id = ? AND chunk = 1",
        (body, value, sid),
    )


def _bad_parent(plain: Plain, sid: str) -> None:
    """A chunk with a valid CRC whose first row's parent is itself: caught by the decode's checks."""
    raw = zlib.decompress(
        plain.query("SELECT body FROM st_tree_chunks WHERE session_id = ? AND chunk = 1", (sid,))[0][0]
    )
    id_length, name_length, _ = tree_chunks._HEAD.unpack_from(raw)
    at = tree_chunks._HEAD.size + id_length + name_length + 2 * CHUNK
    starts = tree_chunks._ints("I", [0])
    parents = tree_chunks._ints("I", [CHUNK + 1])  # position CHUNK + 1 = the row itself
    head = tree_chunks._HEAD.pack(id_length, name_length, 1)
    _damage_body(
        plain, sid, zlib.compress(head + raw[tree_chunks._HEAD.size : at] + starts + parents), crc=True
    )


DAMAGED = {
    "checksum": lambda p, s: p.execute(
        "UPDATE st_tree_chunks SET checksum = checksum + 1 WHERE session_id = ?", (s,)
    ),
    "not_zlib": lambda p, s: _damage_body(p, s, b"not a chunk", crc=True),
    "short": lambda p, s: _damage_body(p, s, zlib.compress(b"\0" * 20), crc=True),
    "crc_of_another": lambda p, s: _damage_body(p, s, zlib.compress(b"x"), crc=False),
    "gap": lambda p, s: p.execute("DELETE FROM st_tree_chunks WHERE session_id = ? AND chunk = 0", (s,)),
    "row_count": lambda p, s: p.execute("UPDATE st_tree_chunks SET row_count = 3 WHERE session_id = ?", (s,)),
    "moved": lambda p, s: p.execute("UPDATE st_tree_chunks SET chunk = chunk + 5 WHERE session_id = ?", (s,)),
    "bad_parent": _bad_parent,
    "rows_gone": lambda p, s: p.execute("DELETE FROM st_entries WHERE session_id = ? AND seq = 8", (s,)),
    "middle_row_gone": lambda p, s: p.execute(
        "DELETE FROM st_entries WHERE session_id = ? AND seq = 6", (s,)
    ),
    "tail_parent_seq": lambda p, s: p.execute(
        "UPDATE st_entries SET parent_seq = 1 WHERE session_id = ? AND seq = 10", (s,)
    ),
}


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_a_damaged_chunk_is_reported_and_the_tree_read_from_the_lines(
    url: str, tmp_path: Path, kind: str
) -> None:
    with open_repo(url) as repo:
        sid = build(repo)
    plain = Plain(url)
    try:
        DAMAGED[kind](plain, sid)
        tree, problems = _read(url, sid)
        assert tree == _file_tree(plain, sid, tmp_path)
        assert problems, "the damage is reported"
        with open_repo(url) as repo:
            assert repo.check(sid), "check finds it too"
    finally:
        plain.close()


def test_check_finds_a_chunk_that_disagrees_with_its_rows(url: str, tmp_path: Path) -> None:
    with open_repo(url) as repo:
        sid = build(repo)
    plain = Plain(url)
    try:
        rows = [tuple(r) for r in plain.query(tree_chunks._KEYS, (sid, CHUNK + 1, 2 * CHUNK))]
        rows[3] = (rows[3][0], "someone-else", *rows[3][2:])
        body = tree_chunks.encode_chunk(rows)
        assert body is not None
        _damage_body(plain, sid, body, crc=True)  # a well-formed chunk, with another id than its row's
        with open_repo(url) as repo:
            found = [p.message for p in repo.check(sid)]
        assert any("tree chunk 1: row 8" in m and "someone-else" in m for m in found)
    finally:
        plain.close()


def test_a_database_from_before_the_chunks_is_upgraded_in_place_with_them(url: str, tmp_path: Path) -> None:
    """SQLite at schema 4, PostgreSQL at schema 5: the first use writes the chunks of the sessions there
    (and PostgreSQL takes SQLite's indexes of ids and children, schema 7)."""
    before_chunks = 4 if url.startswith("sqlite:") else 5
    rng = random.Random(4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:before_chunks])
        patch.setattr(schema, "SCHEMA_VERSION", before_chunks)
        patch.setattr(repository, "SCHEMA_VERSION", before_chunks)
        patch.setattr(session.SqlSession, "_chunked", lambda self, rows: None)
        with open_repo(url) as repo:
            sids = [build(repo)]
            for k in range(3):
                sid = f"0197e89e-a300-7226-a91b-cd61d8f1aa{k:02x}"
                repo.import_session(HEADER % sid.encode(), _random_lines(rng, 10 + 7 * k))
                sids.append(sid)
            assert repo.schema_version() == before_chunks
            managers = [repo.open(sid, read_only=True) for sid in sids]
            before = [shape(m) for m in managers]
            for m in managers:
                m.close()
    with open_repo(url) as repo:
        managers = [repo.open(sid, read_only=True) for sid in sids]  # the first use upgrades it
        assert repo.schema_version() == schema.SCHEMA_VERSION == 7
        assert [shape(m) for m in managers] == before
        for m in managers:
            m.close()
        assert all(repo.check(sid) == [] for sid in sids)
    plain = Plain(url)
    try:
        # and the indexes of ids and of children are SQLite's on both (PostgreSQL's since schema 7)
        definitions = (
            "SELECT name, sql FROM sqlite_master WHERE name IN ('st_entries_id', 'st_entries_parent')"
            if plain.sqlite
            else "SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN ('st_entries_id', 'st_entries_parent')"
        )
        indexes = {
            name: sql.replace("USING btree ", "").replace("public.", "")
            for name, sql in plain.query(definitions)
        }
        assert indexes["st_entries_id"].endswith("ON st_entries (id)"), indexes
        parents = indexes["st_entries_parent"].replace("(", "").replace(")", "")
        assert parents.endswith(
            "st_entries session_id, parent_id WHERE parent_seq IS NULL OR parent_seq <> seq - 1"
        )
        for sid in sids:
            count = plain.query("SELECT entry_count FROM st_sessions WHERE id = ?", (sid,))[0][0]
            assert len(_chunks(plain, sid)) == count // CHUNK > 0
            assert _read(url, sid)[0] == _file_tree(plain, sid, tmp_path)
    finally:
        plain.close()


def test_an_irregular_session_gets_no_chunks(url: str, tmp_path: Path) -> None:
    lines = _random_lines(random.Random(9), 12)
    lines[7] = lines[3]  # a repeated id
    sid = "0197e89e-a300-7226-a91b-cd61d8f1ffff"
    with open_repo(url) as repo:
        repo.import_session(HEADER % sid.encode(), lines)
    plain = Plain(url)
    try:
        assert _chunks(plain, sid) == []
        assert _read(url, sid)[0] == _file_tree(plain, sid, tmp_path)
    finally:
        plain.close()


def test_a_deleted_session_takes_its_chunks(url: str, tmp_path: Path) -> None:
    with open_repo(url) as repo:
        sid = build(repo)
        repo.delete(sid)
    plain = Plain(url)
    try:
        assert plain.query("SELECT count(*) FROM st_tree_chunks") == [(0,)]
    finally:
        plain.close()


def test_an_unchunkable_chunk_stops_the_chunks_after_it(url: str, tmp_path: Path) -> None:
    lines = _random_lines(random.Random(5), 13)
    lines[5] = lines[5].replace(b'"type":"message"', b'"type":"message\\u0000"', 1)  # NUL: not in a chunk
    sid = "0197e89e-a300-7226-a91b-cd61d8f1eeee"
    with open_repo(url) as repo:
        repo.import_session(HEADER % sid.encode(), lines)
    plain = Plain(url)
    try:
        assert [c[0] for c in _chunks(plain, sid)] == [0]
        tree, problems = _read(url, sid)
        assert tree == _file_tree(plain, sid, tmp_path) and problems == []
    finally:
        plain.close()


def test_the_sql_fuzzer_with_chunks_of_four_rows() -> None:
    require_conformance()
    report = fuzz_sql.run(default_seed(), 30)
    FUZZ_RUNS.append(report.summary())
    if report.failures:
        pytest.fail(report.summary() + "\n" + "\n".join(report.failures[:10]), pytrace=False)


def test_postgres_the_append_that_fills_a_chunk_is_one_transaction_with_it(postgres_url: str) -> None:
    """Every other append stays its one statement in autocommit; the one whose row fills a chunk sends its
    row, the chunk and the session row in one transaction (the chunk is never without its rows)."""
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        manager.append_message(user("m1"))
        counted = _count(manager)
        sent = []
        for k in range(2, 2 * CHUNK + 2):
            counted.sent.clear()
            manager.append_message(user(f"m{k}"))
            sent.append(list(counted.sent))
        manager.close()
    for seq, words in enumerate(sent, start=2):
        if seq % CHUNK:
            assert words == ["WITH"], (seq, words)
        else:
            # (the new id is checked by a read first; the lease renewal in the transaction fences the rest)
            assert words[-1] == "COMMIT" and "INSERT" in words[words.index("BEGIN") :], (seq, words)
    plain = Plain(postgres_url)
    try:
        assert [c[0] for c in _chunks(plain, sid)] == [0, 1]
        assert _read(postgres_url, sid) == (_file_tree(plain, sid, Path(tempfile.mkdtemp())), [])
        with open_repo(postgres_url) as repo:
            assert repo.check(sid) == []
    finally:
        plain.close()


def test_postgres_a_writer_that_lost_its_lease_writes_neither_the_row_nor_the_chunk(
    postgres_url: str,
) -> None:
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        ids = [manager.append_message(user(f"m{k}")) for k in range(1, CHUNK)]
        _take_over(postgres_url, sid)
        with pytest.raises(SessionLockedError, match="taken over by other-host:1:x"):
            manager.append_message(user("fills the chunk, too late"))
        assert manager.get_leaf_id() == ids[-1]
        manager.close()
    plain = Plain(postgres_url)
    try:
        assert _chunks(plain, sid) == [] and plain.seqs(sid) == list(range(1, CHUNK))
    finally:
        plain.close()
    assert stored(postgres_url, sid).ids == ids
