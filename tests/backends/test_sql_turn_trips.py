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
    sent: list[str] = []
    for name in ("query", "execute"):
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
