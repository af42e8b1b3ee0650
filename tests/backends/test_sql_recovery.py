"""A writer after the store lost what it had acknowledged, or after a commit whose outcome it never heard:
it reads the durable tail again before it writes, so the session stays one valid tree (no parent that names
a lost entry, no gap in the sequence), or it refuses with a documented error and goes on at the next write.

The crash tests run on a PostgreSQL cluster of their own (they stop it with ``pg_ctl stop -m immediate``),
whose WAL writer waits ten seconds between flushes: commits made with ``synchronous_commit=off`` just before
the crash are then lost, as the setting allows.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sessiontree import open_repo
from sessiontree.errors import StorageError
from tests.backends.conftest import with_options
from tests.backends.sql_workers import stored, turns_of, user, write_turn
from tests.conftest import require_postgres
from tests.pg_server import PostgresServer, PostgresUnavailable


@pytest.fixture(scope="module")
def crash_cluster() -> Iterator[PostgresServer]:
    """A cluster for this module alone (stopping it must not disturb the run's shared one)."""
    pytest.importorskip("psycopg")
    server = PostgresServer(settings={"wal_writer_delay": "10s"})
    try:
        server.start()
    except PostgresUnavailable as exc:
        require_postgres(str(exc))
    try:
        yield server
    finally:
        server.stop()


_databases = iter(range(1, 10_000))


@pytest.fixture
def crash_url(crash_cluster: PostgresServer) -> Iterator[str]:
    name = f"recovery_{next(_databases)}"
    url = crash_cluster.create_database(name)
    yield url
    crash_cluster.ensure_running()
    crash_cluster.drop_database(name)


def _rows(url: str, sid: str) -> list[tuple[Any, ...]]:
    """(seq, id, parent_id, parent_seq) of every stored entry, read with the plain driver."""
    import psycopg

    with psycopg.connect(url.split("?", 1)[0]) as conn:
        return list(
            conn.execute(
                "SELECT seq, id, parent_id, parent_seq FROM st_entries WHERE session_id = %s ORDER BY seq",
                (sid,),
            ).fetchall()
        )


def _flush_wal(server: PostgresServer) -> None:
    """Make everything committed so far durable: a synchronous commit flushes the WAL up to it (and,
    unlike a checkpoint, does not make the next changes log whole pages)."""
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS wal_marker (at TIMESTAMPTZ)")
        conn.execute("INSERT INTO wal_marker VALUES (clock_timestamp())")


def _assert_one_valid_chain(url: str, sid: str) -> list[tuple[Any, ...]]:
    rows = _rows(url, sid)
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1)), f"a gap in the sequence: {rows}"
    seq_of = {r[1]: r[0] for r in rows}
    for seq, _, parent, parent_seq in rows:
        assert parent is None or parent in seq_of, f"entry {seq} names a parent that is not stored: {parent}"
        assert parent_seq == (seq_of[parent] if parent is not None else None)
    stored(url, sid)  # and read back whole by a fresh reader: one chain, every message in the context
    return rows


def test_postgres_crash_with_synchronous_commit_off_loses_only_a_tail(
    crash_cluster: PostgresServer, crash_url: str
) -> None:
    """Entries acknowledged with ``synchronous_commit=off`` and lost in a server crash: the same manager's
    next entry continues from the last entry the server still has (its seq follows it, its parent is it),
    the loss is reported, and the session read back is one chain."""
    url = with_options(crash_url, synchronous_commit="off")
    with open_repo(url) as repo:
        repo.setup()
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        acked = [manager.append_message(user(f"kept {k}")) for k in range(3)]
        _flush_wal(crash_cluster)
        acked += [manager.append_message(user(f"late {k}")) for k in range(4)]
        crash_cluster.restart("immediate")

        kept = [r[1] for r in _rows(crash_url, sid)]
        assert len(kept) < len(acked), "the crash lost nothing: the test did not reproduce a loss"
        assert kept == acked[: len(kept)], "what survived is not a prefix of what was acknowledged"
        lost = [
            f"late {k}" for k in range(len(kept) - 3, 4)
        ]  # (the WAL writer may have saved the first ones)
        after, turn = _go_on(manager, kept, lost)
        manager.close()
    rows = _assert_one_valid_chain(crash_url, sid)
    assert [r[1] for r in rows] == [*kept, after, *turn]


