"""The fenced writer lease: one writer per session across processes and hosts.

A row ``(session_id, owner, fence, expires_at_ms)`` in ``st_writer_leases``. Acquiring succeeds only when no
lease exists or the old one expired, and bumps the fence; every write transaction renews the lease with a
statement that matches owner, fence and an unexpired time (first, or on PostgreSQL in the statement that sends
its rows, which writes them only when the renewal changed the row), so a writer whose lease expired or was
taken over writes nothing. A heartbeat renews it between writes. Times come from the database's clock, so
hosts need not agree on theirs. No advisory session locks: they break behind transaction-mode poolers.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid

from sessiontree.errors import SessionError, SessionLockedError
from sessiontree.storage.sql.database import DEFAULT_LEASE_TTL_MS, LOCK_WAIT_MS, Conn, LockWaitTimeout

__all__ = ["DEFAULT_TTL_MS", "WriterLease", "new_owner"]

DEFAULT_TTL_MS = DEFAULT_LEASE_TTL_MS


def new_owner() -> str:
    """``host:pid:random``: names the holder in the error a second writer gets."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _now(conn: Conn) -> str:
    if conn.dialect == "postgresql":
        return "(CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT))"
    return "(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))"


class WriterLease:
    """A session's writer lease as held (or not) by this process."""

    def __init__(
        self, conn: Conn, session_id: str, *, ttl_ms: int = DEFAULT_TTL_MS, owner: str | None = None
    ):
        self.conn = conn
        self.session_id = session_id
        self.ttl_ms = ttl_ms
        self.owner = owner or new_owner()
        self.fence: int | None = None
        self.lost: str | None = None
        self._confirmed = conn.epoch  # the store's connections when the lease row was last seen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self.fence is not None and self.lost is None

    def acquire(self) -> None:
        """Take the lease (a new one, or an expired one); ``SessionLockedError`` naming the holder if not.

        Never waits long: a lease another writer holds is reported from the committed row at once (reads
        do not wait for its open transaction), and taking an expired lease whose row a stalled writer's
        transaction still locks waits ``LOCK_WAIT_MS`` at most (PostgreSQL; SQLite's busy timeout bounds
        the whole transaction). The expiry is computed when the row is taken, after any wait.
        """
        now = _now(self.conn)
        where = f"{self.conn.display}#{self.session_id}"
        epoch = self.conn.epoch
        with self.conn.transaction():
            seen = self.conn.query_one(
                f"SELECT owner, expires_at_ms - {now} FROM st_writer_leases WHERE session_id = ?",
                (self.session_id,),
            )
            if seen is not None and seen[0] != self.owner and int(seen[1]) > 0:
                raise SessionLockedError(self._held_by(str(seen[0]), int(seen[1])))
            restore = self._bound_lock_wait()
            try:
                self.conn.execute(
                    "INSERT INTO st_writer_leases (session_id, owner, fence, expires_at_ms) "
                    f"VALUES (?, ?, 1, {now} + ?) "
                    "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
                    f"fence = st_writer_leases.fence + 1, expires_at_ms = {now} + ? "
                    f"WHERE st_writer_leases.expires_at_ms <= {now}",
                    (self.session_id, self.owner, self.ttl_ms, self.ttl_ms),
                )
            except LockWaitTimeout:
                holder = f"{seen[0]}, whose lease expired" if seen is not None else "another writer taking it"
                raise SessionLockedError(
                    f"{where}: the writer lease is held by {holder}, by a write transaction still open after "
                    f"{LOCK_WAIT_MS / 1000:.0f} s (a stalled writer; it writes nothing more once it goes on); "
                    "nothing was written, try again"
                ) from None
            if restore is not None:
                self.conn.query("SELECT set_config('lock_timeout', ?, true)", (restore,))
            row = self.conn.query_one(
                f"SELECT owner, fence, expires_at_ms - {now} FROM st_writer_leases WHERE session_id = ?",
                (self.session_id,),
            )
        assert row is not None
        holder, fence, remaining = row
        if holder != self.owner:
            raise SessionLockedError(self._held_by(str(holder), int(remaining)))
        self.fence, self.lost, self._confirmed = int(fence), None, epoch
        self._start_heartbeat()

    def _held_by(self, holder: str, remaining_ms: int) -> str:
        return (
            f"{self.conn.display}#{self.session_id} is being written by {holder} (its writer lease "
            f"expires in {max(0, remaining_ms) / 1000:.1f} s unless renewed)"
        )

    def _bound_lock_wait(self) -> str | None:
        """PostgreSQL: make the rest of this transaction wait ``LOCK_WAIT_MS`` at most for a row lock;
        returns the setting to put back (``None`` for SQLite, whose busy timeout already bounds it)."""
        if self.conn.dialect != "postgresql":
            return None
        (previous,) = self.conn.query_one("SELECT current_setting('lock_timeout')") or ("0",)
        self.conn.query("SELECT set_config('lock_timeout', ?, true)", (f"{LOCK_WAIT_MS}ms",))
        return str(previous)

    def reclaim(self) -> None:
        """After the store reconnected: take the lease again when the server no longer has this writer's
        row (a crash lost the commit that took it); another writer's row is left for ``renew`` to report."""
        if self.fence is None or self.lost is not None:
            return
        epoch = self.conn.epoch
        row = self.conn.query_one(
            "SELECT owner, fence FROM st_writer_leases WHERE session_id = ?", (self.session_id,)
        )
        if row is None or (row[0] == self.owner and int(row[1]) != self.fence):
            self.fence = None
            self.acquire()
        elif row[0] == self.owner:
            self._confirmed = epoch

    def renew(self) -> None:
        """Extend the lease inside the caller's write transaction; ``SessionLockedError`` when it is lost."""
        sql, params = self.renewal()
        epoch = self.conn.epoch
        self.renewed(self.conn.execute(sql, params), epoch)

    def renewal(self) -> tuple[str, tuple[object, ...]]:
        """The statement that extends the lease (it changes one row when the lease is still this writer's)
        and its parameters, for ``renewed`` to judge; ``SessionLockedError`` when no lease is held."""
        if self.fence is None:
            raise SessionLockedError(f"{self.conn.display}#{self.session_id}: this writer holds no lease")
        if self.lost is not None:
            raise SessionLockedError(self.lost, kind="lease_lost")
        now = _now(self.conn)
        return (
            f"UPDATE st_writer_leases SET expires_at_ms = {now} + ? "
            f"WHERE session_id = ? AND owner = ? AND fence = ? AND expires_at_ms > {now}",
            (self.ttl_ms, self.session_id, self.owner, self.fence),
        )

    def renewed(self, changed: int, epoch: int) -> None:
        """After the ``renewal`` statement changed ``changed`` rows on connections of ``epoch``: nothing when
        it renewed the lease, else ``SessionLockedError`` saying why (inside the same transaction)."""
        if self.lost is None:
            if changed == 1:
                self._confirmed = epoch
                return
            row = self.conn.query_one(
                "SELECT owner, fence FROM st_writer_leases WHERE session_id = ?", (self.session_id,)
            )
            if row is None and epoch != self._confirmed:
                # the server lost the row since the store reconnected (a crash with synchronous_commit=off):
                # not lost to another writer; the next write takes it again (``reclaim``) after its check
                raise SessionLockedError(
                    f"{self.conn.display}#{self.session_id}: the writer lease is no longer stored after a "
                    "reconnection; nothing was written (the next write takes it again)"
                )
            self.lost = self._describe_loss(row)
        if self.lost is not None:
            raise SessionLockedError(self.lost, kind="lease_lost")

    def _describe_loss(self, row: tuple[object, ...] | None) -> str:
        where = f"{self.conn.display}#{self.session_id}"
        if row is None or (row[0] == self.owner and row[1] == self.fence):
            return f"{where}: this writer's lease expired; nothing was written (open the session again)"
        return (
            f"{where}: this writer's lease was taken over by {row[0]}; nothing was written (open the session "
            "again to continue from what it wrote)"
        )

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._beat, name="sessiontree-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        interval = self.ttl_ms / 3000
        while not self._stop.wait(interval):
            try:
                with self.conn.transaction():
                    self.renew()
            except SessionError:  # lost, or the server is away: the next write reports it clearly
                if self.lost is not None:
                    return

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def forget(self) -> None:
        """Drop the lease without touching its row: the transaction that took it was rolled back."""
        self._stop_heartbeat()
        self.fence = None

    def release(self) -> None:
        """Stop the heartbeat and delete the lease if it is still ours (idempotent)."""
        self._stop_heartbeat()
        if self.fence is None:
            return
        fence, self.fence = self.fence, None
        try:
            self.conn.execute(
                "DELETE FROM st_writer_leases WHERE session_id = ? AND owner = ? AND fence = ?",
                (self.session_id, self.owner, fence),
            )
        except SessionError:  # the lease expires by itself; a release must never hide the caller's own error
            return
