"""PostgreSQL: an append is its one statement in autocommit (the lease renewal that fences it, the check that
the new id is free, the entry, its search text and the session row), so a turn costs one round trip per
entry, with no ``BEGIN`` or ``COMMIT``; a lost lease writes nothing, a taken id writes nothing and the entry
is built again with another, and a statement whose connection drops in flight is resolved by the next write
(it landed, or it did not; never twice)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from sessiontree import open_repo
from sessiontree.agent import AgentHarness, AgentTool, ScriptedModel, ToolResult, reply, tool_call
from sessiontree.errors import SessionLockedError, StorageError
from tests.backends.conftest import with_options
from tests.backends.sql_workers import stored, user

pytest.importorskip("psycopg")

_LONG_LEASE = 300_000  # no heartbeat transaction between the counted statements


class _Counted:
    """The pool, recording what the connections it hands out send: each statement by its first word, and a
    transaction's ``BEGIN`` and ``COMMIT`` (one round trip each)."""

    def __init__(self, pool: Any, fault: str | None = None) -> None:
        self.pool = pool
        self.sent: list[str] = []
        self.fault = fault
        """``"lands, reply lost"``: the next statement alone runs and then its connection drops;
        ``"lost before"``: it drops before the statement is sent."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        with self.pool.connection() as pg:
            yield _CountedConnection(pg, self)


class _CountedConnection:
    def __init__(self, pg: Any, counted: _Counted) -> None:
        self.pg = pg
        self.counted = counted

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pg, name)

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        import psycopg

        word = str(sql).split()[0].upper()
        self.counted.sent.append(word)
        fault = self.counted.fault if word == "WITH" and self.pg.info.transaction_status == 0 else None
        if fault == "lost before":
            self.counted.fault = None
            self.pg.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        result = self.pg.execute(sql, *args, **kwargs)
        if fault == "lands, reply lost":
            self.counted.fault = None
            self.pg.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return result

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.counted.sent.append("BEGIN")
        try:
            with self.pg.transaction():
                yield
        finally:
            self.counted.sent.append("COMMIT")


def _count(manager: Any, fault: str | None = None) -> _Counted:
    conn = manager.index.conn
    counted = _Counted(conn._pool, fault)
    conn._pool = counted
    return counted


def test_an_append_is_one_statement_without_begin_or_commit(postgres_url: str) -> None:
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        manager.append_message(user("first"))
        counted = _count(manager)
        manager.append_message(user("second"))
        assert counted.sent == ["WITH"]
        sid = manager.get_session_id()
        manager.close()
    assert [e["message"]["content"] for e in stored(postgres_url, sid).entries] == [
        "user first",
        "user second",
    ]


async def _noop(_call_id: str, _args: dict[str, Any], _signal: Any, _update: Any) -> ToolResult:
    return ToolResult([{"type": "text", "text": "ok"}])


def test_a_harness_tool_turn_costs_one_round_trip_per_entry(postgres_url: str) -> None:
    """A prompt of three requests (two with a tool call): six entries (the prompt, three assistant
    messages, two tool results), each its statement; nothing else reaches the server."""
    noop = AgentTool("noop", "does nothing", {"type": "object", "properties": {}}, _noop, repeatable=True)
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        model = ScriptedModel(context_window=10_000_000)
        harness = AgentHarness(manager, model, tools=[noop])
        model.add(reply("warm"))
        anyio.run(harness.prompt, "warm up")
        before = len(manager.get_entries())
        counted = _count(manager)
        model.add(reply(tool_call("noop", id="a")), reply(tool_call("noop", id="b")), reply("done"))
        anyio.run(harness.prompt, "task")
        assert counted.sent == ["WITH"] * 6
        assert len(manager.get_entries()) == before + 6
        manager.close()


def _take_over(url: str, sid: str) -> None:
    """Another host's writer takes the lease (a new owner and fence, as after an expiry)."""
    import psycopg

    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as admin:
        admin.execute(
            "UPDATE st_writer_leases SET owner = 'other-host:1:x', fence = fence + 1 WHERE session_id = %s",
            (sid,),
        )


def test_an_append_whose_lease_was_taken_over_writes_nothing(postgres_url: str) -> None:
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        first = manager.append_message(user("first"))
        _take_over(postgres_url, sid)
        counted = _count(manager)
        with pytest.raises(SessionLockedError, match="taken over by other-host:1:x; nothing was written"):
            manager.append_message(user("too late"))
        assert counted.sent[:1] == ["WITH"] and "BEGIN" not in counted.sent
        assert manager.get_leaf_id() == first
        manager.close()
    session = stored(postgres_url, sid)
    assert session.ids == [first]


@pytest.mark.parametrize("fault", ["lands, reply lost", "lost before"])
def test_a_statement_whose_connection_drops_is_resolved_by_the_next_write(
    postgres_url: str, fault: str
) -> None:
    """The outcome is reported unknown; the next write reads the tail again and goes on from what is
    stored: the entry that landed is kept once (the next one branches beside it, from the leaf this
    writer knew), the one that did not is not there."""
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        first = manager.append_message(user("first"))
        _count(manager, fault)
        with pytest.raises(StorageError, match="whether the commit took effect is unknown"):
            manager.append_message(user("ghost"))
        assert manager.get_leaf_id() == first
        after = manager.append_message(user("after"))
        manager.close()
    session = stored(postgres_url, sid, chain=False)
    texts = [e["message"]["content"] for e in session.entries]
    assert texts == (
        ["user first", "user ghost", "user after"]
        if fault == "lands, reply lost"
        else ["user first", "user after"]
    )
    assert session.by_id()[after]["parentId"] == first


