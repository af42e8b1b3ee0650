"""Faults on the SQL stores: writers SIGKILLed mid-transaction, leases that expire or are taken over, a
PostgreSQL server restarted or down in the middle of a session. Nothing acknowledged is ever lost, no turn
is ever partly written, and every error says what happened.

``SESSIONTREE_SQL_KILLS`` sets the number of kills per back end (default 100).
"""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree import build_session_context, open_repo
from sessiontree.errors import SessionLockedError, StorageError
from tests.backends.conftest import with_options
from tests.backends.sql_workers import (
    hold_then_write,
    join_all,
    kill,
    message_text,
    read_log,
    start,
    stored,
    turn_writer,
    turns_of,
    user,
    wait_for,
    write_turn,
)
from tests.pg_server import PostgresTarget

KILLS = int(os.environ.get("SESSIONTREE_SQL_KILLS", "40"))  # the in-suite run; campaigns set 400 or more
KILL_SESSIONS = 4
KILL_TTL_MS = 400
OWNER_PID = re.compile(r"by [^:\s]+:(\d+):[0-9a-f]{8}")


def _lease_row(url: str, sid: str) -> tuple[str, int] | None:
    """(owner, fence) of the session's writer lease, read straight from the database."""
    query = "SELECT owner, fence FROM st_writer_leases WHERE session_id = ?"
    if url.startswith("sqlite:"):
        db = sqlite3.connect(url.split("///", 1)[1].split("?", 1)[0])
        try:
            row = db.execute(query, (sid,)).fetchone()
        finally:
            db.close()
    else:
        import psycopg

        with psycopg.connect(url.split("?", 1)[0]) as conn:
            row = conn.execute(query.replace("?", "%s"), (sid,)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def _seed(url: str, sessions: int) -> list[str]:
    with open_repo(url) as repo:
        ids = []
        for _ in range(sessions):
            manager = repo.create("/work/project")
            manager.append_message(user("seed"))
            manager.close()
            ids.append(manager.get_session_id())
        return ids


def test_writers_killed_mid_transaction_leave_whole_turns(sql_url: str, tmp_path: Path) -> None:
    """Rounds of one writer per session, all SIGKILLed at a random moment; the next round's writers are
    already open and start the moment the kills are done: refused while the dead writers' leases last
    (naming them), then taking over. (A live writer stalled past the short lease is told it lost the lease
    and opens the session again.)"""
    url = with_options(sql_url, lease_ttl_ms=KILL_TTL_MS)
    sids = _seed(url, KILL_SESSIONS)
    rng = random.Random(9)
    logs: dict[str, list[str]] = {sid: [] for sid in sids}
    kills = mid_turn = named_killed = 0

    def spawn(round_no: int) -> tuple[dict[str, Any], dict[str, str], str]:
        go = str(tmp_path / f"go-{round_no}")
        paths = {sid: str(tmp_path / f"{sid}-{round_no}.log") for sid in sids}
        procs = {sid: start(turn_writer, url, sid, path, go) for sid, path in paths.items()}
        for path in paths.values():
            wait_for(path, lambda rs: any(r["ev"] == "ready" for r in rs))
        return procs, paths, go

    writers, paths, go = spawn(0)
    Path(go).touch()
    round_no = 0
    while kills < KILLS:
        for path in paths.values():  # every writer of this round has taken over its session's lease
            wait_for(path, lambda rs: any(r["ev"] == "ack" for r in rs))
        round_no += 1
        following = spawn(round_no) if kills + len(sids) < KILLS else None
        time.sleep(rng.uniform(0.0, 0.05))
        for sid, writer in writers.items():
            kill(writer)
            assert writer.exitcode == -signal.SIGKILL
            kills += 1
            mid_turn += read_log(paths[sid])[-1]["ev"] == "begin"
            logs[sid].append(paths[sid])
        if following is None:
            break
        killed = {sid: w.pid for sid, w in writers.items()}
        writers, paths, go = following
        Path(go).touch()
        for sid, path in paths.items():
            wait_for(path, lambda rs: any(r["ev"] == "ack" for r in rs))
            refusals = [r for r in read_log(path) if r["ev"] == "refused"]
            if refusals and refusals[0]["kind"] == "locked":
                named_killed += int(OWNER_PID.search(refusals[0]["msg"]).group(1)) == killed[sid]  # type: ignore[union-attr]
    takeovers = kills - len(sids)
    assert mid_turn >= kills // 10, f"only {mid_turn} of {kills} kills landed inside a turn"
    # How many new writers start while a dead writer's 400 ms lease still runs depends on the machine's load;
    # at least one must have been refused naming it (the lease tests check the refusal itself).
    assert named_killed >= 1, f"{named_killed} of {takeovers} new writers were refused first"

    for sid in sids:
        records = [r for log in logs[sid] for r in read_log(log)]
        acked = [r["tag"] for r in records if r["ev"] == "ack"]
        session = stored(url, sid)
        turns = dict(turns_of(session.entries[1:]))  # the seed entry, then whole turns only
        assert len(turns) == len(session.entries[1:]) // 4, "a turn was written twice"
        missing = [tag for tag in acked if tag not in turns]
        assert not missing, f"acknowledged turns lost: {missing}"
        assert len(turns) - len(acked) <= len(
            logs[sid]
        )  # at most one committed, unacknowledged turn per kill
        for record in records:
            if record["ev"] == "ack":
                assert [e["id"] for e in turns[record["tag"]]] == record["ids"]
        with open_repo(url) as repo:  # the last killed writer's lease expires; a new writer takes it
            manager = repo.open(sid, stale_leaf="latest")
            deadline = time.monotonic() + 10
            while True:
                try:
                    ids = write_turn(manager, "final")
                    break
                except SessionLockedError:
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
            manager.close()
        assert stored(url, sid).ids[-4:] == ids
    if url.startswith("sqlite:"):
        db = sqlite3.connect(url.split("///", 1)[1].split("?", 1)[0])
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()


@pytest.mark.parametrize("taken_over", [True, False], ids=["taken-over", "expired"])
def test_a_writer_whose_lease_expired_writes_nothing(sql_url: str, tmp_path: Path, taken_over: bool) -> None:
    """A writer frozen (SIGSTOP) past its lease: its next append and its next turn fail clearly and write
    nothing; the writer that took over is untouched, also after the old one closes."""
    ttl = 400
    url = with_options(sql_url, lease_ttl_ms=ttl)
    (sid,) = _seed(url, 1)
    log, go = str(tmp_path / "a.log"), str(tmp_path / "go")
    a = start(hold_then_write, url, sid, log, go)
    wait_for(log, lambda rs: any(r["ev"] == "ready" for r in rs))
    assert a.pid is not None
    repo = open_repo(url)
    os.kill(a.pid, signal.SIGSTOP)
    try:
        time.sleep(ttl * 2.5 / 1000)
        b = repo.open(sid, stale_leaf="latest")
        if taken_over:
            b_first = b.append_message(user("B-first"))
            b_owner = _lease_row(url, sid)
            assert b_owner is not None and b_owner[0].split(":")[1] == str(os.getpid())
    finally:
        os.kill(a.pid, signal.SIGCONT)
    Path(go).touch()
    join_all([a], timeout=30)

    records = read_log(log)
    refused = [r for r in records if r["ev"] == "refused"]
    assert [r["attempt"] for r in refused] == ["append", "turn"], records
    assert {r["kind"] for r in refused} == {"lease_lost"}
    for r in refused:
        assert "nothing was written" in r["msg"]
        if taken_over:
            assert f"taken over by {b_owner[0]}" in r["msg"]
        else:
            assert "lease expired" in r["msg"]
    expected = [next(r["id"] for r in records if r["ev"] == "ack")]
    if taken_over:  # B goes on after A closed: A's release did not touch B's lease
        b_next = b.append_message(user("B-next"))
        assert _lease_row(url, sid) == b_owner
        expected += [b_first, b_next]
    b.close()
    repo.close()
    session = stored(url, sid)
    assert session.ids[1:] == expected
    assert not any("A-after" in str(e) or "A-turn" in str(e) for e in session.entries)


def test_a_turn_that_fails_leaves_the_manager_writing(sql_url: str) -> None:
    """A turn that fails inside its transaction, also the first turn of a writer (which took the lease
    inside it), rolls back whole; the same manager's next turn is written."""
    (sid,) = _seed(sql_url, 1)
    with open_repo(sql_url) as repo:
        manager = repo.open(sid)
        before = manager.get_leaf_id()
        with pytest.raises(RuntimeError), manager.transaction():
            manager.append_message(user("doomed"))
            raise RuntimeError("the model call failed")
        assert manager.get_leaf_id() == before
        ids = write_turn(manager, "next")
        manager.close()
    session = stored(sql_url, sid)
    assert session.ids[1:] == ids


def test_a_rolled_back_turn_leaves_nothing_in_later_contexts(sql_url: str) -> None:
    """The context read inside a turn that then fails covers entries whose places (their ``seq``) the
    next turn takes, on another branch here: the next context is the new branch's, nothing of the old."""
    (sid,) = _seed(sql_url, 1)
    with open_repo(sql_url) as repo:
        manager = repo.open(sid)
        kept = write_turn(manager, "kept")
        with pytest.raises(RuntimeError), manager.transaction():
            write_turn(manager, "doomed")  # nested: part of the outer transaction
            assert "user doomed" in str(manager.build_session_context().messages)
            raise RuntimeError("the model call failed")
        manager.branch(kept[0])  # from the kept turn's user message: its assistant reply is off the path
        write_turn(manager, "next")
        context = manager.build_session_context()
        assert context == build_session_context(manager.get_entries(), manager.get_leaf_id())
        text = str(context.messages)
        assert "user kept" in text and "user next" in text
        assert "doomed" not in text and "result kept" not in text
        manager.close()


def test_a_transaction_longer_than_the_lease_keeps_it(sql_url: str) -> None:
    """A transaction that lasts three times the lease's time to live (a big import, a slow turn) renews
    the lease as it goes: it commits, and the next write needs no new lease."""
    url = with_options(sql_url, lease_ttl_ms=300)
    (sid,) = _seed(url, 1)
    with open_repo(url) as repo:
        manager = repo.open(sid)
        ids = []
        with manager.transaction():
            for k in range(9):
                ids.append(manager.append_message(user(f"slow {k}")))
                time.sleep(0.1)
        fence = _lease_row(url, sid)
        ids.append(manager.append_message(user("after")))
        assert _lease_row(url, sid) == fence  # the same lease, still held
        manager.close()
    assert stored(url, sid).ids[1:] == ids


def test_a_turn_waits_for_the_heartbeat_instead_of_joining_it(sql_url: str) -> None:
    """The lease heartbeat's transaction is open on the session's connection when a turn begins: the turn
    waits and opens its own, so it still commits or rolls back whole (it must not mistake the heartbeat's
    transaction for one of its own and write each entry in a transaction of its own)."""
    (sid,) = _seed(sql_url, 1)
    with open_repo(sql_url) as repo:
        manager = repo.open(sid)
        manager.append_message(user("first"))  # takes the lease
        conn = manager.index.conn  # type: ignore[attr-defined]
        inside, release = threading.Event(), threading.Event()

        def heartbeat() -> None:
            with conn.transaction():
                inside.set()
                release.wait(10)

        beat = threading.Thread(target=heartbeat)
        beat.start()
        inside.wait(10)
        threading.Timer(0.2, release.set).start()
        with pytest.raises(RuntimeError), manager.transaction():
            manager.append_message(user("doomed"))
            manager.append_message(user("doomed-too"))
            raise RuntimeError("the turn fails after two entries")
        beat.join()
        ids = write_turn(manager, "whole")
        manager.close()
    session = stored(sql_url, sid)
    assert not any("doomed" in message_text(e) for e in session.entries)
    assert session.ids[2:] == ids


class _CommitThenFail:
    """A SQLite connection whose next COMMIT takes effect and then reports a failure (the reply lost)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.armed = True

    def execute(self, sql: str, *args: Any) -> Any:
        result = self.db.execute(sql, *args)
        if sql == "COMMIT" and self.armed:
            self.armed = False
            raise sqlite3.OperationalError("disk I/O error (after the commit)")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_commit_whose_reply_is_lost_does_not_wedge_the_writer(tmp_path: Path) -> None:
    """The commit reached the database but the caller saw an error: the next write finds the turn that
    was written and goes on (a branch from the leaf it knew, with a note) instead of failing forever."""
    url = f"sqlite:///{tmp_path}/s.db"
    (sid,) = _seed(url, 1)
    with open_repo(url) as repo:
        manager = repo.open(sid)
        manager.append_message(user("first"))
        leaf = manager.get_leaf_id()
        index: Any = manager.index
        index.conn._db = _CommitThenFail(index.conn._db)
        with pytest.raises(StorageError, match="a commit failed"):
            write_turn(manager, "ghost")
        assert manager.get_leaf_id() == leaf
        again = write_turn(manager, "again")
        assert [p.kind for p in manager.problems] == ["stale_leaf"]
        manager.close()
    session = stored(url, sid, chain=False)
    ghost = session.ids[2:6]
    assert session.ids[6:] == again
    assert session.by_id()[again[0]]["parentId"] == leaf  # a sibling of the turn it did not know about
    assert [tag for tag, _ in turns_of([session.by_id()[i] for i in ghost])] == ["ghost"]


# -- PostgreSQL server faults --------------------------------------------------------------------------
@pytest.fixture
def pg_url(postgres_url: str, postgres_server: PostgresTarget) -> str:
    return postgres_url


def _acked_turns(manager: Any, prefix: str, n: int) -> list[str]:
    return [i for k in range(n) for i in write_turn(manager, f"{prefix}{k}")]


def test_postgres_restart_mid_turn(pg_url: str, postgres_server: PostgresTarget) -> None:
    """The server restarts inside a turn: a clear StorageError, nothing of that turn written, and the same
    manager writes the next turn once the server is back."""
    with open_repo(pg_url) as repo:
        manager = repo.create("/work/project")
        acked = _acked_turns(manager, "before", 2)
        lost = pytest.raises(StorageError, match="connection to the server was lost")
        with lost as caught, manager.transaction():
            manager.append_message(user("lost"))
            postgres_server.restart()
            manager.append_message(user("lost-too"))
        assert "next call reconnects" in str(caught.value)
        assert manager.get_leaf_id() == acked[-1]
        acked += _acked_turns(manager, "after", 2)
        sid = manager.get_session_id()
        manager.close()
    session = stored(pg_url, sid)
    assert session.ids == acked
    assert [tag for tag, _ in turns_of(session.entries)] == ["before0", "before1", "after0", "after1"]


def test_postgres_gone_inside_a_turn_until_the_error_is_handled(
    pg_url: str, postgres_server: PostgresTarget
) -> None:
    """The server stops inside a turn and is still down when the manager rolls its state back: the manager
    keeps its leaf and labels (no server needed for that), and its next turn continues from that leaf."""
    with open_repo(pg_url) as repo:
        manager = repo.create("/work/project")
        acked = _acked_turns(manager, "before", 1)
        manager.append_label_change(acked[0], "start")
        acked.append(str(manager.get_entries()[-1]["id"]))
        try:
            with (
                pytest.raises(StorageError, match="connection to the server was lost"),
                manager.transaction(),
            ):
                manager.append_message(user("lost"))
                manager.append_label_change(acked[0], "renamed")
                postgres_server.pause()
                manager.append_message(user("lost-too"))
            assert manager.get_leaf_id() == acked[-1]
            assert manager.get_label(acked[0]) == "start"
        finally:
            postgres_server.resume()
        acked += _acked_turns(manager, "after", 1)
        sid = manager.get_session_id()
        manager.close()
    session = stored(pg_url, sid)
    assert session.ids == acked


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgres_restart_between_writes(pg_url: str, postgres_server: PostgresTarget, mode: str) -> None:
    """A restart (``immediate``: a crash of the server) between two calls: every acknowledged entry is
    there, the pool replaces its dead connections and the next call just works."""
    with open_repo(pg_url) as repo:
        manager = repo.create("/work/project")
        acked = _acked_turns(manager, "before", 2)
        postgres_server.restart(mode)  # type: ignore[arg-type]
        acked += _acked_turns(manager, "after", 1)
        assert manager.build_session_context().messages[-1]["content"][0]["text"] == "result after0 2"
        sid = manager.get_session_id()
        manager.close()
    assert stored(pg_url, sid).ids == acked


def test_postgres_down_for_a_while(pg_url: str, postgres_server: PostgresTarget) -> None:
    """The server down for seconds (less than the lease's time to live): each call fails with a clear
    StorageError within the pool timeout, and the same manager goes on when the server is back."""
    from sessiontree.storage.sql.database import POOL_TIMEOUT_S

    with open_repo(with_options(pg_url, lease_ttl_ms=60_000)) as repo:
        manager = repo.create("/work/project")
        acked = _acked_turns(manager, "before", 1)
        with postgres_server.down():
            began = time.monotonic()
            with pytest.raises(StorageError, match="connection to the server was lost"):
                write_turn(manager, "down")
            assert time.monotonic() - began < POOL_TIMEOUT_S * 3
            assert manager.get_leaf_id() == acked[-1]
        acked += _acked_turns(manager, "back", 1)
        sid = manager.get_session_id()
        manager.close()
    assert stored(pg_url, sid).ids == acked


def test_postgres_down_past_the_lease(pg_url: str, postgres_server: PostgresTarget) -> None:
    """Down longer than the lease lasts: once the server is back the writer is told its lease expired and
    that nothing was written; opened again, the session goes on with everything acknowledged."""
    url = with_options(pg_url, lease_ttl_ms=1000)
    with open_repo(url) as repo:
        manager = repo.create("/work/project")
        acked = _acked_turns(manager, "before", 1)
        sid = manager.get_session_id()
        with postgres_server.down():
            time.sleep(1.5)
        with pytest.raises(SessionLockedError, match="lease expired; nothing was written") as caught:
            write_turn(manager, "late")
        assert caught.value.kind == "lease_lost"
        manager.close()
        again = repo.open(sid)
        acked += _acked_turns(again, "again", 1)
        again.close()
    assert stored(url, sid).ids == acked
