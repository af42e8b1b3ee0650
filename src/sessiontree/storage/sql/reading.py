"""The read side of one session in a SQL store: loading its row, entries by id or sequence, the context view
back to the latest compaction, whole paths and the tree on request (``session.py`` adds the writes).

Reads do not grow with the session: opening reads the session row and the last entry; the context at a leaf
reads the path back to the latest compaction (to its ``firstKeptEntryId`` without a ``retainedTail``) plus
the settings entries in force, found through per-entry pointer columns filled at insert time. Every row a
read uses is checked against its line and the rows it points at (``paths.py``); a session whose pointers
cannot be trusted (an imported file with duplicate ids or late parents, or rows changed behind sessiontree's
back) is read from its lines, as its file would be (``loaded.py``). ``check`` reads all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self, TypeVar

from sessiontree.storage.session_dirs import SessionInfoBuilder
from sessiontree.storage.sql.database import Conn, Database
from sessiontree.storage.sql.loaded import LoadedSession
from sessiontree.storage.sql.paths import BY_ID, CACHE, PathReads, Pointers, session_of_id
from sessiontree.storage.sql.rows import (
    KEY_COLUMNS,
    WIDTH,
    Damage,
    Row,
    as_bytes,
    as_int,
    as_opt_int,
    as_opt_text,
    as_text,
    parse_row,
)
from sessiontree.storage.sql.session_row import LOAD, SessionRow, parse_session_row
from sessiontree.storage.sql.text import key
from sessiontree.storage.sql.tree_rows import ColumnTree, Plain
from sessiontree.storage.stored_ids import storable_session_id
from sessiontree.tree.entry_store import Problem
from sessiontree.tree.session_index import LocalIndex, PathView, SessionIndex
from sessiontree.tree.tree_index import TreeNode

__all__ = ["Entry", "Pointers", "SessionReads"]

Entry = dict[str, Any]
T = TypeVar("T")
_POINTERS = "seq, depth, compaction_seq, model_seq, thinking_seq, tools_seq"


class SessionReads(PathReads, SessionIndex):
    """The read side of a SQL session: its row, its entries by id and sequence, paths, contexts and tree.

    Reads follow the pointer columns and check every row they use (``rows.py``, ``paths.py``); once one
    disagrees with its line or with the rows it points at, the session is read from its lines alone, as a
    file is (``loaded.py``), and ``problems`` says what was found. A writer then marks the session row so
    that every later reader does the same.
    """

    atomic = True
    durable_on_commit = True  # each commit is as durable as the store's option makes it

    def __init__(self, db: Database, session_id: str, *, read_only: bool) -> None:
        self.db = db
        self.conn: Conn = db.connect(create=not read_only)
        self.session_id = session_id
        self._location = f"{db.display}#{session_id}"
        self.path = None
        self.read_only = read_only
        self.durability = "fsync"
        self._header: Entry | None = None
        self._header_line: bytes | None = None
        self._exists = False
        self._count = 0
        self._last: tuple[str, str, str | None] | None = None
        self._irregular = False
        self._import_problems: list[Problem] = []
        self._row_problems: list[Problem] = []  # what is wrong with the session row (not its entries)
        self._damage: list[Problem] = []  # rows found disagreeing with their lines, by the reads
        self._generation = 0
        self._pointers: dict[str, Pointers] = {}
        self._entries: dict[int, Entry] = {}
        self._walks: dict[int, tuple[int, list[Row]]] = {}  # stop depth → last walk (see _walk)
        self._absent: set[str] = set()
        self._loaded: LocalIndex | None = None
        self._loaded_at = -1  # the row count the whole view was read at
        self._labels: list[Entry] | None = None  # label and session_info entries, once read
        self._present: set[str] = set()  # ids known to exist (the targets of labels)
        self._appended: list[str] = []  # ids appended in the open transaction
        self._renewed: float | None = None  # when the open transaction renewed the lease
        self._recheck = False
        self._info = SessionInfoBuilder(keep_texts=False)
        self._closed = False

    # -- construction ----------------------------------------------------------------------------------
    @classmethod
    def open(cls, db: Database, session_id: str, *, read_only: bool = False) -> Self:
        """An existing session (``SessionNotFoundError`` when there is none with this id,
        ``CorruptSessionError`` when its stored header is not one)."""
        from sessiontree.errors import SessionNotFoundError

        session = cls(db, session_id, read_only=read_only)
        try:
            found = session._load()
        except BaseException:
            session.close()
            raise
        if not found:
            session.close()
            raise SessionNotFoundError(f"Session not found: {db.display}#{session_id}")
        return session

    @classmethod
    def new(cls, db: Database, header: Mapping[str, Any], header_line: bytes | None = None) -> Self:
        """A session that exists once its first entry is written (the header goes with it); its id must be
        one every store can name (``storable_session_id``)."""
        session_id = storable_session_id(header.get("id"), db.display)
        session = cls(db, session_id, read_only=False)
        session._header = dict(header)
        session._header_line = header_line
        return session

    def _load(self) -> bool:
        """Read the session row and its last entry row (one statement: one snapshot of both)."""
        found = self.conn.query_one(LOAD, (self.session_id, self.session_id))
        if found is None:
            return False
        stored: SessionRow = parse_session_row(found, self.session_id, str(self.location))
        self._header_line, self._header = stored.header_line, stored.header
        self._exists = True
        self._import_problems = stored.import_problems
        self._row_problems = stored.problems
        info = self._info
        info.name, info.message_count, info.first_message = (
            stored.name,
            stored.message_count,
            stored.first_message,
        )
        info.last_activity = stored.last_activity
        self._pointers.clear()
        self._entries.clear()
        self._walks.clear()
        self._absent.clear()
        self._loaded = None
        self._labels = None
        self._irregular = stored.irregular or bool(self._damage)
        self._count, self._last = 0, None
        if found[8] is None:
            if stored.entry_count:
                self._distrust(
                    Damage(
                        f"{self.location}: the session row counts {stored.entry_count} entries, "
                        "but no entry rows are stored"
                    )
                )
            return True
        try:
            last = parse_row(found[8:], str(self.location))
            self._count = last.seq
            self._decode_row(last, found[8 + WIDTH])
            self._last = (last.id, last.type, last.target_id)
            if stored.entry_count != last.seq:
                raise Damage(
                    f"{self.location}: the session row counts {stored.entry_count} entries, but the last entry row "
                    f"is row {last.seq}"
                )
        except Damage as exc:
            self._count = max(self._count, as_opt_int_or_zero(found[8]))
            self._distrust(exc)
        return True

    def check(self) -> list[Problem]:
        """Every problem of the stored session, found by reading all of it in one snapshot (read-only): what
        its file's check finds, and every row and session-row column that disagrees with its lines."""
        from sessiontree.storage.sql.verify import check_session

        return check_session(self.conn, self.session_id, str(self.location))

    # -- damage ----------------------------------------------------------------------------------------
    def _distrust(self, damage: Damage) -> None:
        """Read this session from its lines from now on, and record ``damage`` unless that read reports it."""
        problem = damage.problem()
        if not damage.in_lines and all(p.message != problem.message for p in self._damage):
            self._damage.append(problem)
        self._read_from_lines()

    def _read_from_lines(self) -> None:
        """Every read from now on goes through the lines; the manager reads labels and cycles again."""
        if not self._irregular:
            self._irregular = True
            self._walks.clear()
            self._generation += 1

    def _checked(self, by_pointers: Callable[[], T], whole: Callable[[LocalIndex], T]) -> T:
        """``by_pointers()``, or the same read from the lines when the session cannot be read by its pointers
        (or ``by_pointers`` finds it cannot)."""
        if not self._irregular:
            try:
                return by_pointers()
            except Damage as exc:
                self._distrust(exc)
        return whole(self._whole())

    # -- properties ------------------------------------------------------------------------------------
    @property
    def header(self) -> dict[str, Any] | None:
        return self._header

    @property
    def header_line(self) -> bytes | None:
        """The header line's exact bytes (what precedes the first entry when exported to a file)."""
        return self._header_line if self._header_line is not None else None

    @property
    def location(self) -> str | None:
        return self._location

    def _where(self) -> str:
        return self._location

    @property
    def import_problems(self) -> list[Problem]:
        """What was found wrong in the source of a session imported lossily (recorded with it)."""
        return list(self._import_problems)

    @property
    def problems(self) -> list[Problem]:
        known = [*self._import_problems, *self._row_problems, *self._damage]
        if self._irregular:
            return [*known, *self._whole().problems]
        return known

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def remote(self) -> bool:
        return self.db.remote

    @property
    def is_persisted(self) -> bool:
        return self._exists

    @property
    def file_exists(self) -> bool:
        return False

    def __len__(self) -> int:
        return len(self._whole().store) if self._irregular else self._count

    # -- reads -----------------------------------------------------------------------------------------
    def _whole(self) -> LocalIndex:
        """The session read from its lines (for the tree, and for every read of an irregular session); when
        that finds anything wrong, every read goes this way from then on."""
        if self._loaded is None or self._loaded_at != self._count:
            block = self._header_line or b""
            first_line = block.count(b"\n") + 2
            store = LoadedSession(self.conn, self.session_id, self._header, str(self.location), first_line)
            self._loaded, self._loaded_at = LocalIndex(store), self._count
            if any(not p.is_note for p in store.problems):
                self._read_from_lines()
        return self._loaded

    def _row_by_id(self, entry_id: str) -> tuple[Row, Any] | None:
        """The last row with this id, and its line."""
        if entry_id in self._absent:
            return None
        found = next(
            iter(
                self.conn.read(
                    f"SELECT {KEY_COLUMNS}, line FROM st_entries WHERE {BY_ID} ORDER BY seq DESC LIMIT 1",
                    (self.session_id, key(entry_id)),
                )
            ),
            None,
        )
        if found is None:
            if len(self._absent) >= CACHE:
                self._absent.clear()
            self._absent.add(entry_id)
            return None
        return parse_row(found, str(self.location)), found[WIDTH]

    def _by_id(self, entry_id: str) -> tuple[int, Any] | None:
        """``(seq, line)`` of the last entry with this id (``None`` also when its row is damaged: the session
        is then read from its lines)."""
        try:
            found = self._row_by_id(entry_id)
        except Damage as exc:
            self._distrust(exc)
            return None
        return None if found is None else (found[0].seq, found[1])

    def last_leaf(self) -> str | None:
        if self._irregular:
            return self._whole().last_leaf()
        if self._last is None:
            return None
        entry_id, kind, target = self._last
        return target if kind == "leaf" else entry_id

    def contains(self, entry_id: str) -> bool:
        if not self._irregular and (entry_id in self._pointers or entry_id in self._present):
            return True

        def by_pointers() -> bool:
            found = self._row_by_id(entry_id)
            if found is not None:
                self._decode_row(*found)  # the row's line says it is that entry
            return found is not None

        return self._checked(by_pointers, lambda w: w.contains(entry_id))

    def position(self, entry_id: str) -> int | None:
        def by_pointers() -> int | None:
            found = self._row_by_id(entry_id)
            return None if found is None else found[0].seq - 1

        return self._checked(by_pointers, lambda w: w.position(entry_id))

    def get_entry(self, entry_id: str) -> Entry | None:
        def by_pointers() -> Entry | None:
            found = self._row_by_id(entry_id)
            return None if found is None else self._decode_row(*found)

        return self._checked(by_pointers, lambda w: w.get_entry(entry_id))

    def entries(self) -> list[Entry]:
        def by_pointers() -> list[Entry]:
            rows = self.conn.query(
                f"SELECT {KEY_COLUMNS}, line FROM st_entries WHERE session_id = ? ORDER BY seq",
                (self.session_id,),
            )
            out = []
            for n, raw in enumerate(rows, start=1):
                row = parse_row(raw, str(self.location))
                if row.seq != n:
                    raise Damage(
                        f"{self.location}: row {n} is missing (the next stored row is {row.seq})",
                        seq=n,
                        in_lines=True,
                    )
                out.append(self._decode_row(row, raw[WIDTH]))
            return out

        return self._checked(by_pointers, lambda w: w.entries())

    def ids_starting_with(self, prefix: str) -> list[str]:
        def by_pointers() -> list[str]:
            if key(prefix) != prefix:  # a prefix with a lone surrogate: compare the real ids
                return [i for i in dict.fromkeys(self.envelopes()[0]) if i.startswith(prefix)]
            rows = self.conn.query(
                "SELECT id FROM st_entries WHERE session_id = ? AND substr(id, 1, ?) = ? ORDER BY seq",
                (self.session_id, len(prefix), prefix),
            )
            return list(dict.fromkeys(as_text(r[0], f"{self.location}: an id") for r in rows))

        return self._checked(by_pointers, lambda w: w.ids_starting_with(prefix))

    def path_view(self, leaf_id: str | None) -> PathView:
        return self._checked(lambda: self._pointer_path(leaf_id), lambda w: w.path_view(leaf_id))

    def context_view(self, leaf_id: str | None) -> PathView:
        return self._checked(lambda: self._pointer_context(leaf_id), lambda w: w.context_view(leaf_id))

    def _pointers_strict(self, entry_id: str) -> Pointers | None:
        cached = self._pointers.get(entry_id)
        if cached is not None:
            return cached
        row = self.conn.query_one(
            f"SELECT {_POINTERS} FROM st_entries WHERE {BY_ID} ORDER BY seq DESC LIMIT 1",
            (self.session_id, key(entry_id)),
        )
        if row is None:
            return None
        at = f"{self.location}: entry {entry_id!r}:"
        pointers: Pointers = (
            as_int(row[0], f"{at} seq"),
            as_int(row[1], f"{at} depth"),
            as_opt_int(row[2], f"{at} compaction_seq"),
            as_opt_int(row[3], f"{at} model_seq"),
            as_opt_int(row[4], f"{at} thinking_seq"),
            as_opt_int(row[5], f"{at} tools_seq"),
        )
        self._remember(entry_id, pointers)
        return pointers

    def _pointers_of(self, entry_id: str) -> Pointers | None:
        """The pointers of the last entry with this id (``None`` also when its row is damaged: the session is
        then read from its lines)."""
        try:
            return self._pointers_strict(entry_id)
        except Damage as exc:
            self._distrust(exc)
            return None

    def _remember(self, entry_id: str, pointers: Pointers) -> None:
        if len(self._pointers) >= CACHE:
            self._pointers.clear()
        self._pointers[entry_id] = pointers

    def children(self, entry_id: str) -> list[Entry]:
        def by_pointers() -> list[Entry]:
            parent = self._pointers_strict(entry_id)
            # the row after the parent, and the branch points (the only rows SQLite's parent index holds; its
            # condition is repeated for the planner to use it)
            branches = (
                f"SELECT {KEY_COLUMNS}, line FROM st_entries WHERE session_id = ? AND parent_id = ? "
                "AND (parent_seq IS NULL OR parent_seq <> seq - 1)"
            )
            # ("+seq": ordering by the bare primary-key column makes SQLite walk every entry of the session in
            # key order instead of searching the parent index)
            if parent is None:
                rows = self.conn.query(f"{branches} ORDER BY +seq", (self.session_id, key(entry_id)))
            else:
                rows = self.conn.query(
                    f"SELECT * FROM ({branches} UNION ALL SELECT {KEY_COLUMNS}, line FROM st_entries "
                    "WHERE session_id = ? AND seq = ? AND parent_id = ? AND parent_seq = seq - 1) AS children "
                    "ORDER BY +seq",
                    (self.session_id, key(entry_id), self.session_id, parent[0] + 1, key(entry_id)),
                )
            return [self._decode_row(parse_row(r, str(self.location)), r[WIDTH]) for r in rows]

        return self._checked(by_pointers, lambda w: w.children(entry_id))

    def tree(self, labels: Mapping[str, tuple[str, str | None]]) -> list[TreeNode]:
        if not self._irregular:
            # from the key columns, checked as they are read (``tree_rows.py``); no line is decoded
            try:
                columns = ColumnTree(
                    self.conn, self.session_id, self._count, str(self.location), self._distrust
                )
            except Damage as exc:
                self._distrust(exc)
            except Plain:
                pass
            else:
                return LocalIndex(columns).tree(labels)
        return self._whole().tree(labels)

    def cycle_problems(self) -> list[Problem]:
        return self._whole().cycle_problems() if self._irregular else []

    def label_and_name_entries(self) -> list[Entry]:
        if self._labels is None:
            self._labels = self._checked(self._pointer_labels, lambda w: w.label_and_name_entries())
        return list(self._labels)

    def _pointer_labels(self) -> list[Entry]:
        # two searches of the (session_id, type, seq) index: with "type IN (…) ORDER BY seq" SQLite
        # walks every entry of the session in primary-key order instead
        rows = self.conn.query(
            f"SELECT {KEY_COLUMNS}, line FROM st_entries WHERE session_id = ? AND type = 'label' UNION ALL "
            f"SELECT {KEY_COLUMNS}, line FROM st_entries WHERE session_id = ? AND type = 'session_info' "
            "ORDER BY 1",
            (self.session_id, self.session_id),
        )
        labels = [self._decode_row(parse_row(r, str(self.location)), r[WIDTH]) for r in rows]
        if any(e.get("type") == "label" for e in labels):
            # the manager checks that every label's target exists: one query, not one per label
            found = self.conn.query(
                f"SELECT DISTINCT id FROM st_entries WHERE {session_of_id()} AND id IN (SELECT target_id "
                "FROM st_entries WHERE session_id = ? AND type = 'label' AND target_id IS NOT NULL)",
                (self.session_id, self.session_id),
            )
            self._present.update(as_text(r[0], f"{self.location}: an id") for r in found)
        return labels

    def envelopes(self) -> tuple[list[str], list[str | None], list[str]]:
        """Ids, parent ids and types of every entry in append order (one query)."""

        def by_pointers() -> tuple[list[str], list[str | None], list[str]]:
            rows = self.conn.query(
                "SELECT id, parent_id, type FROM st_entries WHERE session_id = ? ORDER BY seq",
                (self.session_id,),
            )
            at = f"{self.location}: a row's"
            return (
                [as_text(r[0], f"{at} id") for r in rows],
                [as_opt_text(r[1], f"{at} parent_id") for r in rows],
                [as_text(r[2], f"{at} type") for r in rows],
            )

        return self._checked(by_pointers, lambda w: w.envelopes())

    def raw_lines(self) -> Iterator[bytes]:
        if self._irregular:
            yield from self._whole().raw_lines()
            return
        for line in self.exact_lines():
            yield line[:-1] if line.endswith(b"\r") else line

    def exact_lines(self) -> Iterator[bytes]:
        """Every entry's exact line (a trailing ``\\r`` included, as it was read), in append order."""
        rows = self.conn.query(
            "SELECT seq, line FROM st_entries WHERE session_id = ? ORDER BY seq", (self.session_id,)
        )
        for seq, line in rows:
            yield as_bytes(line, f"{self.location}: row {seq}: its line")


def as_opt_int_or_zero(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
