"""The SQL schema of the session stores, as numbered migrations recorded in ``st_schema`` and applied in order
(``setup``; also on first use of an empty database). Entry rows are only ever inserted.

One text per migration and dialect; nothing here runs queries other than applying them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sessiontree.errors import StorageError
from sessiontree.storage.sql.database import Conn, Dialect
from sessiontree.storage.sql.search_rows import fill_search
from sessiontree.storage.sql.tree_chunks import fill_chunks

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "applied_version", "migrate", "refuse_newer"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step: a description, its statements for each dialect, and what runs after them in the
    same transaction (``fill``: a step that needs more than SQL, for each dialect)."""

    version: int
    description: str
    sqlite: tuple[str, ...]
    postgresql: tuple[str, ...]
    fill_sqlite: Callable[[Conn], None] | None = None
    fill_postgresql: Callable[[Conn], None] | None = None

    def statements(self, dialect: Dialect) -> tuple[str, ...]:
        return self.sqlite if dialect == "sqlite" else self.postgresql

    def fill(self, dialect: Dialect) -> Callable[[Conn], None] | None:
        return self.fill_sqlite if dialect == "sqlite" else self.fill_postgresql


def _tables(blob: str) -> tuple[str, ...]:
    # Entries keep each line's exact bytes; the pointer columns (parent_seq, depth, and the seq of the latest
    # compaction / model source / thinking level / active tools at or above the entry) let a context be read
    # from the leaf back to the latest compaction without walking the whole path.
    return (
        f"""CREATE TABLE st_sessions (
            id TEXT PRIMARY KEY,
            header {blob} NOT NULL,
            created TEXT,
            cwd TEXT NOT NULL DEFAULT '',
            parent_session TEXT,
            name TEXT,
            entry_count BIGINT NOT NULL DEFAULT 0,
            message_count BIGINT NOT NULL DEFAULT 0,
            first_message TEXT,
            modified_ms BIGINT,
            irregular SMALLINT NOT NULL DEFAULT 0,
            problems TEXT
        )""",
        "CREATE INDEX st_sessions_cwd ON st_sessions (cwd)",
        f"""CREATE TABLE st_entries (
            session_id TEXT NOT NULL REFERENCES st_sessions (id) ON DELETE CASCADE,
            seq BIGINT NOT NULL,
            id TEXT NOT NULL,
            parent_id TEXT,
            type TEXT NOT NULL,
            timestamp TEXT,
            line {blob} NOT NULL,
            parent_seq BIGINT,
            depth BIGINT NOT NULL DEFAULT 0,
            compaction_seq BIGINT,
            model_seq BIGINT,
            thinking_seq BIGINT,
            tools_seq BIGINT,
            target_id TEXT,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX st_entries_id ON st_entries (session_id, id, seq)",
        "CREATE INDEX st_entries_parent ON st_entries (session_id, parent_id)",
        "CREATE INDEX st_entries_type ON st_entries (session_id, type, seq)",
        """CREATE TABLE st_writer_leases (
            session_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            fence BIGINT NOT NULL,
            expires_at_ms BIGINT NOT NULL
        )""",
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions, entries and writer leases", _tables("BLOB"), _tables("BYTEA")),
    Migration(
        2,
        "full-text search over message text and session names",
        (
            "CREATE VIRTUAL TABLE st_entry_text USING fts5("
            "text, session_id UNINDEXED, entry_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')",
        ),
        (
            """CREATE TABLE st_entry_text (
                session_id TEXT NOT NULL REFERENCES st_sessions (id) ON DELETE CASCADE,
                entry_id TEXT NOT NULL,
                text TEXT NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
            )""",
            "CREATE INDEX st_entry_text_tsv ON st_entry_text USING GIN (tsv)",
            "CREATE INDEX st_entry_text_session ON st_entry_text (session_id)",
        ),
    ),
)

_LABELS_ONLY = (
    "DROP INDEX st_entries_type",
    # only what the label and name reads search for: an index of every entry by type was as large as
    # the id index and served no read
    "CREATE INDEX st_entries_type ON st_entries (session_id, type, seq) "
    "WHERE type = 'label' OR type = 'session_info'",
)
MIGRATIONS += (
    Migration(3, "the type index keeps label and session_info entries only", _LABELS_ONLY, _LABELS_ONLY),
)

# Schema 4 is SQLite's (what a store takes on disk is measured there): PostgreSQL records the version only,
# and takes the two indexes in schema 7
_IDS_ALONE = (
    # by id: the id alone finds the rows (ids are all but unique across a store; a session's id in every
    # row of the index made it three times larger): reads by id say so (``paths.session_of_id``)
    "DROP INDEX st_entries_id",
    "CREATE INDEX st_entries_id ON st_entries (id)",
)
_BRANCHES = (
    # parents that are not the entry just before: a child is either the row after its parent or one of these,
    # so the index of children holds the branch points only (nearly every entry's parent is the one before)
    "DROP INDEX st_entries_parent",
    "CREATE INDEX st_entries_parent ON st_entries (session_id, parent_id) "
    "WHERE parent_seq IS NULL OR parent_seq <> seq - 1",
)
_FTS_WITHOUT_TEXT = (
    # a number per session for the search index's rowids, (num << 32) + seq; AUTOINCREMENT: never reused
    "CREATE TABLE st_search_keys (num INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL UNIQUE)",
    "INSERT INTO st_search_keys (session_id) SELECT id FROM st_sessions ORDER BY created, id",
    "CREATE TRIGGER st_sessions_search_key AFTER INSERT ON st_sessions BEGIN "
    "INSERT OR IGNORE INTO st_search_keys (session_id) VALUES (NEW.id); END",
    "CREATE TRIGGER st_sessions_search_key_gone AFTER DELETE ON st_sessions BEGIN "
    "DELETE FROM st_search_keys WHERE session_id = OLD.id; END",
    # the index alone: the text is the entry's line's, taken again from it for snippets and deletes
    "DROP TABLE st_entry_text",
    "CREATE VIRTUAL TABLE st_entry_text USING fts5("
    "text, content = '', tokenize = 'unicode61 remove_diacritics 2')",
)
MIGRATIONS += (
    Migration(
        4,
        "SQLite: the search index keeps no copy of the text, the index of ids no session id, the index of "
        "children branch points only",
        (*_IDS_ALONE, *_BRANCHES, *_FTS_WITHOUT_TEXT),
        (),
        fill_sqlite=fill_search,
    ),
)


def _tree_chunks(blob: str, number: str) -> tuple[str, ...]:
    # the key columns of 8,192 consecutive entry rows in one compressed row (``tree_chunks.py``): the tree of a
    # long session is read from a few of them and the rows after the last
    return (
        f"""CREATE TABLE st_tree_chunks (
        session_id TEXT NOT NULL REFERENCES st_sessions (id) ON DELETE CASCADE,
        chunk {number} NOT NULL,
        first_seq {number} NOT NULL,
        row_count {number} NOT NULL,
        body {blob} NOT NULL,
        checksum {number} NOT NULL,
        PRIMARY KEY (session_id, chunk)
    )""",
    )


MIGRATIONS += (
    Migration(
        5,
        "SQLite: tree chunks, the key columns of 8,192 consecutive entries in one compressed row",
        _tree_chunks("BLOB", "INTEGER"),
        (),
        fill_sqlite=fill_chunks,
    ),
    # PostgreSQL's get_tree read every row's key columns (4x the file's at 100k entries): it takes the chunks too
    Migration(
        6,
        "PostgreSQL: tree chunks, as SQLite's (schema 5)",
        (),
        _tree_chunks("BYTEA", "BIGINT"),
        fill_postgresql=fill_chunks,
    ),
    # PostgreSQL's planner, with statistics from before a session was copied in (a store whose rows are nearly
    # all one session's), counted one row for the new session and walked its parents through the index of
    # children, filtering every row of the session at each step (a 1k-entry session's context: 314 instead of
    # 20 ms): with SQLite's indexes the primary key is the only index a walk by seq can use
    Migration(
        7,
        "PostgreSQL: the index of ids keeps no session id, the index of children branch points only, as SQLite's "
        "(schema 4)",
        (),
        (*_IDS_ALONE, *_BRANCHES),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version

_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS st_schema ("
    "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"
)


_MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(7466347285)"  # 'sesstree': one migrator at a time


def _create_version_table(conn: Conn) -> None:
    if conn.dialect == "postgresql":
        # two CREATE TABLE IF NOT EXISTS at once can both try to create it (a unique violation in the catalog)
        with conn.transaction():
            conn.query(_MIGRATION_LOCK)
            conn.execute(_VERSION_TABLE)
    else:
        conn.execute(_VERSION_TABLE)


def applied_version(conn: Conn) -> int:
    """The highest migration applied (0 for an empty database); reads only (nothing is created)."""
    exists = (
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'st_schema'"
        if conn.dialect == "sqlite"
        else "SELECT 1 WHERE to_regclass('st_schema') IS NOT NULL"
    )
    if conn.query_one(exists) is None:
        return 0
    row = conn.query_one("SELECT MAX(version) FROM st_schema")
    version = row[0] if row else None
    if version is None:
        return 0
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise StorageError(
            f"{conn.display}: the schema version recorded in st_schema is {version!r}, not a number"
        )
    return version


def refuse_newer(conn: Conn, version: int) -> None:
    """``StorageError`` when the database's schema is newer than this sessiontree knows (its rows may mean
    something else): every use of the store, reads too, says so rather than guessing."""
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"{conn.display}: the database has schema version {version}, newer than this sessiontree "
            f"({SCHEMA_VERSION}); upgrade sessiontree"
        )


def migrate(conn: Conn) -> list[Migration]:
    """Apply every migration not applied yet, each in its own transaction; returns those applied.

    Safe to run from several processes at once: each step re-checks the version inside its transaction
    (PostgreSQL serializes them with a transaction-scoped advisory lock, SQLite with ``BEGIN IMMEDIATE``).
    """
    done: list[Migration] = []
    _create_version_table(conn)
    current = applied_version(conn)
    refuse_newer(conn, current)
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        with conn.transaction():
            if conn.dialect == "postgresql":
                conn.query(_MIGRATION_LOCK)
            if applied_version(conn) >= migration.version:
                continue
            for statement in migration.statements(conn.dialect):
                conn.execute(statement)
            fill = migration.fill(conn.dialect)
            if fill is not None:
                fill(conn)
            conn.execute(
                "INSERT INTO st_schema (version, description, applied_at_ms) VALUES (?, ?, ?)",
                (migration.version, migration.description, time.time_ns() // 1_000_000),
            )
        done.append(migration)
    return done