@pytest.mark.parametrize("beats", [False, True], ids=["write-first", "heartbeat-first"])
def test_postgres_crash_that_loses_a_whole_session(
    crash_cluster: PostgresServer, crash_url: str, beats: bool
) -> None:
    """The crash loses every commit of a new session: its row and its writer lease too. The next entry
    stores the session again, header first, under a lease taken again, also when the lease's heartbeat ran
    first and found no lease row (``beats``; a short lease, so that it runs every half second)."""
    ttl = 1500 if beats else 30_000
    url = with_options(crash_url, synchronous_commit="off", lease_ttl_ms=ttl)
    with open_repo(url) as repo:
        repo.setup()
        for _attempt in range(4):  # the WAL writer may have written the new session's first page out
            warm = repo.create("/work/project")  # first changes after a checkpoint log whole pages:
            warm.append_message(user("warm"))  # made here, so the session below logs only a little
            warm.close()
            _flush_wal(crash_cluster)
            manager = repo.create("/work/project")
            sid = manager.get_session_id()
            manager.append_message(user("late"))
            crash_cluster.restart("immediate")
            if not _rows(crash_url, sid) and _lease_rows(crash_url, sid) == 0:
                break
            manager.close()
        else:
            pytest.fail("no crash lost the whole new session: the test did not reproduce the loss")
        if beats:
            time.sleep(ttl * 2 / 1000)  # heartbeats (every ttl / 3) find no lease row
        after, turn = _go_on(manager, [], ["late"])
        manager.close()
    rows = _assert_one_valid_chain(crash_url, sid)
    assert [r[1] for r in rows] == [after, *turn]


def _go_on(manager: Any, kept: list[str], lost: list[str]) -> tuple[str, list[str]]:
    """The same manager writes an entry and a turn after the crash; what it reports and reads (none of the
    ``lost`` texts)."""
    after = manager.append_message(user("after the crash"))
    assert manager.get_entry(after)["parentId"] == (kept[-1] if kept else None)
    turn = write_turn(manager, "turn")
    assert [p.kind for p in manager.problems if not p.is_note] == ["lost_entries"]
    (note,) = [p for p in manager.problems if p.kind == "stale_leaf"]
    assert "lost commits it had acknowledged" in note.message
    texts = [m["content"] for m in manager.build_session_context().messages if m["role"] == "user"]
    assert texts[-2:] == ["user after the crash", "user turn"]
    assert not any(gone in str(t) for t in texts for gone in lost), (texts, lost)
    return after, turn


def _lease_rows(url: str, sid: str) -> int:
    import psycopg

    with psycopg.connect(url.split("?", 1)[0]) as conn:
        row = conn.execute("SELECT COUNT(*) FROM st_writer_leases WHERE session_id = %s", (sid,)).fetchone()
    return int(row[0]) if row else 0


def test_postgres_restart_without_loss_keeps_the_writer_going(
    crash_cluster: PostgresServer, crash_url: str
) -> None:
    """A crash that lost nothing (every commit durable): the check after reconnecting finds the tail it
    knew, reports nothing, and the writer goes on from its leaf."""
    with open_repo(crash_url) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        acked = write_turn(manager, "before")
        crash_cluster.restart("immediate")
        acked += write_turn(manager, "after")
        assert manager.problems == []
        manager.close()
    assert [r[1] for r in _assert_one_valid_chain(crash_url, sid)] == acked


