"""What a turn costs a SQL store in statements: the entries a writer stored are read back without asking the
store, and a pooled PostgreSQL connection is handed out without a round trip when it is healthy (and
replaced, unseen by the caller, when the server closed it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from sessiontree import open_repo
from tests.backends.sql_workers import user


def _counting(conn: Any) -> list[str]:
    """Record every query and statement ``conn`` sends from now on."""
    from sessiontree.storage.sql.conn import Conn

    sent: list[str] = []
    own = [
        n for n in ("read", "query_last") if getattr(type(conn), n) is not getattr(Conn, n)
    ]  # else query's
    for name in ("query", "execute", *own):
        method: Callable[..., Any] = getattr(conn, name)

        def counted(sql: str, params: Any = (), _method: Callable[..., Any] = method) -> Any:
            sent.append(sql)
            return _method(sql, params)

        setattr(conn, name, counted)
    return sent


def test_entries_this_writer_stored_are_read_back_without_a_statement(sql_url: str) -> None:
    """What the harness reads after each message (its position and the entry, to extend its context)
    comes from what the writer stored, equal to what a fresh reader gets from the store."""
    with open_repo(sql_url) as repo:
        manager = repo.create("/work/project")
        ids = [manager.append_message(user(f"m{k}")) for k in range(3)]
        index: Any = manager.index
        sent = _counting(index.conn)
        positions = [index.position(i) for i in ids]
        entries = [index.get_entry(i) for i in ids]
        assert sent == []
        reader = repo.open(manager.get_session_id(), read_only=True)
        assert positions == [reader.index.position(i) for i in ids] == [0, 1, 2]
        assert entries == [reader.get_entry(i) for i in ids]
        reader.close()
        manager.close()


def test_an_entry_rolled_back_is_not_read_back(sql_url: str) -> None:
    """An entry whose transaction failed is not served from what the writer remembers: the store says it
    is not there, and the next entry takes its place."""
    with open_repo(sql_url) as repo:
        manager = repo.create("/work/project")
        first = manager.append_message(user("first"))
        ghost: list[str] = []
        with pytest.raises(RuntimeError), manager.transaction():
            ghost.append(manager.append_message(user("ghost")))
            raise RuntimeError("the block fails")
        assert manager.get_entry(ghost[0]) is None
        assert manager.index.position(ghost[0]) is None
        after = manager.append_message(user("after"))
        assert manager.index.position(after) == 1
        assert manager.get_entry(after)["parentId"] == first
        manager.close()


@pytest.fixture
def pool_checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every round-trip check psycopg_pool makes of a connection it hands out."""
    pytest.importorskip("psycopg")
    from psycopg_pool import ConnectionPool

    made: list[object] = []
    original = ConnectionPool.check_connection

    def counted(conn: Any) -> None:
        made.append(conn)
        original(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return made


def test_a_healthy_pooled_connection_is_handed_out_without_a_round_trip(
    postgres_url: str, pool_checks: list[object]
) -> None:
    with open_repo(postgres_url) as repo:
        manager = repo.create("/work/project")
        for k in range(5):
            manager.append_message(user(f"m{k}"))
        assert len(manager.get_entries()) == 5
        manager.close()
    assert pool_checks == []


def test_a_pooled_connection_the_server_closed_is_replaced_unseen(
    postgres_url: str, pool_checks: list[object]
) -> None:
    """The server ends every backend of the store between two writes: the next write still succeeds (the
    pool's check finds the closed connection and makes a new one), and nothing is lost."""
    import psycopg

    with open_repo(postgres_url) as repo:
        manager = repo.create("/work/project")
        first = manager.append_message(user("before"))
        dbname = psycopg.conninfo.conninfo_to_dict(postgres_url.split("?", 1)[0])["dbname"]
        with psycopg.connect(postgres_url.split("?", 1)[0], autocommit=True) as admin:
            ended = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            ).fetchall()
        assert ended, "no pooled connection to end"
        time.sleep(0.2)  # the backends' goodbyes reach their sockets
        after = manager.append_message(user("after"))
        assert pool_checks, "the closed connection was not checked"
        assert [e["id"] for e in manager.get_entries()] == [first, after]
        manager.close()