def test_an_in_flight_statement_whose_backend_is_terminated_writes_nothing(postgres_url: str) -> None:
    """A real drop: the append's statement waits on the session row (another transaction holds it), the
    server ends its backend; the append reports an unknown outcome, nothing landed, the next write goes
    on from the first entry."""
    import psycopg

    plain = postgres_url.split("?", 1)[0]
    with open_repo(with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)) as repo:
        manager = repo.create("/work/project")
        sid = manager.get_session_id()
        first = manager.append_message(user("first"))
        failure: list[BaseException] = []

        def append() -> None:
            try:
                manager.append_message(user("in flight"))
            except BaseException as exc:
                failure.append(exc)

        with psycopg.connect(plain) as holder, psycopg.connect(plain, autocommit=True) as admin:
            holder.execute("SELECT 1 FROM st_sessions WHERE id = %s FOR UPDATE", (sid,))
            writer = threading.Thread(target=append)
            writer.start()
            deadline = time.monotonic() + 30
            waiting: list[Any] = []
            while not waiting and time.monotonic() < deadline:
                time.sleep(0.02)
                waiting = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH lease%%'"
                ).fetchall()
            assert waiting, "the append's statement never waited on the session row"
            admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0][0],))
            writer.join(30)
            holder.rollback()
        assert len(failure) == 1 and isinstance(failure[0], StorageError), failure
        assert "whether the commit took effect is unknown" in str(failure[0])
        after = manager.append_message(user("after"))
        manager.close()
    session = stored(postgres_url, sid)
    assert session.ids == [first, after]


def test_a_writer_stalled_before_sending_anything_is_fenced_out(postgres_url: str) -> None:
    """A writer stalls inside its transaction after one append (its row held for the last statement, so
    no lease row is locked): once its lease expired another writer takes it at once and writes; the
    stalled one's statement then writes nothing (its renewal, in it, finds the new fence)."""
    url = with_options(postgres_url, lease_ttl_ms=400)
    with open_repo(url) as repo:
        a = repo.create("/work/project")
        sid = a.get_session_id()
        first = a.append_message(user("A first"))
        with pytest.raises(SessionLockedError) as caught, a.transaction():
            a.append_message(user("A stalled"))
            time.sleep(1.0)
            with open_repo(url) as other:
                b = other.open(sid, stale_leaf="latest")
                b_first = b.append_message(user("B first"))  # no lock to wait for, no "stalled writer"
                b.close()
        assert caught.value.kind == "lease_lost" and "nothing was written" in str(caught.value)
        assert a.get_leaf_id() == first
        a.close()
    session = stored(url, sid)
    assert session.ids == [first, b_first]


def _seeded(url: str, count: int) -> tuple[str, list[str]]:
    with open_repo(url) as repo:
        manager = repo.create("/work/project")
        ids = [manager.append_message(user(f"seed {k}")) for k in range(count)]
        sid = manager.get_session_id()
        manager.close()
    return sid, ids


def test_a_random_id_the_store_holds_is_refused_and_drawn_again(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer does not know the session's first entry; the random id drawn for its append is that
    entry's: the statement writes nothing, and the append is made again with the next id drawn."""
    import os

    from sessiontree.format import ids as id_module

    url = with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)
    sid, seeded = _seeded(url, 5)
    draws = [bytes.fromhex(seeded[0]), bytes.fromhex("0badc0de")]

    class _Os:
        @staticmethod
        def urandom(n: int) -> bytes:
            return draws.pop(0) if draws and n == 4 else os.urandom(n)

    with open_repo(url) as repo:
        manager = repo.open(sid)
        warm = manager.append_message(user("takes the lease"))
        assert seeded[0] not in manager.index._pointers  # type: ignore[attr-defined]
        counted = _count(manager)
        monkeypatch.setattr(id_module, "os", _Os)
        new = manager.append_message(user("new"))
        monkeypatch.undo()
        assert new == "0badc0de" and draws == []
        # the first attempt refused by its statement itself, the second (after a check of the tail) written
        assert counted.sent[0] == "WITH" and counted.sent.count("WITH") == 2, counted.sent
        assert manager.get_entry(new)["parentId"] == warm
        assert manager.get_entry(seeded[0])["message"]["content"] == "user seed 0"
        manager.close()
    session = stored(url, sid)
    assert session.ids == [*seeded, warm, new]


def test_an_id_factory_of_its_own_gets_exact_answers(postgres_url: str) -> None:
    """Only the random ids of the default factory are checked by the statement that writes them: another
    factory may look for the first free id, and is told about ids this writer never saw."""
    url = with_options(postgres_url, lease_ttl_ms=_LONG_LEASE)
    sid, seeded = _seeded(url, 3)
    asked: list[bool] = []

    def factory(existing: Any) -> str:
        asked.append(seeded[0] in existing)
        return "f0000001"

    with open_repo(url) as repo:
        manager = repo.open(sid)
        manager.id_factory = factory
        assert manager.append_message(user("own id")) == "f0000001"
        manager.close()
    assert asked == [True]
