"""Connections to the SQL back ends: SQLite (stdlib ``sqlite3``) and PostgreSQL (``psycopg`` 3 with a pool),
behind one small interface: queries, write transactions, and errors that say what failed.

SQL is written once with ``?`` placeholders and translated for psycopg. It knows nothing about sessions;
the schema lives in ``schema.py`` and the session logic in ``session.py`` and ``repo.py``.

Store URLs take options as query parameters, which are never passed on to the driver: ``synchronous``
(SQLite's pragma: ``FULL``, the default, ``NORMAL``, ``EXTRA`` or ``OFF``), ``synchronous_commit``
(PostgreSQL's setting for this store's connections: ``on``, the server's default, ``off``, ``local``,
``remote_write`` or ``remote_apply``) and ``lease_ttl_ms`` (both: how long a writer lease lasts without
renewal, default 30 000). Other query parameters of a ``postgresql://`` URL go to libpq as they are; its
``connect_timeout`` (seconds, at least 2) defaults to ``CONNECT_TIMEOUT_S`` here rather than libpq's wait.

A PostgreSQL connection can be lost (a restart, a crash, a failover) and the pool then makes new ones; each
new connection moves ``Conn.epoch`` on, which tells a writer to check what the server really holds before it
writes again (a crash with ``synchronous_commit=off`` may lose the last commits it acknowledged).
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from sessiontree.errors import SessionError
from sessiontree.storage.sql.conn import (
    BUSY_TIMEOUT_MS,
    CONNECT_TIMEOUT_S,
    LOCK_WAIT_MS,
    POOL_TIMEOUT_S,
    Conn,
    Dialect,
    LockWaitTimeout,
    Row,
    storage_error,
)
from sessiontree.storage.sql.files import open_sqlite
from sessiontree.storage.sql.postgres import PgConn, open_pool

__all__ = [
    "BUSY_TIMEOUT_MS",
    "CONNECT_TIMEOUT_S",
    "DEFAULT_LEASE_TTL_MS",
    "LOCK_WAIT_MS",
    "POOL_TIMEOUT_S",
    "Conn",
    "Database",
    "Dialect",
    "LockWaitTimeout",
    "parse_sql_url",
]

DEFAULT_LEASE_TTL_MS = 30_000

SQLITE_SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA", "OFF")
SQLITE_BULK_CACHE_KIB = 64 << 10
"""The page cache of a connection while it writes a batch of entries (an import): the indexes' pages stay
in memory instead of being read again for each row; put back to SQLite's default afterwards."""
PG_SYNCHRONOUS_COMMIT = ("on", "off", "local", "remote_write", "remote_apply")
_OPTIONS = ("synchronous", "synchronous_commit", "lease_ttl_ms")


@dataclass(frozen=True, slots=True)
class SqlUrl:
    """A parsed store URL: the dialect, what to connect to, and a form safe to show (no password)."""

    dialect: Dialect
    target: str  # a file path for SQLite, a conninfo URL for PostgreSQL (without sessiontree's options)
    display: str
    options: dict[str, str]


def _split_options(shown: str, query: str, dialect: Dialect) -> tuple[dict[str, str], str]:
    """sessiontree's options out of a URL's query string, and the rest of it verbatim (libpq decodes it)."""
    ours: dict[str, str] = {}
    rest: list[str] = []
    known = ("synchronous_commit" if dialect == "postgresql" else "synchronous", "lease_ttl_ms")
    for piece in query.split("&") if query else ():
        name, _, value = piece.partition("=")
        if unquote(name) in _OPTIONS:
            if unquote(name) not in known:
                raise SessionError(
                    f"{shown}: {unquote(name)} is not an option of {dialect} stores", kind="invalid_argument"
                )
            ours[unquote(name)] = unquote(value)
        elif dialect == "postgresql":
            rest.append(piece)
        else:
            raise SessionError(
                f"{shown}: unknown store option {unquote(name)!r} (known: {', '.join(known)})",
                kind="invalid_argument",
            )
    return ours, "&".join(rest)


def parse_sql_url(url: str) -> SqlUrl:
    """``sqlite:///relative.db`` and ``sqlite:////absolute.db`` (SQLAlchemy's convention: the path follows
    the third slash), ``sqlite:path.db``; ``postgresql://…`` / ``postgres://…``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        raw = url[len("sqlite:") :]
        path = raw[3:] if raw.startswith("///") else raw[2:] if raw.startswith("//") else raw
        path, _, query = path.partition("?")
        path = unquote(path)
        if not path:
            raise SessionError(f"{url}: a SQLite store URL needs a file path", kind="invalid_argument")
        options, _ = _split_options(url, query, "sqlite")
        resolved = str(Path(path).expanduser().resolve())
        return SqlUrl("sqlite", resolved, f"sqlite:///{resolved}", options)
    if scheme in ("postgresql", "postgres"):
        netloc = parts.netloc
        if "@" in netloc:
            credentials, host = netloc.rsplit("@", 1)
            netloc = f"{credentials.split(':', 1)[0]}@{host}"  # never show a password
        options, query = _split_options(
            urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")), parts.query, "postgresql"
        )
        target = urlunsplit((parts.scheme, parts.netloc, parts.path, query, "")) if options else url
        display = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
        return SqlUrl("postgresql", target, display, options)
    raise SessionError(f"Unsupported store URL: {url}", kind="invalid_argument")


def _choice(url: str, name: str, value: str, allowed: tuple[str, ...]) -> str:
    for choice in allowed:
        if value.lower() == choice.lower():
            return choice
    raise SessionError(
        f"{url}: {name} must be one of {', '.join(allowed)}, not {value!r}", kind="invalid_argument"
    )


def _positive_int(url: str, name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise SessionError(
            f"{url}: {name} must be a positive whole number, not {value!r}", kind="invalid_argument"
        )
    return number


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _enter_wal(db: sqlite3.Connection) -> None:
    """Put the database in WAL mode, waiting out other processes doing the same.

    Changing the journal mode takes an exclusive lock without calling SQLite's busy handler, so several
    processes opening a new database at once get ``database is locked`` at once rather than after the busy
    timeout; this waits (up to the busy timeout) as every other statement does. WAL mode is kept in the
    file, so once any process has set it the others only read it.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.002
    while True:
        try:
            (mode,) = db.execute("PRAGMA journal_mode").fetchone()
            if str(mode).lower() != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