# -- a commit of unknown outcome, and a check that fails ----------------------------------------------
class _CommitLostThenQueryFails:
    """A ``sqlite3`` connection whose next COMMIT takes effect and then reports a failure (its reply lost),
    and whose next query after that fails once (the server still coming back)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.commit_armed = True
        self.query_armed = False

    def execute(self, sql: str, *args: Any) -> Any:
        if self.query_armed and sql.lstrip().upper().startswith("SELECT"):
            self.query_armed = False
            raise sqlite3.OperationalError("disk I/O error (the check)")
        result = self.db.execute(sql, *args)
        if sql == "COMMIT" and self.commit_armed:
            self.commit_armed, self.query_armed = False, True
            raise sqlite3.OperationalError("disk I/O error (after the commit)")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_failed_check_after_a_commit_of_unknown_outcome_is_made_again(tmp_path: Path) -> None:
    """The commit took effect but reported failure; the next write's check fails too. The write after
    that must still check (and find the turn that was committed) instead of reusing its seqs: no duplicate
    key, and the writer is not wedged."""
    url = f"sqlite:///{tmp_path}/s.db"
    with open_repo(url) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        first = manager.append_message(user("first"))
        index: Any = manager.index
        index.conn._db = _CommitLostThenQueryFails(index.conn._db)
        with pytest.raises(StorageError, match="a commit failed"):
            write_turn(manager, "ghost")
        with pytest.raises(StorageError, match="disk I/O error \\(the check\\)"):
            write_turn(manager, "refused")
        assert manager.get_leaf_id() == first
        again = write_turn(manager, "again")
        later = write_turn(manager, "later")
        manager.close()
    session = stored(url, sid, chain=False)
    assert session.ids[0] == first
    assert [tag for tag, _ in turns_of(session.entries[1:])] == ["ghost", "again", "later"]
    assert session.ids[5:] == [*again, *later]
    assert session.by_id()[again[0]]["parentId"] == first  # beside the turn it never heard had landed


def test_postgres_commit_of_unknown_outcome_then_failed_checks(
    crash_cluster: PostgresServer, crash_url: str
) -> None:
    """PostgreSQL: a turn's commit lands but its reply is lost (the connection drops after the commit);
    the next write's check fails (the connection drops again before it), and the one after finds the
    server down; once it is back, the next write finds the committed turn and goes on beside it. (A long
    lease: no heartbeat transaction takes one of the faults meant for the writes.)"""
    with open_repo(with_options(crash_url, lease_ttl_ms=300_000)) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        first = manager.append_message(user("first"))
        conn: Any = manager.index.conn  # type: ignore[attr-defined]
        faults = _Faults(conn._pool)
        conn._pool = faults
        with pytest.raises(StorageError, match="whether the commit took effect is unknown"):
            write_turn(manager, "ghost")
        with pytest.raises(StorageError, match="connection to the server was lost"):
            write_turn(manager, "check fails")
        assert faults.pending == []
        with crash_cluster.down(), pytest.raises(StorageError, match="connection to the server was lost"):
            write_turn(manager, "server down")
        again = write_turn(manager, "again")
        manager.close()
    session = stored(crash_url, sid, chain=False)
    assert [tag for tag, _ in turns_of(session.entries[1:])] == ["ghost", "again"]
    assert session.by_id()[again[0]]["parentId"] == first


class _Faults:
    """The pool, with faults for the next transactions: its commit lands and then the connection is
    reported lost; then its first statement fails as on a connection that dropped."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.pending = ["reply lost", "first statement fails"]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        with self.pool.connection() as pg:
            yield _FaultyConnection(pg, self.pending.pop(0) if self.pending else None)


class _FaultyConnection:
    def __init__(self, pg: Any, fault: str | None) -> None:
        self.pg = pg
        self.fault = fault

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pg, name)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        import psycopg

        if self.fault == "first statement fails":
            self.fault = None
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return self.pg.execute(*args, **kwargs)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        import psycopg

        with self.pg.transaction():
            yield
        if self.fault == "reply lost":
            raise psycopg.OperationalError("server closed the connection unexpectedly")
