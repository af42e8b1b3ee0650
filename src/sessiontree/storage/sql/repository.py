"""A SQL store of many sessions (SQLite file or PostgreSQL database): create, open, list, delete, fork, search,
and the import and export that ``sessiontree copy`` uses.

Listing and search are queries (session rows; FTS5 or ``tsvector``), never scans of entries. Sessions are
``SessionManager``s over ``SqlSession``; this module only finds, creates and copies them.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sessiontree.errors import CorruptSessionError, SessionError, SessionNotFoundError, StorageError
from sessiontree.format import entries as E
from sessiontree.format import pi_json as _json
from sessiontree.format.ids import assert_valid_session_id, iso_from_ms, now_ms, uuid7
from sessiontree.storage.repository import M, ManagerClass, Repo
from sessiontree.storage.search import SearchHit, query_terms, snippet
from sessiontree.storage.session_dirs import SessionInfo, _dt, resolve_cwd
from sessiontree.storage.sql.database import Conn, Database
from sessiontree.storage.sql.schema import SCHEMA_VERSION, applied_version, migrate, refuse_newer
from sessiontree.storage.sql.search_rows import SEQ_BITS, delete_session_text, line_hit
from sessiontree.storage.sql.session import SqlSession
from sessiontree.storage.sql.text import display, key, unkey
from sessiontree.storage.stored_ids import storable_session_id
from sessiontree.tree.entry_store import Problem, check_envelope

__all__ = ["SqlRepo"]


class SqlRepo(Repo[M]):
    """Sessions in one database. ``setup()`` applies migrations; the first use of an empty database does too.

    ``options`` (``synchronous`` for SQLite, ``synchronous_commit`` for PostgreSQL, ``lease_ttl_ms``)
    override the URL's options of the same names (``sqlite:///s.db?synchronous=NORMAL&lease_ttl_ms=5000``).
    """

    def __init__(self, url: str, *, manager_class: ManagerClass[M], **options: Any) -> None:
        self.manager_class = manager_class
        self.db = Database(url, **options)
        self.url = url
        self.display = self.db.display
        self._connection: Conn | None = None  # made on first use: a read of a missing SQLite file makes none
        self._ready = False

    def _conn_for(self, *, create: bool) -> Conn:
        if self._connection is None:
            self._connection = self.db.connect(create=create)
        return self._connection

    @property
    def _conn(self) -> Conn:
        return self._conn_for(create=False)

    # -- schema ----------------------------------------------------------------------------------------
    def setup(self) -> builtins.list[str]:
        """Apply the migrations this database lacks (creating a SQLite file); returns their descriptions."""
        done = migrate(self._conn_for(create=True))
        self._ready = True
        return [f"{m.version}: {m.description}" for m in done]

    def schema_version(self) -> int:
        """The schema version applied (0 for an empty database; ``SessionNotFoundError`` for a SQLite store
        whose file does not exist: nothing is created)."""
        return applied_version(self._conn)

    def _ensure(self, *, create: bool = True) -> bool:
        """Whether the store holds sessions: a store with an older schema is migrated first, one with none is
        set up only for a write (``create``), and one with a newer schema is refused."""
        if self._ready:
            return True
        conn = self._conn_for(create=create)
        version = applied_version(conn)
        refuse_newer(conn, version)
        if version == 0 and not create:
            return False  # a read of an empty database: nothing to read, and nothing is created
        if version < SCHEMA_VERSION:
            migrate(conn)
        self._ready = True
        return True

    def _readable(self, session_id: str) -> bool:
        """Whether ``session_id`` can be looked up here (an id no store can hold, e.g. with a NUL or a lone
        surrogate, is simply not found rather than an error of the database driver)."""
        return key(session_id) == session_id

    # -- sessions --------------------------------------------------------------------------------------
    def _manager(self, index: SqlSession, cwd: str, options: dict[str, Any]) -> M:
        manager = self.manager_class(index, cwd=cwd, session_dir=None, persist=True, **options)
        manager.spawner = lambda header, lines: self._spawn(header, lines)
        return manager

    def _spawn(self, header: dict[str, Any], lines: Sequence[dict[str, Any] | bytes] | None) -> SqlSession:
        self._ensure()
        index = SqlSession.new(self.db, header)
        if lines:
            with index.transaction():
                for line in lines:
                    if isinstance(line, (bytes, bytearray)):
                        index.append_line(_json.loads(bytes(line)), bytes(line))
                    else:
                        index.append(line)
        return index

    def create(
        self, cwd: str, *, id: str | None = None, parent_session: str | None = None, **options: Any
    ) -> M:
        """A new session for ``cwd`` (stored with its first entry)."""
        self._ensure()
        sid = id if id is not None else options.get("session_id_factory", uuid7)()
        assert_valid_session_id(sid)
        if self._conn.query_one("SELECT 1 FROM st_sessions WHERE id = ?", (sid,)) is not None:
            raise StorageError(f"{self.display}#{sid}: already exists")
        cwd = resolve_cwd(cwd)
        header = E.session_header(sid, iso_from_ms(options.get("clock", now_ms)()), cwd, parent_session)
        return self._manager(SqlSession.new(self.db, header), cwd, options)

    def resolve(self, ref: str) -> str:
        """The session id ``ref`` names: the id itself, or a unique prefix of at least 4 characters."""
        if not self._ensure(create=False) or not self._readable(ref):
            raise SessionNotFoundError(f"Session not found: {self.display}#{ref}")
        if self._conn.query_one("SELECT 1 FROM st_sessions WHERE id = ?", (ref,)) is not None:
            return ref
        if len(ref) >= 4:
            rows = self._conn.query(
                "SELECT id FROM st_sessions WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 11", (len(ref), ref)
            )
            if len(rows) == 1:
                return str(rows[0][0])
            if rows:
                from sessiontree.errors import AmbiguousReferenceError

                ids = [str(r[0]) for r in rows]
                raise AmbiguousReferenceError(
                    f"{self.display}: {ref!r} is the start of several session ids: {', '.join(ids)}",
                    candidates=ids,
                )
        raise SessionNotFoundError(f"Session not found: {self.display}#{ref}")

    def open(self, session_id: str, *, read_only: bool = False, **options: Any) -> M:
        """An existing session (by id or unique id prefix)."""
        index = SqlSession.open(self.db, self.resolve(session_id), read_only=read_only)
        cwd = (index.header or {}).get("cwd")
        return self._manager(index, cwd if isinstance(cwd, str) else "", options)

    def list(self, cwd: str | None = None) -> builtins.list[SessionInfo]:
        """Every session (of ``cwd`` when given), newest activity first, from the session rows alone."""
        if not self._ensure(create=False):
            return []
        sql = (
            "SELECT id, cwd, name, parent_session, created, modified_ms, message_count, first_message "
            "FROM st_sessions"
        )
        params: tuple[Any, ...] = ()
        if cwd is not None:
            sql += " WHERE cwd = ?"
            params = (display(resolve_cwd(cwd)),)
        infos = [self._info(row) for row in self._conn.query(sql, params)]
        infos.sort(key=lambda i: i.modified, reverse=True)
        return infos

    def _info(self, row: tuple[Any, ...]) -> SessionInfo:
        """A listing's line from a session row (a column a client damaged shows as unknown: a listing never
        fails for one session's row; ``check`` reports it)."""
        sid, cwd, name, parent, created, modified_ms, messages, first = row
        from sessiontree.format.ids import parse_iso_ms

        created_dt = _dt(parse_iso_ms(created)) or datetime.fromtimestamp(0, tz=UTC)
        number = isinstance(modified_ms, (int, float)) and not isinstance(modified_ms, bool)
        modified = _dt(float(modified_ms)) if number else None
        return SessionInfo(
            f"{self.display}#{sid}",
            str(sid),
            _text(cwd) or "",
            _text(name),
            _text(parent),
            created_dt,
            modified or created_dt,
            messages if isinstance(messages, int) and not isinstance(messages, bool) else 0,
            _text(first) or "(no messages)",
            "",
        )

    def delete(self, session_id: str) -> None:
        """Remove a session and its entries (a missing session, or store, is no error)."""
        try:
            if not self._ensure(create=False) or not self._readable(session_id):
                return
        except SessionNotFoundError:  # no such store: nothing to delete (and nothing is created)
            return
        with self._conn.transaction():
            delete_session_text(self._conn, session_id)
            self._conn.execute("DELETE FROM st_entries WHERE session_id = ?", (session_id,))
            self._conn.execute("DELETE FROM st_tree_chunks WHERE session_id = ?", (session_id,))
            self._conn.execute("DELETE FROM st_writer_leases WHERE session_id = ?", (session_id,))
            self._conn.execute("DELETE FROM st_sessions WHERE id = ?", (session_id,))

    def fork(
        self,
        session_id: str,
        *,
        entry_id: str | None = None,
        position: str = "before",
        cwd: str | None = None,
        id: str | None = None,
        **options: Any,
    ) -> M:
        """A new session with the source's entries (all of them, or the path to ``entry_id``; see below).

        ``position="before"``: ``entry_id`` must be a user message and the copy ends at its parent;
        ``"at"``: the copy ends at ``entry_id``. Entry ids and lines are kept; the header names the source.
        """
        from sessiontree.storage.forking import fork_lines

        source = SqlSession.open(self.db, self.resolve(session_id), read_only=True)
        try:
            lines = fork_lines(source, entry_id, position)
            header_cwd = (source.header or {}).get("cwd")
            target_cwd = (
                resolve_cwd(cwd) if cwd is not None else (header_cwd if isinstance(header_cwd, str) else "")
            )
            sid = id if id is not None else options.get("session_id_factory", uuid7)()
            assert_valid_session_id(sid)
            header = E.session_header(
                sid, iso_from_ms(options.get("clock", now_ms)()), target_cwd, source.location
            )
        finally:
            source.close()
        return self._manager(self._spawn(header, lines), target_cwd, options)

    def check(self, session_id: str) -> builtins.list[Problem]:
        """Every problem of a stored session (``SqlSession.check``; read-only): ``sessiontree check``."""
        index = SqlSession.open(self.db, self.resolve(session_id), read_only=True)
        try:
            return index.check()
        finally:
            index.close()

    def search(self, text: str, *, cwd: str | None = None, limit: int = 20) -> builtins.list[SearchHit]:
        """Entries and session names matching every word of ``text`` (FTS5 / ``tsvector``), best first."""
        if not self._ensure(create=False):
            return []
        terms = query_terms(text)
        if not terms:
            return []
        where, params = "", []
        if cwd is not None:
            where, params = " AND s.cwd = ?", [display(resolve_cwd(cwd))]
        if self.db.dialect == "sqlite":
            match = " ".join('"' + t.replace('"', '""') + '"' for t in terms)
            # the index holds no text: a hit's row is found by its rowid, its snippet taken from its line
            found = self._conn.query(
                "SELECT k.session_id, e.line, s.name FROM st_entry_text t "
                f"JOIN st_search_keys k ON k.num = t.rowid >> {SEQ_BITS} "
                f"JOIN st_entries e ON e.session_id = k.session_id AND e.seq = t.rowid & {(1 << SEQ_BITS) - 1} "
                "JOIN st_sessions s ON s.id = k.session_id "
                f"WHERE st_entry_text MATCH ?{where} ORDER BY t.rank LIMIT ?",
                (match, *params, limit),
            )
            hits = ((sid, line_hit(line), name) for sid, line, name in found)
            rows: builtins.list[tuple[Any, ...]] = [
                (sid, hit[0], hit[1], name) for sid, hit, name in hits if hit is not None
            ]
        else:
            rows = [
                (sid, unkey(eid), body, name)
                for sid, eid, body, name in self._conn.query(
                    "SELECT t.session_id, t.entry_id, t.text, s.name FROM st_entry_text t "
                    "JOIN st_sessions s ON s.id = t.session_id, plainto_tsquery('simple', ?) q "
                    f"WHERE t.tsv @@ q{where} ORDER BY ts_rank(t.tsv, q) DESC LIMIT ?",
                    (" ".join(terms), *params, limit),
                )
            ]
        return [
            SearchHit(str(sid), str(eid), snippet(body, terms), _text(name), f"{self.display}#{sid}")
            for sid, eid, body, name in rows
        ]

    # -- copy ------------------------------------------------------------------------------------------
    def import_session(
        self, header_block: bytes, lines: Iterable[bytes], *, problems: Iterable[Problem] = ()
    ) -> str:
        """Store a session from its exact header block and entry lines; returns its id."""
        header = _json.first_object(header_block)
        sid = header.get("id") if header else None
        if not isinstance(sid, str):
            raise SessionError("the source has no session header with an id", kind="invalid_session")
        storable_session_id(sid, self.display)
        self._ensure()
        if self._conn.query_one("SELECT 1 FROM st_sessions WHERE id = ?", (sid,)) is not None:
            raise StorageError(f"{self.display}#{sid}: already exists (delete it first, or copy to a new id)")
        assert header is not None
        index = SqlSession.new(self.db, header, header_block)
        try:

            def entries() -> Iterator[tuple[dict[str, Any], bytes]]:
                for n, line in enumerate(lines, start=2):
                    try:
                        entry = _json.loads(line)
                        check_envelope(entry)
                    except ValueError as exc:  # raised inside the transaction: nothing is stored
                        raise CorruptSessionError(
                            f"{self.display}#{sid}: line {n} of the source is not an entry ({exc}); nothing "
                            "was stored"
                        ) from None
                    yield entry, line

            index.append_lines(entries())
            if not len(index):
                index.store_header()  # a session of a header alone is stored (and listed) too
            found = list(problems)
            if found:
                index.record_problems(found)
        finally:
            index.close()
        return sid

    def export(self, session_id: str) -> tuple[bytes, Iterator[bytes]]:
        """The exact header block and entry lines of a session (what a file of it holds)."""
        index = SqlSession.open(self.db, self.resolve(session_id), read_only=True)
        block = index.header_line or b""

        def lines() -> Iterator[bytes]:
            try:
                yield from index.exact_lines()
            finally:
                index.close()

        return block, lines()

    def close(self) -> None:
        """Close the repository's own connection and the pool."""
        if self._connection is not None:
            with contextlib.suppress(SessionError):
                self._connection.close()
            self._connection = None
        self.db.close()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
