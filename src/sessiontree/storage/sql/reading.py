"""The read side of one session in a SQL store: loading its row, entries by id or sequence, the context view
back to the latest compaction, whole paths and the tree on request (``session.py`` adds the writes).

Reads do not grow with the session: opening reads the session row and the last entry; the context at a leaf
reads the path back to the latest compaction (to its ``firstKeptEntryId`` without a ``retainedTail``) plus
the settings entries in force, found through per-entry pointer columns filled at insert time. A session whose
pointers cannot be trusted (an imported file with duplicate ids or late parents) is read whole, as a file is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Self

from sessiontree.errors import SessionError
from sessiontree.format import pi_json as _json
from sessiontree.storage.session_dirs import SessionInfoBuilder
from sessiontree.storage.sql.database import Conn, Database
from sessiontree.storage.sql.loaded import LoadedSession, strip_cr
from sessiontree.storage.sql.text import key, unkey
from sessiontree.tree.entry_store import Problem
from sessiontree.tree.session_index import LocalIndex, PathView, SessionIndex
from sessiontree.tree.tree_index import TreeNode

__all__ = ["Entry", "Pointers", "SessionReads"]

Entry = dict[str, Any]
_CACHE = 32_768
"""Decoded entries (and ids' pointers) a session keeps; when full, it starts again. A path longer than this
is decoded again on every read, so it is sized for the long paths adapters read whole (the Agents SDK's
``get_items``: 10k items are 10k entries) while bounding a server's memory per open session."""
_BATCH = 256

# (seq, depth, compaction_seq, model_seq, thinking_seq, tools_seq)
Pointers = tuple[int, int, int | None, int | None, int | None, int | None]
_POINTERS = "seq, depth, compaction_seq, model_seq, thinking_seq, tools_seq"


class SessionReads(SessionIndex):
    """The read side of a SQL session: its row, its entries by id and sequence, paths, contexts and tree."""

    atomic = True

    def __init__(self, db: Database, session_id: str, *, read_only: bool) -> None:
        self.db = db
        self.conn: Conn = db.connect()
        self.session_id = session_id
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
        self._generation = 0
        self._pointers: dict[str, Pointers] = {}
        self._entries: dict[int, Entry] = {}
        self._walks: dict[int, tuple[int, list[tuple[Any, ...]]]] = {}  # stop depth → last walk (see _walk)
        self._absent: set[str] = set()
        self._loaded: LocalIndex | None = None
        self._labels: list[Entry] | None = None  # label and session_info entries, once read
        self._present: set[str] = set()  # ids known to exist (the targets of labels)
        self._appended: list[str] = []  # ids appended in the open transaction
        self._renewed: float | None = None  # when the open transaction renewed the lease
        self._recheck = False
        self._info = SessionInfoBuilder()
        self._closed = False

    # -- construction ----------------------------------------------------------------------------------
    @classmethod
    def open(cls, db: Database, session_id: str, *, read_only: bool = False) -> Self:
        """An existing session (``SessionNotFoundError`` when there is none with this id)."""
        from sessiontree.errors import SessionNotFoundError

        session = cls(db, session_id, read_only=read_only)
        if not session._load():
            session.close()
            raise SessionNotFoundError(f"Session not found: {db.display}#{session_id}")
        return session

    @classmethod
    def new(cls, db: Database, header: Mapping[str, Any], header_line: bytes | None = None) -> Self:
        """A session that exists once its first entry is written (the header goes with it)."""
        session = cls(db, str(header["id"]), read_only=False)
        session._header = dict(header)
        session._header_line = header_line
        return session

    def _load(self) -> bool:
        row = self.conn.query_one(
            "SELECT header, irregular, problems, name, message_count, first_message, modified_ms "
            "FROM st_sessions WHERE id = ?",
            (self.session_id,),
        )
        if row is None:
            return False
        header_block, irregular, problems, name, messages, first, modified = row
        self._header_line = bytes(header_block)
        self._header = _json.first_object(self._header_line)
        self._exists = True
        self._irregular = bool(irregular)
        self._import_problems = [Problem(**p) for p in json.loads(problems)] if problems else []
        self._info.name, self._info.message_count, self._info.first_message = name, int(messages), first
        self._info.last_activity = float(modified) if modified is not None else None
        last = self.conn.query_one(
            "SELECT seq, id, type, target_id FROM st_entries WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (self.session_id,),
        )
        self._count = int(last[0]) if last else 0
        self._last = (str(unkey(last[1])), str(unkey(last[2])), unkey(last[3])) if last else None
        self._pointers.clear()
        self._entries.clear()
        self._walks.clear()
        self._absent.clear()
        self._loaded = None
        self._labels = None
        return True

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
        return f"{self.db.display}#{self.session_id}"

    @property
    def import_problems(self) -> list[Problem]:
        """What was found wrong in the source of a session imported lossily (recorded with it)."""
        return list(self._import_problems)

    @property
    def problems(self) -> list[Problem]:
        if self._irregular:
            return [*self._import_problems, *self._whole().problems]
        return list(self._import_problems)

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
        return self._count

    # -- reads -----------------------------------------------------------------------------------------
    def _whole(self) -> LocalIndex:
        """The session loaded whole (for the tree, and for every read of an irregular session)."""
        if self._loaded is None or len(self._loaded.store) != self._count:
            self._loaded = LocalIndex(LoadedSession(self.conn, self.session_id, self._header))
        return self._loaded

    def _decode(self, seq: int, line: Any) -> Entry:
        entry = self._entries.get(seq)
        if entry is None:
            value = _json.loads(bytes(line))
            if not isinstance(value, dict):
                raise SessionError(f"{self.location}: entry {seq} is not an object", kind="invalid_session")
            entry = value
            if len(self._entries) >= _CACHE:
                self._entries.clear()
            self._entries[seq] = entry
        return entry

    def _by_id(self, entry_id: str) -> tuple[int, Any] | None:
        """``(seq, line)`` of the last entry with this id."""
        if entry_id in self._absent:
            return None
        row = self.conn.query_one(
            "SELECT seq, line FROM st_entries WHERE session_id = ? AND id = ? ORDER BY seq DESC LIMIT 1",
            (self.session_id, key(entry_id)),
        )
        if row is None:
            if len(self._absent) >= _CACHE:
                self._absent.clear()
            self._absent.add(entry_id)
            return None
        return int(row[0]), row[1]

    def last_leaf(self) -> str | None:
        if self._last is None:
            return None
        entry_id, kind, target = self._last
        return target if kind == "leaf" else entry_id

    def contains(self, entry_id: str) -> bool:
        if entry_id in self._pointers or entry_id in self._present:
            return True
        return self._by_id(entry_id) is not None

    def position(self, entry_id: str) -> int | None:
        found = self._by_id(entry_id)
        return None if found is None else found[0] - 1

    def get_entry(self, entry_id: str) -> Entry | None:
        found = self._by_id(entry_id)
        return None if found is None else self._decode(*found)

    def entries(self) -> list[Entry]:
        rows = self.conn.query(
            "SELECT seq, line FROM st_entries WHERE session_id = ? ORDER BY seq", (self.session_id,)
        )
        return [self._decode(int(seq), line) for seq, line in rows]

    def ids_starting_with(self, prefix: str) -> list[str]:
        if key(prefix) != prefix:  # a prefix with a lone surrogate: compare the real ids
            return [i for i in dict.fromkeys(self.envelopes()[0]) if i.startswith(prefix)]
        rows = self.conn.query(
            "SELECT id FROM st_entries WHERE session_id = ? AND substr(id, 1, ?) = ? ORDER BY seq",
            (self.session_id, len(prefix), prefix),
        )
        return list(dict.fromkeys(str(unkey(r[0])) for r in rows))

    def _walk(self, seq: int, stop_depth: int, *, lines: bool) -> list[tuple[Any, ...]]:
        """Rows from the root side down to ``seq``: its ancestors up to depth ``stop_depth``, root first.

        A row never changes once written (its parent is a ``seq``, fixed at insert), so the last walk to
        each depth is kept and the next one stops where it joins it: after a turn appended a few entries
        the context reads those few rows, not the whole path again. The kept rows hold no lines (decoded
        entries are cached by ``seq``; the others are fetched in batches), so a long path is walked whole.
        """
        memo = self._walks.get(stop_depth)
        if memo is not None and memo[0] == seq:
            return list(memo[1])
        known = memo[0] if memo is not None and len(memo[1]) <= _CACHE // 2 else -1
        rows = self._walk_rows(seq, stop_depth, known, lines=lines)
        if memo is not None and rows and int(rows[0][0]) == known:
            rows = [*memo[1][:-1], *rows]
        if len(self._walks) >= 4:
            self._walks.clear()
        self._walks[stop_depth] = (seq, [r[:4] for r in rows])
        return rows

    def _walk_rows(self, seq: int, stop_depth: int, known: int, *, lines: bool) -> list[tuple[Any, ...]]:
        """The walk in SQL, ending at depth ``stop_depth`` or at the row ``known``, whichever comes first.

        The columns travel through the recursion (one primary-key lookup per step): joining the walk back
        to the table let PostgreSQL hash the whole session when its statistics were off (a fresh import).
        """
        columns = "seq, parent_seq, depth, id, type, parent_id" + (", line" if lines else "")
        picked = ", ".join(f"e.{c.strip()}" for c in columns.split(","))
        return self.conn.query(
            f"WITH RECURSIVE p({columns}) AS ("
            f" SELECT {columns} FROM st_entries WHERE session_id = ? AND seq = ?"
            " UNION ALL"
            f" SELECT {picked} FROM st_entries e JOIN p"
            " ON e.session_id = ? AND e.seq = p.parent_seq WHERE p.depth > ? AND p.seq <> ?"
            f") SELECT seq, id, type, parent_id{', line' if lines else ''} FROM p ORDER BY depth",
            (self.session_id, seq, self.session_id, stop_depth, known),
        )

    def _view(self, rows: Sequence[tuple[Any, ...]]) -> PathView:
        seqs = [int(r[0]) for r in rows]
        lines = {int(r[0]): r[4] for r in rows if len(r) > 4}

        def load(i: int) -> Entry:
            seq = seqs[i]
            if seq in self._entries:
                return self._entries[seq]
            if seq not in lines:  # fetch this line and the next ones in one query
                batch = [s for s in seqs[i : i + _BATCH] if s not in self._entries and s not in lines]
                marks = ",".join("?" * len(batch))
                for got, line in self.conn.query(
                    f"SELECT seq, line FROM st_entries WHERE session_id = ? AND seq IN ({marks})",
                    (self.session_id, *batch),
                ):
                    lines[int(got)] = line
            return self._decode(seq, lines.pop(seq))

        def raw(i: int) -> bytes:
            row = self.conn.query_one(
                "SELECT line FROM st_entries WHERE session_id = ? AND seq = ?", (self.session_id, seqs[i])
            )
            assert row is not None
            return strip_cr(bytes(row[0]))

        ids = [str(unkey(r[1])) for r in rows]
        return PathView(ids, [str(unkey(r[2])) for r in rows], [unkey(r[3]) for r in rows], load, raw)

    def path_view(self, leaf_id: str | None) -> PathView:
        if self._irregular:
            return self._whole().path_view(leaf_id)
        found = None if leaf_id is None else self._by_id(leaf_id)
        if found is None:
            return self._view([])
        return self._view(self._walk(found[0], 0, lines=False))

    def context_view(self, leaf_id: str | None) -> PathView:
        if self._irregular:
            return self._whole().context_view(leaf_id)
        pointers = None if leaf_id is None else self._pointers_of(leaf_id)
        if pointers is None:
            return self._view([])
        seq, _, compaction, model, thinking, tools = pointers
        if compaction is None:
            return self._view(self._walk(seq, 0, lines=True))
        comp_row = self.conn.query_one(
            "SELECT depth, line FROM st_entries WHERE session_id = ? AND seq = ?",
            (self.session_id, compaction),
        )
        assert comp_row is not None
        comp_depth = int(comp_row[0])
        comp_entry = self._decode(compaction, comp_row[1])
        stop = comp_depth
        first_kept = comp_entry.get("firstKeptEntryId")
        kept_depth: int | None = None
        if not isinstance(comp_entry.get("retainedTail"), list) and isinstance(first_kept, str):
            kept = self._pointers_of(first_kept)
            if kept is not None and kept[1] < comp_depth:
                kept_depth = stop = kept[1]
        rows = self._walk(seq, stop, lines=True)
        if kept_depth is not None and rows and rows[0][1] != first_kept:
            rows = rows[comp_depth - kept_depth :]  # firstKeptEntryId is not on this path: nothing kept
        present = {int(r[0]) for r in rows}
        extra = sorted({s for s in (model, thinking, tools) if s is not None and s not in present})
        if extra:
            marks = ",".join("?" * len(extra))
            before = self.conn.query(
                f"SELECT seq, id, type, parent_id, line FROM st_entries WHERE session_id = ? AND seq IN ({marks})"
                " ORDER BY depth",
                (self.session_id, *extra),
            )
            rows = [*before, *rows]
        return self._view(rows)

    def _pointers_of(self, entry_id: str) -> Pointers | None:
        cached = self._pointers.get(entry_id)
        if cached is not None:
            return cached
        row = self.conn.query_one(
            f"SELECT {_POINTERS} FROM st_entries WHERE session_id = ? AND id = ? ORDER BY seq DESC LIMIT 1",
            (self.session_id, key(entry_id)),
        )
        if row is None:
            return None
        pointers: Pointers = (int(row[0]), int(row[1]), row[2], row[3], row[4], row[5])
        self._remember(entry_id, pointers)
        return pointers

    def _remember(self, entry_id: str, pointers: Pointers) -> None:
        if len(self._pointers) >= _CACHE:
            self._pointers.clear()
        self._pointers[entry_id] = pointers

    def children(self, entry_id: str) -> list[Entry]:
        if self._irregular:
            return self._whole().children(entry_id)
        rows = self.conn.query(
            # "+seq": sort the few children; ordering by the bare primary-key column makes SQLite walk every
            # entry of the session in key order instead of searching the parent index
            "SELECT seq, line FROM st_entries WHERE session_id = ? AND parent_id = ? ORDER BY +seq",
            (self.session_id, key(entry_id)),
        )
        return [self._decode(int(seq), line) for seq, line in rows]

    def tree(self, labels: Mapping[str, tuple[str, str | None]]) -> list[TreeNode]:
        return self._whole().tree(labels)

    def cycle_problems(self) -> list[Problem]:
        return self._whole().cycle_problems() if self._irregular else []

    def label_and_name_entries(self) -> list[Entry]:
        if self._labels is None:
            # two searches of the (session_id, type, seq) index: with "type IN (…) ORDER BY seq" SQLite
            # walks every entry of the session in primary-key order instead
            rows = self.conn.query(
                "SELECT seq, line FROM st_entries WHERE session_id = ? AND type = 'label' UNION ALL "
                "SELECT seq, line FROM st_entries WHERE session_id = ? AND type = 'session_info' ORDER BY seq",
                (self.session_id, self.session_id),
            )
            self._labels = [self._decode(int(seq), line) for seq, line in rows]
            if any(e.get("type") == "label" for e in self._labels):
                # the manager checks that every label's target exists: one query, not one per label
                found = self.conn.query(
                    "SELECT DISTINCT id FROM st_entries WHERE session_id = ? AND id IN (SELECT target_id "
                    "FROM st_entries WHERE session_id = ? AND type = 'label' AND target_id IS NOT NULL)",
                    (self.session_id, self.session_id),
                )
                self._present.update(str(unkey(r[0])) for r in found)
        return list(self._labels)

    def envelopes(self) -> tuple[list[str], list[str | None], list[str]]:
        """Ids, parent ids and types of every entry in append order (one query)."""
        rows = self.conn.query(
            "SELECT id, parent_id, type FROM st_entries WHERE session_id = ? ORDER BY seq", (self.session_id,)
        )
        return [str(unkey(r[0])) for r in rows], [unkey(r[1]) for r in rows], [str(unkey(r[2])) for r in rows]

    def raw_lines(self) -> Iterator[bytes]:
        for line in self.exact_lines():
            yield strip_cr(line)

    def exact_lines(self) -> Iterator[bytes]:
        """Every entry's exact line (a trailing ``\\r`` included, as it was read), in append order."""
        rows = self.conn.query(
            "SELECT line FROM st_entries WHERE session_id = ? ORDER BY seq", (self.session_id,)
        )
        for (line,) in rows:
            yield bytes(line)
