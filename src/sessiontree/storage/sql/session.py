"""One session in a SQL store, as the ``SessionManager`` reads and writes it (``SessionIndex``): the reads of
``reading.py`` plus the writes.

Writes happen only under the fenced writer lease, each in a transaction that first renews it; an entry row
keeps the entry's exact line and the pointers later reads follow (parent, depth, and the latest compaction,
model source, thinking level and active tools at or above it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sessiontree._bulk import bulk_allocation
from sessiontree.errors import SessionError, SessionLockedError, StorageError
from sessiontree.format import pi_json as _json
from sessiontree.storage._encode import encode_entry
from sessiontree.storage.search import entry_search_text
from sessiontree.storage.session_dirs import SessionInfoBuilder
from sessiontree.storage.sql import tree_chunks
from sessiontree.storage.sql.conn import insert_sql
from sessiontree.storage.sql.database import Database
from sessiontree.storage.sql.lease import WriterLease
from sessiontree.storage.sql.one_statement import ENTRY_COLUMNS, ENTRY_TYPES, MAX_ROWS, statement
from sessiontree.storage.sql.paths import CACHE
from sessiontree.storage.sql.reading import Pointers, SessionReads
from sessiontree.storage.sql.rows import Damage, decode_line
from sessiontree.storage.sql.search_rows import insert_text_sql, insert_texts, text_params
from sessiontree.storage.sql.statistics import analyze_after_load
from sessiontree.storage.sql.text import display, key, unkey
from sessiontree.storage.sql.tree_chunks import ChunkWriter
from sessiontree.tree.context import settings_kind
from sessiontree.tree.entry_store import Problem, check_envelope
from sessiontree.tree.session_index import EntryIdInUse

__all__ = ["SqlSession"]

logger = logging.getLogger(__name__)

_CHANGED = "another writer appended meanwhile"
_BULK = 2000  # rows per executemany in append_lines
_INSERT_ENTRY = insert_sql("st_entries", ENTRY_COLUMNS)
_UPDATE_SESSION = (
    "UPDATE st_sessions SET entry_count = ?, name = ?, message_count = ?, first_message = ?, "
    "modified_ms = ?, irregular = ? WHERE id = ?"
)
_State = tuple[
    tuple[int, tuple[str, str, str | None] | None, bool, bool],
    tuple[str | None, int, str | None, float | None],
    int | None,
]


class SqlSession(SessionReads):
    """A session row and its entry rows. Build with ``open`` or ``new`` (the repository does)."""

    def __init__(self, db: Database, session_id: str, *, read_only: bool) -> None:
        super().__init__(db, session_id, read_only=read_only)
        self._lease = WriterLease(self.conn, session_id, ttl_ms=db.lease_ttl_ms)
        self._epoch = self.conn.epoch  # of the connections this session's view was read on
        self._change = _CHANGED
        self._lost: list[Problem] = []
        self._written: dict[str, tuple[int, bytes]] = {}  # entries this writer stored: id -> (seq, line)
        # PostgreSQL: rows of the open transaction held back to go with its end in one statement
        self._held_rows: list[tuple[Any, ...]] = []
        self._held_texts: list[tuple[Any, ...]] = []
        # PostgreSQL: new ids let through unchecked (``new_id_in_use``), and the one an entry held took
        self._unchecked: set[str] = set()
        self._guarded: str | None = None
        self._nesting = 0  # of this session's own transaction (0: none open, or another's)
        self._chunks = ChunkWriter(self.conn, session_id)
        self._snapshot = self._state()

    # -- writes ----------------------------------------------------------------------------------------
    def set_header(self, header: Mapping[str, Any]) -> None:
        if self._exists or self._header is not None:
            raise SessionError(f"{self.location}: the session already has a header", kind="invalid_argument")
        self._header = dict(header)

    def prepare_write(self) -> None:
        """Take the writer role, and make sure this writer's view is what the store holds before an entry
        is built on it: after a commit of unknown outcome, and after the store reconnected (a server that
        crashed with ``synchronous_commit=off`` may have lost the last commits it acknowledged), the tail
        is read again and, where it differs, the session (the manager then reads its leaf and labels again).

        Called inside the write transaction (the manager opens it first), so the check runs on the
        connection the entry is then written on. When the check fails it is made again at the next write.
        """
        if self._closed:
            raise SessionError(f"{self.location}: the session is closed", kind="invalid_state")
        if self.read_only:
            raise SessionError(
                f"{self.location}: cannot write, the session was opened read-only", kind="read_only"
            )
        epoch = self.conn.epoch
        if self._lease.held and not self._recheck and epoch == self._epoch:
            return
        if self._lease.lost is not None:
            raise SessionLockedError(self._lease.lost, kind="lease_lost")
        if not self._lease.held:
            self._lease.acquire()
        elif epoch != self._epoch:
            self._lease.reclaim()
        self._check_tail()
        self._recheck, self._epoch = False, epoch  # only once the check succeeded

    def _check_tail(self) -> None:
        """Read the session again when its last stored entry is not the one this writer knows."""
        if not self._exists:
            return
        row = self.conn.query_one(
            "SELECT seq, id FROM st_entries WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (self.session_id,),
        )
        seq, last = (int(row[0]), str(unkey(row[1]))) if row else (0, None)
        if seq == self._count and last == (self._last[0] if self._last else None):
            return
        if self._appended:  # never expected: this transaction wrote on the view that turned out stale
            raise StorageError(
                f"{self.location}: the stored session changed inside a write transaction; nothing of it was "
                "written (the next write reads the session again)"
            )
        known, self._change = self._count, _CHANGED
        if seq < known:
            self._change = (
                f"the store no longer holds the last {known - seq} of the {known} entries this writer knew "
                "(the server lost commits it had acknowledged, as synchronous_commit=off allows in a crash)"
            )
            self._lost.append(Problem("lost_entries", None, f"{self.location}: {self._change}"))
            logger.warning("%s", self._lost[-1].message)
        if not self._load():  # the session row itself was lost: it is written again with the next entry
            self._forget_stored()
        self._present.clear()  # ids known to exist may have been lost
        self._written.clear()
        self._chunked([])
        self._snapshot = self._state()
        self._generation += 1

    def _forget_stored(self) -> None:
        self._exists, self._count, self._last, self._irregular = False, 0, None, False
        self._pointers.clear()
        self._entries.clear()
        self._walks.clear()
        self._absent.clear()
        self._loaded, self._labels = None, None
        self._info = SessionInfoBuilder(keep_texts=False)

    @property
    def problems(self) -> list[Problem]:
        return [*super().problems, *self._lost]

    @property
    def change_reason(self) -> str:
        return self._change

    def _state(self) -> _State:
        info = self._info
        labels = None if self._labels is None else len(self._labels)
        return (
            (self._count, self._last, self._exists, self._irregular),
            (info.name, info.message_count, info.first_message, info.last_activity),
            labels,
        )

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.conn.in_transaction:
            self._nesting += 1 if self._nesting else 0
            try:
                yield
            finally:
                self._nesting -= 1 if self._nesting else 0
            return
        self._nesting = 1
        self._snapshot = self._state()
        had_lease = self._lease.fence is not None
        self._appended, self._renewed = [], None
        try:
            with self.conn.transaction():
                yield
                if self._appended:
                    self._finish()
        except BaseException:
            if not had_lease and self._lease.fence is not None:
                self._lease.forget()  # taken inside the transaction: rolled back with it
            if self._appended:
                self._undo(*self._snapshot)
            raise
        finally:
            self._appended, self._renewed, self._nesting = [], None, 0
            self._held_rows, self._held_texts = [], []
            self._unchecked.clear()
            self._guarded = None

    def _undo(
        self,
        saved: tuple[int, tuple[str, str, str | None] | None, bool, bool],
        saved_info: tuple[str | None, int, str | None, float | None],
        saved_labels: int | None,
    ) -> None:
        """Forget what a failed transaction appended, keeping what is still true (so the manager can read
        its labels and leaf back without the server); the next write checks what was really committed."""
        count = saved[0]
        for entry_id in self._appended:
            self._pointers.pop(entry_id, None)
            self._present.discard(entry_id)
            self._written.pop(entry_id, None)
        for seq in [s for s in self._entries if s > count]:
            del self._entries[seq]
        self._walks.clear()  # a walk may pass rows that were rolled back (their seqs will be used again)
        self._chunked([])
        if self._labels is not None:
            del self._labels[saved_labels or 0 :]
        self._count, self._last, self._exists, self._irregular = saved
        (
            self._info.name,
            self._info.message_count,
            self._info.first_message,
            self._info.last_activity,
        ) = saved_info
        self._loaded = None
        self._recheck = True  # a commit that reported failure may still have taken effect
        self._generation += 1  # the manager reads labels and the leaf again

    def new_id_in_use(self, entry_id: str) -> bool:
        """PostgreSQL, for an append that is its own transaction: answered from what this writer knows, without
        asking; the statement that writes the entry checks the store and refuses a taken id
        (``EntryIdInUse``, nothing written)."""
        if self.conn.dialect != "postgresql" or self._nesting != 1 or self._appended or self._irregular:
            return self.contains(entry_id)
        if entry_id in self._pointers or entry_id in self._present:
            return True
        self._unchecked.add(entry_id)
        return False

    def _taken(self, entry_id: str) -> EntryIdInUse:
        return EntryIdInUse(
            f"{self.location}: the new entry's id {entry_id} is taken by an entry of the session; nothing was "
            "written",
            entry_id,
        )

    def append(self, entry: Mapping[str, Any]) -> None:
        check_envelope(entry)
        self.append_line(entry, encode_entry(entry))

    def append_line(self, entry: Mapping[str, Any], line: bytes) -> None:
        """Insert ``entry`` whose exact line is ``line`` (copies keep the bytes they read)."""
        with self.transaction():
            generation = self._generation
            self.prepare_write()
            if self._generation != generation:  # the entry was built on a view that the check replaced
                raise StorageError(
                    f"{self.location}: the session changed before this entry was written ({self._change}); "
                    "nothing was written, build it again on the session as it is now"
                )
            if (
                self.conn.dialect != "postgresql"
            ):  # PostgreSQL renews with the rows (``_finish``, ``_send_held``)
                self._renew()
            if not self._exists:
                self._create_row()
            self._insert(entry, line)

    def store_header(self) -> None:
        """Store the session before its first entry (a copy of a session that holds only its header)."""
        self.prepare_write()
        with self.transaction():
            self._renew()
            if not self._exists:
                self._create_row()

    def _renew(self) -> None:
        """Renew the lease at the first write of a transaction, and again only when a third of its time to
        live has passed: until the commit the renewal keeps the lease row locked (the whole database in
        SQLite), so no other writer can take it over in between. PostgreSQL's appends leave it to the first
        statement that sends their rows (``_send_held``, or ``_finish``'s, which holds it itself)."""
        now = time.monotonic()
        if self._renewed is None or now - self._renewed > self._lease.ttl_ms / 3000:
            self._lease.renew()
            self._renewed = now

    def _finish(self) -> None:
        """The end of a transaction that appended: the session row once (not once per entry: a row
        updated again and again in one PostgreSQL transaction makes each later statement slower), and
        the lease renewed in the same statement when no statement renewed it yet, or long ago. A
        transaction of appends only sends that statement alone, in autocommit (``Conn.query_last``):
        ``renewal`` is then never ``None``, since only a statement sent before sets ``_renewed``."""
        info = self._info
        update = (
            self._count,
            display(info.name),
            info.message_count,
            display(info.first_message),
            int(info.last_activity) if info.last_activity is not None else None,
            1 if self._irregular else 0,
            self.session_id,
        )
        if self._held_rows and len(self._held_rows) <= MAX_ROWS:
            self.conn.before_statement = None
            rows, texts = self._held_rows, self._held_texts
            self._held_rows, self._held_texts = [], []
            epoch, now = self.conn.epoch, time.monotonic()
            renew = self._renewed is None or now - self._renewed > self._lease.ttl_ms / 3000
            renewal = self._lease.renewal() if renew else None
            fresh, self._guarded = self._guarded, None
            sql, params = statement(
                renewal, rows, texts, (_UPDATE_SESSION, update), None if fresh is None else key(fresh)
            )
            found = next(iter(self.conn.query_last(sql, params)), None)
            if renew:
                self._lease.renewed(int(found[0]) if found else 0, epoch)
                self._renewed = now
            if fresh is not None and (found is None or found[1]):
                raise self._taken(fresh)
            self._chunked(rows)  # (none of them fills a chunk: that row is sent on its own, ``_insert``)
            return
        self._send_held()
        self.conn.execute(_UPDATE_SESSION, update)
        self._renew()

    def _send_held(self) -> None:
        """The rows held back for the end of the transaction, sent now (another statement comes first)."""
        self.conn.before_statement = None
        rows, texts = self._held_rows, self._held_texts
        self._held_rows, self._held_texts = [], []
        fresh, self._guarded = self._guarded, None
        if fresh is not None and self._by_id(fresh) is not None:
            raise self._taken(fresh)
        if rows:
            self._renew()
            self._flush(rows, texts)

    def _create_row(self) -> None:
        header = self._header
        if header is None:
            raise SessionError(f"{self.location}: no session header to write", kind="invalid_state")
        block = self._header_line if self._header_line is not None else _json.dumps_bytes(header)
        cwd = header.get("cwd")
        parent = header.get("parentSession")
        created = header.get("timestamp")
        changed = self.conn.execute(
            "INSERT INTO st_sessions (id, header, created, cwd, parent_session) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            (
                self.session_id,
                block,
                display(created) if isinstance(created, str) else None,
                display(cwd) if isinstance(cwd, str) else "",
                display(parent) if isinstance(parent, str) else None,
            ),
        )
        if changed != 1:
            raise SessionLockedError(f"{self.location} was created by another writer first")
        self._header_line = block
        self._exists = True

    def _insert(self, entry: Mapping[str, Any], line: bytes) -> None:
        row, text = self._row(entry, line, None)
        if not self._irregular:
            if len(self._written) >= CACHE:
                self._written.clear()
            self._written[str(entry["id"])] = (row[1], line)
        if self.conn.dialect == "postgresql":  # sent with the end of the transaction (``_finish``)
            self._held_rows.append(row)
            if text is not None:
                self._held_texts.append(text)
            self.conn.before_statement = self._send_held
            if row[1] % tree_chunks.CHUNK_ROWS == 0 and not self._irregular:
                self._send_held()  # the row that fills a tree chunk: sent now, the chunk after it (``_flush``)
            return
        self.conn.execute(_INSERT_ENTRY, row)
        self._chunked([row])
        if text is not None:
            self.conn.execute(insert_text_sql(self.conn.dialect), text)

    def append_lines(self, pairs: Iterable[tuple[Mapping[str, Any], bytes]]) -> None:
        """Insert many entries, each with its exact line, in one transaction and in batches of statements
        (what ``sessiontree copy`` and forks write): the same rows ``append_line`` writes one at a time."""
        # (bulk_allocation: no collection passes over the entries decoded meanwhile, none of them in a cycle)
        before = self._count
        with self.transaction(), self.conn.bulk(), bulk_allocation():
            self.prepare_write()
            self._renew()
            known: dict[str, Pointers] = {}  # this call's entries: not all in the database until flushed
            rows: list[tuple[Any, ...]] = []
            texts: list[tuple[Any, ...]] = []
            for entry, line in pairs:
                if not self._exists:
                    self._create_row()
                row, text = self._row(entry, line, known)
                rows.append(row)
                if text is not None:
                    texts.append(text)
                if len(rows) >= _BULK:
                    self._flush(rows, texts)
            self._flush(rows, texts)
        # (committed, unless inside a caller's transaction)
        analyze_after_load(self.conn, self._count - before)

    def _flush(self, rows: list[tuple[Any, ...]], texts: list[tuple[Any, ...]]) -> None:
        if rows:
            self.conn.copy_rows("st_entries", ENTRY_COLUMNS, rows, ENTRY_TYPES)
            self._chunked(rows)
        if texts:
            insert_texts(self.conn, texts)
        rows.clear()
        texts.clear()
        self._renew()

    def _chunked(self, rows: list[tuple[Any, ...]]) -> None:
        """The tree chunks the inserted ``rows`` fill (none for an irregular session; no rows: forget those
        kept, after a rollback or a read of the session again)."""
        if self._irregular or not rows:
            self._chunks.reset()
        else:
            self._chunks.add_rows(rows)

    def _row(
        self, entry: Mapping[str, Any], line: bytes, known: dict[str, Pointers] | None
    ) -> tuple[tuple[Any, ...], tuple[Any, ...] | None]:
        """The entry row and search-text row for ``entry`` as the next entry, and this session's state
        moved on past it. ``known`` holds the pointers of entries of the same batch not written yet."""
        entry_id = str(entry["id"])
        kind = str(entry["type"])
        raw_parent = entry.get("parentId")
        parent_id = raw_parent if isinstance(raw_parent, str) else None
        parent = None
        if parent_id is not None:
            parent = known.get(parent_id) if known else None
            if parent is None:
                parent = self._pointers_of(parent_id)
        unchecked = entry_id in self._unchecked  # checked by the statement that writes it
        duplicate = (
            (known is not None and entry_id in known)
            or entry_id in self._pointers
            or (not unchecked and self._count > len(known or ()) and self._by_id(entry_id) is not None)
        )
        if unchecked:
            self._unchecked.clear()
            self._guarded = entry_id
        if duplicate or (parent_id is not None and (parent is None or parent_id == entry_id)):
            self._irregular = True  # pointers no longer tell the truth: read this session whole from now on
        seq = self._count + 1
        setting = settings_kind(entry)
        p_depth, p_comp, p_model, p_think, p_tools = (
            (parent[1], parent[2], parent[3], parent[4], parent[5])
            if parent
            else (-1, None, None, None, None)
        )
        pointers: Pointers = (
            seq,
            p_depth + 1,
            seq if kind == "compaction" else p_comp,
            seq if setting == "model" else p_model,
            seq if setting == "thinking" else p_think,
            seq if setting == "tools" else p_tools,
        )
        target = entry.get("targetId") if kind in ("label", "leaf") else None
        stamp = entry.get("timestamp")
        row = (
            self.session_id,
            seq,
            key(entry_id),
            key(parent_id),
            key(kind),
            key(stamp) if isinstance(stamp, str) else None,
            line,
            parent[0] if parent else None,
            *pointers[1:],
            key(target) if isinstance(target, str) else None,
        )
        info = self._info
        info.add(entry)  # (keeps no texts: the text goes to the search table)
        text = entry_search_text(entry)
        self._count = seq
        self._last = (entry_id, kind, target if isinstance(target, str) else None)
        self._appended.append(entry_id)
        if self._labels is not None and kind in ("label", "session_info"):
            self._labels.append(dict(entry))
        self._absent.discard(entry_id)
        self._remember(entry_id, pointers)
        if known is not None:
            known[entry_id] = pointers
        self._loaded = None
        if text is None:
            return row, None
        return row, text_params(self.conn.dialect, self.session_id, seq, key(entry_id), text)

    # -- reads of what this writer wrote ------------------------------------------------------------------
    def position(self, entry_id: str) -> int | None:
        """As the store answers, without asking it for an entry this writer stored (the harness reads each
        new entry back when it extends its context)."""
        written = None if self._irregular else self._written.get(entry_id)
        return written[0] - 1 if written is not None else super().position(entry_id)

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        written = None if self._irregular else self._written.get(entry_id)
        if written is None:
            return super().get_entry(entry_id)
        seq, line = written
        entry = self._entries.get(seq)
        if entry is None:
            try:
                entry = decode_line(line, str(self.location))
            except Damage:
                return super().get_entry(entry_id)
            if len(self._entries) >= CACHE:
                self._entries.clear()
            self._entries[seq] = entry
        return entry

    def record_problems(self, problems: Sequence[Problem]) -> None:
        """Keep what was found wrong in the source of an imported session (shown by ``problems``)."""
        self._import_problems = list(problems)
        payload = json.dumps(
            [{"kind": p.kind, "line": p.line, "message": p.message, "entry_id": p.entry_id} for p in problems]
        )
        with self.conn.transaction():
            self.conn.execute("UPDATE st_sessions SET problems = ? WHERE id = ?", (payload, self.session_id))

    def sync(self) -> None:
        """Nothing to do: each commit is as durable as the store's option makes it (SQLite's ``synchronous``,
        PostgreSQL's ``synchronous_commit``; durable by default)."""

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._lease.release()
        self.conn.close()