class SqliteConn(Conn):
    """A ``sqlite3`` connection in WAL mode; statements outside a transaction autocommit."""

    dialect: Dialect = "sqlite"

    def __init__(self, path: str, display: str, *, synchronous: str = "FULL", create: bool = True) -> None:
        self.display = display
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self._db = open_sqlite(path, display, create=create, timeout=30)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enter_wal(self._db)
            self._db.execute(f"PRAGMA synchronous = {synchronous}")
            self._db.execute("PRAGMA foreign_keys = ON")
            # No mmap_size: mapped reads halve get_tree's time, but an I/O error or a file cut short under a
            # reader then kills the process with SIGBUS instead of raising an error a caller can handle.
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(display, "opening the database", exc) from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(self.display, "a query", exc) from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._lock:
            try:
                return self._db.execute(sql, params).rowcount
            except sqlite3.Error as exc:
                raise storage_error(self.display, "a write", exc) from exc

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            try:
                self._db.executemany(sql, rows)
            except sqlite3.Error as exc:
                raise storage_error(self.display, "a write", exc) from exc

    @contextlib.contextmanager
    def _outermost(self, write: bool) -> Iterator[None]:
        try:
            self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise storage_error(self.display, "starting a transaction", exc) from exc
        self._depth, self._owner = 1, threading.get_ident()
        try:
            yield
        except BaseException:
            self._depth = 0
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise
        self._depth = 0
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise storage_error(self.display, "a commit", exc) from exc

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        with self._lock:
            (previous,) = self._db.execute("PRAGMA cache_size").fetchone()
            self._db.execute(f"PRAGMA cache_size = -{SQLITE_BULK_CACHE_KIB}")
            try:
                yield
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute(f"PRAGMA cache_size = {int(previous)}")

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()


class Database:
    """A SQL store's connections: one per session index for SQLite, a shared pool for PostgreSQL.

    Keyword arguments override the URL's options (see the module docstring); ``lease_ttl_ms`` is read by
    the sessions' writer leases.
    """

    def __init__(
        self,
        url: str,
        *,
        synchronous: str | None = None,
        synchronous_commit: str | None = None,
        lease_ttl_ms: int | None = None,
        pool_size: int = 8,
    ) -> None:
        parsed = parse_sql_url(url)
        self.url = url
        self.dialect: Dialect = parsed.dialect
        self.display = parsed.display
        self._target = parsed.target
        options = parsed.options
        self.synchronous = _choice(
            url, "synchronous", synchronous or options.get("synchronous", "FULL"), SQLITE_SYNCHRONOUS
        )
        commit = synchronous_commit or options.get("synchronous_commit")
        self.synchronous_commit = (
            None
            if commit is None
            else _choice(self.display, "synchronous_commit", commit, PG_SYNCHRONOUS_COMMIT)
        )
        ttl = options.get("lease_ttl_ms")
        self.lease_ttl_ms = (
            lease_ttl_ms
            if lease_ttl_ms is not None
            else (
                _positive_int(self.display, "lease_ttl_ms", ttl) if ttl is not None else DEFAULT_LEASE_TTL_MS
            )
        )
        self._pool: Any = None
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._connections = itertools.count(1)
        self._epoch = 0  # how many server connections the pool has made
        self.remote = parsed.dialect == "postgresql"

    def connect(self, *, create: bool = True) -> Conn:
        """A connection of its own (SQLite) or a handle on the shared pool (PostgreSQL); without ``create``, a
        SQLite store whose file does not exist is ``SessionNotFoundError`` (nothing is created)."""
        if self.dialect == "sqlite":
            return SqliteConn(self._target, self.display, synchronous=self.synchronous, create=create)
        return PgConn(self._shared_pool(), self.display, lambda: self._epoch)

    def _shared_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                self._pool = open_pool(self._target, self.display, self._pool_size, self._configure)
            return self._pool

    def _configure(self, conn: Any) -> None:
        """Run on every new pooled connection (in the pool's threads)."""
        if self.synchronous_commit is not None:
            # A setting of each pooled connection: no statement of its own in every write transaction.
            conn.execute(f"SET synchronous_commit = {self.synchronous_commit}")
        self._epoch = next(self._connections)

    def close(self) -> None:
        """Close the pool (PostgreSQL); SQLite connections are closed by their owners."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