def test_an_append_sends_its_statements(sql_url: str) -> None:
    """An append of one message, its own transaction, once the writer holds its lease: the check that the
    new id is free, the lease renewal and the rest (PostgreSQL: all of it in one statement)."""
    with open_repo(sql_url) as repo:
        manager = repo.create("/work/project")
        manager.append_message(user("first"))
        sent = _counting(manager.index.conn)  # type: ignore[attr-defined]
        manager.append_message(user("second"))
        expected = 1 if sql_url.startswith("postgresql") else 5
        assert len(sent) == expected, sent
        assert [m["content"] for m in manager.build_session_context().messages] == [
            "user first",
            "user second",
        ]
        manager.close()


def test_rows_held_for_the_commit_are_seen_by_reads_inside_the_transaction(sql_url: str) -> None:
    """Reads that ask the store inside the transaction see the entries it appended (PostgreSQL sends them
    first, before the read's own statement)."""
    with open_repo(sql_url) as repo:
        manager = repo.create("/work/project")
        first = manager.append_message(user("first"))
        index: Any = manager.index
        with manager.transaction():
            a = manager.append_message(user("a"))
            manager.branch(first)
            b = manager.append_message(user("b"))
            assert [e["id"] for e in index.children(first)] == [a, b]
            assert [e["id"] for e in index.entries()] == [first, a, b]
        reader = repo.open(manager.get_session_id(), read_only=True)
        assert [e["id"] for e in reader.get_entries()] == [first, a, b]
        reader.close()
        manager.close()


def _lease_left_ms(url: str, sid: str) -> int:
    import psycopg

    with psycopg.connect(url.split("?", 1)[0]) as conn:
        row = conn.execute(
            "SELECT expires_at_ms - CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) "
            "FROM st_writer_leases WHERE session_id = %s",
            (sid,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_transaction_that_lasted_renews_the_lease_at_its_end(postgres_url: str) -> None:
    """A transaction open longer than a third of the lease's time to live renews it again with its rows: the
    lease left after the commit is nearly a whole time to live."""
    from tests.backends.conftest import with_options

    with open_repo(with_options(postgres_url, lease_ttl_ms=3000)) as repo:
        manager = repo.create("/work/project")
        manager.append_message(user("first"))
        with manager.transaction():
            manager.append_message(user("slow"))
            time.sleep(1.5)
        assert _lease_left_ms(postgres_url, manager.get_session_id()) > 2000
        assert [m["content"] for m in manager.build_session_context().messages] == ["user first", "user slow"]
        manager.close()


def test_a_transaction_that_outlived_its_lease_writes_nothing(postgres_url: str) -> None:
    from sessiontree.errors import SessionLockedError
    from tests.backends.conftest import with_options

    with open_repo(with_options(postgres_url, lease_ttl_ms=400)) as repo:
        manager = repo.create("/work/project")
        first = manager.append_message(user("first"))
        with pytest.raises(SessionLockedError) as caught, manager.transaction():
            manager.append_message(user("too late"))
            time.sleep(0.8)
        assert caught.value.kind == "lease_lost"
        assert manager.get_leaf_id() == first
        reader = repo.open(manager.get_session_id(), read_only=True)
        assert [e["id"] for e in reader.get_entries()] == [first]
        reader.close()
        manager.close()


@pytest.mark.parametrize("count", [3, 70], ids=["few", "many"])
def test_a_transaction_of_many_kinds_of_entries_stores_them_all(sql_url: str, count: int) -> None:
    """Entries with and without search text in one transaction (each append's check of its new id sends
    the rows held before it; the last append's go with the commit): a fresh reader gets every one, in
    order, with the session row's counts and the search text."""
    with open_repo(sql_url) as repo:
        manager = repo.create("/work/project")
        first = manager.append_message(user("first"))
        ids = [first]
        with manager.transaction():
            for k in range(count):
                ids.append(manager.append_message(user(f"m{k}")))
                ids.append(manager.append_label_change(first, f"label {k}"))
                ids.append(manager.append_model_change("p", f"model {k}"))
        sid = manager.get_session_id()
        manager.close()
        reader = repo.open(sid, read_only=True)
        assert [e["id"] for e in reader.get_entries()] == ids
        assert reader.get_label(first) == f"label {count - 1}"
        reader.close()
        (info,) = [s for s in repo.list() if s.id == sid]
        assert info.message_count == count + 1
        assert [hit.entry_id for hit in repo.search(f"m{count - 1}")][:1] == [ids[-3]]
