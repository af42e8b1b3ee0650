"""Taking a PostgreSQL writer lease behind a stalled writer: a writer whose write transaction stays open past
its lease's time to live (a SIGSTOP, a GC pause, slow work inside ``transaction()``) holds the lease row's
lock. Another writer waits for it a bounded time (``LOCK_WAIT_MS``) and is told who holds it; a lease it takes
after waiting lasts its whole time to live from the moment it is taken; the stalled writer writes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sessiontree import open_repo
from sessiontree.errors import SessionLockedError
from sessiontree.storage.sql.database import LOCK_WAIT_MS
from tests.backends.conftest import with_options
from tests.backends.sql_workers import stored, user

TTL_MS = 400


class StalledWriter:
    """A writer in a thread: it writes one entry, then opens a transaction, writes in it (two entries: the
    second's check sends the first, renewing, and so locking, its lease row) and stalls until ``release()``;
    then it tries to write once more. (A transaction that sent nothing yet locks nothing:
    ``test_pg_autocommit``.)"""

    def __init__(self, url: str, sid: str) -> None:
        self.repo = open_repo(url)
        self.manager = self.repo.open(sid)
        self.first = self.manager.append_message(user("A first"))
        self.owner = self.manager.index._lease.owner  # type: ignore[attr-defined]
        self.inside, self._go, self.done = threading.Event(), threading.Event(), threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        assert self.inside.wait(10)

    def _run(self) -> None:
        try:
            with self.manager.transaction():
                self.manager.append_message(user("A stalled"))
                self.manager.append_message(user("A stalled, the second"))
                self.inside.set()
                self._go.wait(60)
                self.manager.append_message(user("A after the stall"))
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def release(self) -> None:
        self._go.set()
        self.thread.join(30)
        assert not self.thread.is_alive()

    def close(self) -> None:
        self._go.set()
        self.thread.join(30)
        self.manager.close()
        self.repo.close()


@pytest.fixture
def lease_url(postgres_url: str) -> Iterator[tuple[str, str]]:
    url = with_options(postgres_url, lease_ttl_ms=TTL_MS)
    with open_repo(url) as repo:
        manager = repo.create("/work/project")
        manager.append_message(user("seed"))
        sid = manager.get_session_id()
        manager.close()
    yield url, sid


def _in_thread(call: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        began = time.monotonic()
        try:
            out["value"] = call()
        except BaseException as exc:
            out["error"] = exc
        out["seconds"] = time.monotonic() - began

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_taking_the_lease_behind_a_stalled_writer_is_bounded(lease_url: tuple[str, str]) -> None:
    """While A stalls inside its transaction, B's write gives up after ``LOCK_WAIT_MS`` with a
    ``SessionLockedError`` naming A, instead of waiting for as long as A stalls; once A goes on (and
    writes nothing: its lease expired), B takes the lease and writes, also after more than one TTL."""
    url, sid = lease_url
    a = StalledWriter(url, sid)
    try:
        time.sleep(TTL_MS * 2 / 1000)  # A's committed lease has expired; its transaction still holds the row
        with open_repo(url) as repo:
            b = repo.open(sid, stale_leaf="latest")
            thread, out = _in_thread(lambda: b.append_message(user("B first")))
            thread.join(LOCK_WAIT_MS / 1000 + 20)
            returned = not thread.is_alive()  # while A still stalls
            a.release()
            thread.join(60)
            assert returned, "B was still waiting for A's transaction to end"
            error = out.get("error")
            assert isinstance(error, SessionLockedError), out
            assert (
                a.owner in str(error)
                and "stalled writer" in str(error)
                and "nothing was written" in str(error)
            )
            assert out["seconds"] < LOCK_WAIT_MS / 1000 + 10

            assert isinstance(a.error, SessionLockedError) and a.error.kind == "lease_lost"
            ids = [b.append_message(user("B second"))]
            time.sleep(TTL_MS * 1.5 / 1000)
            ids.append(b.append_message(user("B third")))
            b.close()
    finally:
        a.close()
    session = stored(url, sid)
    assert session.ids[1:] == [a.first, *ids]
    assert not any("A stalled" in str(e) or "A after" in str(e) for e in session.entries)


def test_a_lease_taken_after_waiting_lasts_from_when_it_was_taken(lease_url: tuple[str, str]) -> None:
    """A stalls for several TTLs but less than ``LOCK_WAIT_MS``; B waits for A's row meanwhile and gets the
    lease when A's transaction ends. Its expiry counts from then, not from when B began to wait: B's writes
    go through (they failed with "lease expired" when the expiry was computed before the wait)."""
    url, sid = lease_url
    a = StalledWriter(url, sid)
    try:
        time.sleep(TTL_MS * 2 / 1000)
        with open_repo(url) as repo:
            b = repo.open(sid, stale_leaf="latest")
            thread, out = _in_thread(lambda: b.append_message(user("B first")))
            time.sleep(TTL_MS * 4 / 1000)  # B waits on A's row lock all this time
            assert thread.is_alive(), out
            a.release()
            thread.join(60)
            assert "value" in out, out
            assert isinstance(a.error, SessionLockedError) and a.error.kind == "lease_lost"
            second = b.append_message(user("B second"))
            b.close()
    finally:
        a.close()
    assert stored(url, sid).ids[1:] == [a.first, out["value"], second]
