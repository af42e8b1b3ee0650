"""Connections to the SQL back ends: SQLite (stdlib ``sqlite3``) and PostgreSQL (``psycopg`` 3 with a pool),
behind one small interface: queries, write transactions, and errors that say what failed.

SQL is written once with ``?`` placeholders and translated for psycopg. It knows nothing about sessions;
the schema lives in ``schema.py`` and the session logic in ``session.py`` and ``repo.py``.

Store URLs take options as query parameters, which are never passed on to the driver: ``synchronous``
(SQLite's pragma: ``FULL``, the default, ``NORMAL``, ``EXTRA`` or ``OFF``), ``synchronous_commit``
(PostgreSQL's setting for this store's connections: ``on``, the server's default, ``off``, ``local``,
``remote_write`` or ``remote_apply``) and ``lease_ttl_ms`` (both: how long a writer lease lasts without
renewal, default 30 000). Other query parameters of a ``postgresql://`` URL go to libpq as they are.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from sessiontree.errors import SessionError, StorageError
from sessiontree.storage.sql.files import open_sqlite

__all__ = ["DEFAULT_LEASE_TTL_MS", "Conn", "Database", "Dialect", "parse_sql_url"]

Dialect = Literal["sqlite", "postgresql"]
Row = tuple[Any, ...]

BUSY_TIMEOUT_MS = 5000
DEFAULT_LEASE_TTL_MS = 30_000
POOL_TIMEOUT_S = 5.0
"""How long a PostgreSQL call waits for a connection (a restart is waited out; an outage is reported)."""

SQLITE_SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA", "OFF")
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


class Conn:
    """One logical connection: queries, and write transactions that nest (the outermost one commits)."""

    dialect: Dialect
    display: str

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        raise NotImplementedError

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def transaction(self, *, write: bool = True) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    _depth = 0
    _owner: int | None = None  # the thread whose transaction is open

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread has a transaction open on this connection (another thread's, such as
        the lease heartbeat's, does not count: the caller must wait for it and open its own)."""
        return self._depth > 0 and self._owner == threading.get_ident()

    def close(self) -> None:
        raise NotImplementedError


def _storage_error(display: str, what: str, exc: BaseException) -> StorageError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageError(f"{display}: {what} failed: {text}")


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
        except (sqlite3.Error, OSError) as exc:
            raise _storage_error(display, "opening the database", exc) from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _storage_error(self.display, "a query", exc) from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._lock:
            try:
                return self._db.execute(sql, params).rowcount
            except sqlite3.Error as exc:
                raise _storage_error(self.display, "a write", exc) from exc

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            try:
                self._db.executemany(sql, rows)
            except sqlite3.Error as exc:
                raise _storage_error(self.display, "a write", exc) from exc

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise _storage_error(self.display, "starting a transaction", exc) from exc
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
                raise _storage_error(self.display, "a commit", exc) from exc

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()


class PgConn(Conn):
    """Statements on connections borrowed from a pool; a transaction keeps one connection until it ends.

    A lost connection (a restarted server, a network failure) surfaces as ``StorageError`` and the pool
    replaces it, so the next call works again once the server is back.
    """

    dialect: Dialect = "postgresql"

    def __init__(self, pool: Any, display: str) -> None:
        self.display = display
        self._pool = pool
        self._lock = threading.RLock()
        self._held: Any = None
        self._depth = 0

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def _run(self, conn: Any, sql: str, params: Sequence[Any], fetch: bool) -> Any:
        cursor = conn.execute(self._sql(sql), params)
        if fetch:
            return [tuple(r) for r in cursor.fetchall()]
        return cursor.rowcount

    def _call(self, sql: str, params: Sequence[Any], fetch: bool, what: str) -> Any:
        import psycopg

        with self._lock:
            try:
                if self._held is not None:
                    return self._run(self._held, sql, params, fetch)
                with self._pool.connection() as conn:
                    return self._run(conn, sql, params, fetch)
            except psycopg.Error as exc:
                raise _pg_error(self.display, what, exc) from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        result: list[Row] = self._call(sql, params, True, "a query")
        return result

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        result: int = self._call(sql, params, False, "a write")
        return result

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        import psycopg

        with self._lock:
            try:
                if self._held is not None:
                    with self._held.cursor() as cur:
                        cur.executemany(self._sql(sql), rows)
                    return
                with self._pool.connection() as conn, conn.cursor() as cur:
                    cur.executemany(self._sql(sql), rows)
            except psycopg.Error as exc:
                raise _pg_error(self.display, "a write", exc) from exc

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[None]:
        import psycopg

        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            committing = False
            try:
                with self._pool.connection() as conn, conn.transaction():
                    self._held, self._depth, self._owner = conn, 1, threading.get_ident()
                    try:
                        yield
                        committing = True
                    finally:
                        self._held, self._depth = None, 0
            except psycopg.Error as exc:
                raise _pg_error(self.display, "a commit" if committing else "a transaction", exc) from exc

    def close(self) -> None:
        """Connections belong to the pool: nothing to release here."""


def _pg_error(display: str, what: str, exc: BaseException) -> StorageError:
    import psycopg
    from psycopg_pool import PoolClosed

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
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
    return _storage_error(display, what, exc)


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
        self.remote = parsed.dialect == "postgresql"

    def connect(self, *, create: bool = True) -> Conn:
        """A connection of its own (SQLite) or a handle on the shared pool (PostgreSQL); without ``create``, a
        SQLite store whose file does not exist is ``SessionNotFoundError`` (nothing is created)."""
        if self.dialect == "sqlite":
            return SqliteConn(self._target, self.display, synchronous=self.synchronous, create=create)
        return PgConn(self._shared_pool(), self.display)

    def _shared_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                try:
                    from psycopg_pool import ConnectionPool
                except ImportError as exc:  # pragma: no cover - depends on the installation
                    raise SessionError(
                        "PostgreSQL stores need psycopg and psycopg-pool: pip install 'sessiontree[postgres]'",
                        kind="invalid_argument",
                    ) from exc
                self._pool = ConnectionPool(
                    self._target,
                    min_size=1,
                    max_size=self._pool_size,
                    kwargs={"autocommit": True},
                    configure=self._configure,
                    check=ConnectionPool.check_connection,
                    timeout=POOL_TIMEOUT_S,
                    open=False,
                    name="sessiontree",
                )
                try:
                    self._pool.open(wait=True, timeout=10)
                except Exception as exc:
                    self._pool.close()
                    self._pool = None
                    raise StorageError(f"{self.display}: cannot connect: {exc}") from exc
            return self._pool

    def _configure(self, conn: Any) -> None:
        if self.synchronous_commit is not None:
            # A setting of each pooled connection: no statement of its own in every write transaction.
            conn.execute(f"SET synchronous_commit = {self.synchronous_commit}")

    def close(self) -> None:
        """Close the pool (PostgreSQL); SQLite connections are closed by their owners."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
