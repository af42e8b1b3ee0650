"""PostgreSQL connections (``psycopg`` 3 with a pool) behind ``Conn``: opening the pool, statements on
borrowed connections, and errors that say whether anything was written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sessiontree.errors import SessionError, StorageError
from sessiontree.storage.sql.conn import (
    CONNECT_TIMEOUT_S,
    POOL_TIMEOUT_S,
    Conn,
    Dialect,
    LockWaitTimeout,
    Row,
    storage_error,
)

__all__ = ["PgConn", "check_connection", "open_pool"]


def open_pool(target: str, display: str, pool_size: int, configure: Callable[[Any], None]) -> Any:
    """The pool, opened after one plain connection succeeded: an unreachable server is reported once,
    in one line and within the connect timeout, instead of after the pool's retries and their log lines."""
    try:
        import psycopg
        from psycopg_pool import ConnectionPool
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise SessionError(
            "PostgreSQL stores need psycopg and psycopg-pool: pip install 'sessiontree[postgres]'",
            kind="invalid_argument",
        ) from exc
    _quiet_pool_log()
    kwargs: dict[str, Any] = {"autocommit": True}
    try:
        named = psycopg.conninfo.conninfo_to_dict(target)
    except psycopg.Error as exc:
        raise StorageError(f"{display}: not a valid PostgreSQL URL: {_one_line(exc)}") from exc
    if "connect_timeout" not in named and not os.environ.get("PGCONNECT_TIMEOUT"):
        kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
    try:
        psycopg.connect(target, **kwargs).close()
    except psycopg.Error as exc:
        text = _one_line(exc)
        if "timeout expired" in text:
            waited = named.get("connect_timeout") or os.environ.get("PGCONNECT_TIMEOUT") or CONNECT_TIMEOUT_S
            text += f" (no answer within {waited} s; the URL's connect_timeout sets how long to wait)"
        raise StorageError(f"{display}: cannot connect: {text}") from exc
    pool = ConnectionPool(
        target,
        min_size=1,
        max_size=pool_size,
        kwargs=kwargs,
        configure=configure,
        check=check_connection,
        timeout=POOL_TIMEOUT_S,
        open=False,
        name="sessiontree",
    )
    try:
        pool.open(wait=True, timeout=POOL_TIMEOUT_S + float(kwargs.get("connect_timeout", 0)))
    except Exception as exc:
        pool.close()
        raise StorageError(f"{display}: cannot connect: {_one_line(exc)}") from exc
    return pool


def check_connection(conn: Any) -> None:
    """The pool's check of a connection it hands out, without a round trip when none is needed.

    An idle connection that is still open has nothing to read; one the server closed (a restart, a crash,
    a terminated backend) is readable: the server's goodbye, or the end of the stream. Only then, or when
    the socket cannot be polled, is the round trip of psycopg's own check made, which raises for a dead
    connection so that the pool replaces it before the caller sees it.
    """
    from psycopg import pq
    from psycopg_pool import ConnectionPool

    pgconn = conn.pgconn
    if pgconn.status == pq.ConnStatus.OK and pgconn.transaction_status == pq.TransactionStatus.IDLE:
        try:
            poller = select.poll()
            poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
            if not poller.poll(0):
                return
        except (OSError, ValueError, AttributeError):  # no socket to poll: ask the server
            pass
    ConnectionPool.check_connection(conn)


