"""The connection interface of the SQL back ends (``Conn``), the errors it raises and its time limits.

``database.py`` implements it for SQLite and opens stores; ``postgres.py`` implements it for PostgreSQL.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from sessiontree.errors import StorageError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "CONNECT_TIMEOUT_S",
    "LOCK_WAIT_MS",
    "POOL_TIMEOUT_S",
    "Conn",
    "Dialect",
    "LockWaitTimeout",
    "insert_sql",
    "storage_error",
]

Dialect = Literal["sqlite", "postgresql"]
Row = tuple[Any, ...]


def insert_sql(table: str, columns: str) -> str:
    """``INSERT INTO table (columns) VALUES (?, …)``, a placeholder per column of ``columns`` (comma-separated)."""
    return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(columns.split(',')))})"


BUSY_TIMEOUT_MS = 5000
POOL_TIMEOUT_S = 5.0
"""How long a PostgreSQL call waits for a connection (a restart is waited out; an outage is reported)."""
CONNECT_TIMEOUT_S = 5
"""How long connecting to a PostgreSQL server may take when neither the URL's ``connect_timeout`` nor
``PGCONNECT_TIMEOUT`` says (a server that accepts connections but never answers is reported after it)."""
LOCK_WAIT_MS = BUSY_TIMEOUT_MS
"""How long a writer waits for a row another writer's open transaction holds (PostgreSQL's ``lock_timeout``
where the store sets it; SQLite's busy timeout is the same)."""


class LockWaitTimeout(StorageError):
    """A statement waited ``LOCK_WAIT_MS`` for a row another transaction holds, and gave up."""


class Conn:
    """One logical connection: queries, and write transactions that nest (the outermost one commits)."""

    dialect: Dialect
    display: str

    @property
    def epoch(self) -> int:
        """Moves on whenever a new server connection may be used (never for SQLite): what a caller read
        before may no longer be what the server holds (see the module docstring)."""
        return 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """A plain read (no lock, no setting, no side effect): what ``query`` returns. PostgreSQL sends it
        outside an open transaction that has sent nothing yet (a read takes its own snapshot either way),
        so that a transaction whose writes all go in its last statement needs no ``BEGIN``."""
        return self.query(sql, params)

    def query_last(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """The last write of the outermost open transaction (only reads may follow it): what ``query``
        returns. PostgreSQL sends it alone, in autocommit, when the transaction has sent no statement before
        it (one round trip instead of ``BEGIN``, the statement and ``COMMIT``); a lost connection then leaves
        its outcome unknown, as a commit's."""
        return self.query(sql, params)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        raise NotImplementedError

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def copy_rows(
        self, table: str, columns: str, rows: Sequence[Sequence[Any]], types: Sequence[str] | None = None
    ) -> None:
        """Insert ``rows`` (values of ``columns``, comma-separated; ``types``: the columns' types, when known)
        into ``table`` as a bulk load does (an ``executemany`` of its ``INSERT`` here; PostgreSQL copies)."""
        self.executemany(insert_sql(table, columns), rows)

    _lock: threading.RLock
    """Held by the thread whose transaction is open (a statement of another thread waits for it)."""

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[None]:
        """A transaction (``write``: one that will write); opened inside another, it joins that one, and the
        outermost commits."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            with self._outermost(write):
                yield

    def _outermost(self, write: bool) -> contextlib.AbstractContextManager[None]:
        """The outermost transaction: begin, set ``_depth`` to 1 and ``_owner`` to this thread, commit (or roll
        back on an exception), reset ``_depth``."""
        raise NotImplementedError

    _depth = 0
    _owner: int | None = None  # the thread whose transaction is open
    before_statement: Callable[[], None] | None = None
    """Run (once, then forgotten) before the next statement of the open transaction: a writer that holds rows
    back to send them with its commit sends them first, so that every statement sees them."""

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread has a transaction open on this connection (another thread's, such as
        the lease heartbeat's, does not count: the caller must wait for it and open its own)."""
        return self._depth > 0 and self._owner == threading.get_ident()

    def maintenance(self, sql: str, lock_wait: str) -> None:
        """A statement that cannot run in a transaction (PostgreSQL's ``VACUUM``), on a connection of its own
        outside any transaction, waiting at most ``lock_wait`` (``'2s'``) for a lock; only PostgreSQL has one."""
        raise NotImplementedError

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Around the statements of a large batch of writes (settings that suit them; none by default)."""
        yield

    def close(self) -> None:
        raise NotImplementedError


def storage_error(display: str, what: str, exc: BaseException) -> StorageError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageError(f"{display}: {what} failed: {text}")