class PgConn(Conn):
    """Statements on connections borrowed from a pool; a transaction keeps one connection until it ends.

    A transaction sends its ``BEGIN`` with its first statement that needs it (``read`` does not), so one
    whose only write is its last statement (``query_last``) sends that alone, in autocommit: the statement
    is atomic by itself, and a writer puts in it all that must land together (the lease renewal that fences
    it, the rows, the session row).

    A lost connection (a restarted server, a network failure) surfaces as ``StorageError`` and the pool
    replaces it, so the next call works again once the server is back.
    """

    dialect: Dialect = "postgresql"

    def __init__(self, pool: Any, display: str, epoch: Callable[[], int]) -> None:
        self.display = display
        self._pool = pool
        self._lock = threading.RLock()
        self._held: Any = None
        self._begin: Callable[[], None] | None = None  # opens the held connection's transaction, once
        self._depth = 0
        self._epoch = epoch

    @property
    def epoch(self) -> int:
        return self._epoch()

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def _run(self, conn: Any, sql: str, params: Sequence[Any], fetch: bool) -> Any:
        cursor = conn.execute(self._sql(sql), params)
        if fetch:
            return [tuple(r) for r in cursor.fetchall()]
        return cursor.rowcount

    def _call(self, sql: str, params: Sequence[Any], fetch: bool, what: str, *, begin: bool = True) -> Any:
        import psycopg

        with self._lock:
            self._before_statement()
            try:
                if self._held is not None:
                    if begin:
                        self._open()
                    return self._run(self._held, sql, params, fetch)
                with self._pool.connection() as conn:
                    return self._run(conn, sql, params, fetch)
            except psycopg.Error as exc:
                raise _pg_error(self.display, what, exc) from exc

    def _open(self) -> None:
        """Send the open transaction's ``BEGIN`` if it has not been sent."""
        begin, self._begin = self._begin, None
        if begin is not None:
            begin()

    def _before_statement(self) -> None:
        hook = self.before_statement
        if hook is not None and self._held is not None:
            self.before_statement = None
            hook()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        result: list[Row] = self._call(sql, params, True, "a query")
        return result

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        result: list[Row] = self._call(sql, params, True, "a query", begin=False)
        return result

    def query_last(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        import psycopg

        with self._lock:
            self._before_statement()
            if self._held is None or self._begin is None or self._depth != 1:
                return self.query(sql, params)  # inside the transaction, which commits it
            self._begin = None  # what follows (reads only) runs in autocommit too
            try:
                result: list[Row] = self._run(self._held, sql, params, True)
            except psycopg.Error as exc:
                lost = isinstance(exc, psycopg.OperationalError)
                raise _pg_error(self.display, "a commit" if lost else "a write", exc) from exc
            return result

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        result: int = self._call(sql, params, False, "a write")
        return result

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._with_cursor(lambda cur: cur.executemany(self._sql(sql), rows))

    def copy_rows(
        self, table: str, columns: str, rows: Sequence[Sequence[Any]], types: Sequence[str] | None = None
    ) -> None:
        """``COPY … FROM STDIN``: one statement for every row, where ``executemany`` has the server run an
        ``INSERT`` per row; with ``types`` (the columns' PostgreSQL types) in the binary format, which sends
        ``bytea`` as it is rather than as hexadecimal text twice its size."""
        how = " (FORMAT BINARY)" if types is not None else ""

        def copy(cur: Any) -> None:
            with cur.copy(f"COPY {table} ({columns}) FROM STDIN{how}") as out:
                if types is not None:
                    out.set_types(types)
                for row in rows:
                    out.write_row(row)

        if rows:
            self._with_cursor(copy)

    def _with_cursor(self, work: Callable[[Any], None]) -> None:
        """``work(cursor)`` on the open transaction's connection (its ``BEGIN`` sent first), else a pooled one."""
        import psycopg

        with self._lock:
            self._before_statement()
            try:
                if self._held is not None:
                    self._open()
                    with self._held.cursor() as cur:
                        work(cur)
                    return
                with self._pool.connection() as conn, conn.cursor() as cur:
                    work(cur)
            except psycopg.Error as exc:
                raise _pg_error(self.display, "a write", exc) from exc

    def maintenance(self, sql: str, lock_wait: str) -> None:
        """``sql`` in autocommit on a pooled connection, its ``lock_timeout`` set for it and reset after (the
        connection goes back to the pool as it came). It does not take this handle's lock: another thread's
        statements (the lease heartbeat's) go on meanwhile, on connections of their own."""
        import psycopg

        if self.in_transaction:
            raise StorageError(f"{self.display}: {sql.split()[0]} cannot run inside a transaction")
        try:
            with self._pool.connection() as conn:
                conn.execute(f"SET lock_timeout = '{lock_wait}'")
                try:
                    conn.execute(sql)
                finally:
                    conn.execute("RESET lock_timeout")
        except psycopg.Error as exc:
            raise _pg_error(self.display, sql.split()[0], exc) from exc

    @contextlib.contextmanager
    def _outermost(self, write: bool) -> Iterator[None]:
        import psycopg

        committing = False
        try:
            with self._pool.connection() as conn, contextlib.ExitStack() as begun:
                self._held, self._depth, self._owner = conn, 1, threading.get_ident()
                self._begin = lambda: begun.enter_context(conn.transaction())
                try:
                    yield
                    committing = True
                finally:
                    self._held, self._depth, self.before_statement, self._begin = None, 0, None, None
        except psycopg.Error as exc:
            raise _pg_error(self.display, "a commit" if committing else "a transaction", exc) from exc

    def close(self) -> None:
        """Connections belong to the pool: nothing to release here."""


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (libpq's run over several: the failure, then a hint)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


def _quiet_pool_log() -> None:
    """psycopg_pool logs each failed connection attempt as a warning; with no logging set up, Python prints
    those on stderr. A do-nothing handler keeps them off the terminal; applications that configure logging
    still get them (they propagate)."""
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(h, logging.NullHandler) for h in pool_log.handlers):
        pool_log.addHandler(logging.NullHandler())


def _pg_error(display: str, what: str, exc: BaseException) -> StorageError:
    import psycopg
    from psycopg_pool import PoolClosed

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if getattr(exc, "sqlstate", None) == "55P03":  # lock_not_available: lock_timeout or NOWAIT
        return LockWaitTimeout(f"{display}: {what} failed: {text}")
    if isinstance(exc, PoolClosed):
        return StorageError(f"{display}: {what} failed: the store was closed ({text})")
    if isinstance(exc, psycopg.OperationalError):
        outcome = (
            "whether the commit took effect is unknown (the next write of this session checks)"
            if what == "a commit"
            else "nothing of that operation was written"
        )
        return StorageError(
            f"{display}: {what} failed, the connection to the server was lost ({text}); {outcome}, and the "
            "next call reconnects"
        )
    return storage_error(display, what, exc)
