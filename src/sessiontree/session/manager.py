"""SessionManager: pi's session API in snake_case over a store, a tree index and the context functions.

Owns the leaf pointer, labels, the session name and the append methods. Byte-level storage lives in
``storage/``, the tree walk in ``tree.py``, context building in ``context.py``; this module only composes.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Container, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sessiontree.errors import SessionError, SessionNotFoundError
from sessiontree.format import entries as E
from sessiontree.format.ids import Clock, IdFactory, iso_from_ms, new_entry_id, now_ms, uuid7
from sessiontree.format.messages import validate_message
from sessiontree.format.pi_json import UNDEFINED
from sessiontree.storage import EntryStore, JsonlStore, MemoryStore, Problem
from sessiontree.storage.new_session import new_header, open_file_store
from sessiontree.storage.session_dirs import ensure_private_dir
from sessiontree.tree.context import compute_retained_tail
from sessiontree.tree.session_index import EntryIdInUse, LocalIndex, SessionIndex

from .manager_reads import ManagerReads

if TYPE_CHECKING:
    from sessiontree.storage.repository import Repo

__all__ = ["Durability", "SessionManager"]

_INFO, _WARNING = 20, 30  # logging.INFO, logging.WARNING
_logger: Any = None


def _log(level: int, message: str) -> None:
    """Log ``message`` on this module's logger. The logging module is imported for the first message: a
    process whose sessions have no problems never loads it (a few percent of a short process's imports)."""
    global _logger
    if _logger is None:
        import logging

        logging.getLogger("sessiontree").addHandler(logging.NullHandler())  # silent unless the app logs
        _logger = logging.getLogger(__name__)
    _logger.log(level, "%s", message)


def _repo(store: str, manager_class: type[SessionManager]) -> Repo[SessionManager]:
    """The shared repository of a store URL (its modules load only when a store URL is given)."""
    from sessiontree.storage.urls import shared_repo

    return shared_repo(store, manager_class=manager_class)


Durability = Literal["flush", "fsync", "batch"]
StaleLeaf = Literal["branch", "latest"]
"""What a write does when another process appended since this manager read the file: keep this manager's
leaf (``"branch"``: the new entry starts a branch beside the other writer's entries) or continue from the
file's latest entry (``"latest"``). Either way a ``stale_leaf`` problem says what happened."""
SessionIdFactory = Callable[[], str]
Spawner = Callable[
    [dict[str, Any], "builtins.list[dict[str, Any] | bytes] | None"], "EntryStore | SessionIndex"
]


_ID_DRAWS = 100
"""How many times an append draws a new random id after the store found the last one taken."""


class _IdsInUse(Container[str]):
    """The ids of a session, as a container for id factories (no copy of the index). For the random ids of
    ``new_entry_id`` it asks ``new_id_in_use`` (a store may check them as it writes), and says the ids the
    store refused are taken."""

    __slots__ = ("_index", "random", "refused")

    def __init__(self, index: SessionIndex) -> None:
        self._index = index
        self.random = False
        self.refused: set[str] = set()

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            return False
        if not self.random:  # a factory of its own may look for the first free id: exact answers
            return self._index.contains(item)
        return item in self.refused or self._index.new_id_in_use(item)


class SessionManager(ManagerReads):
    """One session (a pi JSONL file, or memory): append entries, move the leaf, build the context.

    Construct with the class methods (``create``, ``open``, ``continue_recent``, ``in_memory``,
    ``fork_from``). Ids and time are injectable: ``clock`` (epoch ms), ``id_factory`` (entry ids) and
    ``session_id_factory`` (session ids), so recorded sessions can be replayed byte for byte.
    """

    def __init__(
        self,
        store: EntryStore | SessionIndex,
        *,
        cwd: str,
        session_dir: Path | None,
        persist: bool,
        clock: Clock = now_ms,
        id_factory: IdFactory = new_entry_id,
        session_id_factory: SessionIdFactory = uuid7,
        durability: Durability = "flush",
        persist_leaf: bool = False,
        stale_leaf: StaleLeaf = "branch",
    ) -> None:
        self._lock = threading.RLock()
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self.clock = clock
        self.id_factory = id_factory
        self.session_id_factory = session_id_factory
        self.durability: Durability = durability
        self.persist_leaf = persist_leaf
        if stale_leaf not in ("branch", "latest"):
            raise ValueError(f"stale_leaf must be 'branch' or 'latest', not {stale_leaf!r}")
        self.stale_leaf: StaleLeaf = stale_leaf
        self.spawner: Spawner | None = None  # where new and branched sessions go, for database back ends
        self._attach(store)

    # ------------------------------------------------------------------ loading
    def _attach(self, store: EntryStore | SessionIndex) -> None:
        index = store if isinstance(store, SessionIndex) else LocalIndex(store)
        self._index = index
        self._store = index.store if isinstance(index, LocalIndex) else index
        self._ids_in_use = _IdsInUse(index)
        self._index_labels_and_name()
        self._leaf = index.last_leaf()
        self._cycles_checked = None
        for problem in [*index.problems, *self._extra_problems]:  # notes are news, the rest is damage
            _log(_INFO if problem.is_note else _WARNING, problem.message)

    # ------------------------------------------------------------------ factories
    @classmethod
    def create(
        cls,
        cwd: str,
        session_dir: str | Path | None = None,
        *,
        id: str | None = None,
        parent_session: str | None = None,
        store: str | None = None,
        **options: Any,
    ) -> SessionManager:
        """A new persisted session for ``cwd`` (the file is written with the first entry).

        ``store`` names another back end by URL (``sqlite:///path.db``, ``postgresql://…``, ``memory:``,
        ``jsonl:DIR``); ``session_dir`` then does not apply.
        """
        if store is not None:
            return _repo(store, cls).create(cwd, id=id, parent_session=parent_session, **options)
        from sessiontree.storage.opening import create_session

        return create_session(cls, cwd, session_dir, id=id, parent_session=parent_session, **options)

    @classmethod
    def open(
        cls,
        path: str | Path,
        session_dir: str | Path | None = None,
        cwd_override: str | None = None,
        *,
        read_only: bool = False,
        store: str | None = None,
        **options: Any,
    ) -> SessionManager:
        """Open a session file (migrating v1/v2; a missing or 0-byte file starts a session at that path).

        With ``store`` (a store URL), ``path`` is a session id (or a unique prefix of one) in that store.
        """
        if store is not None:  # ``path`` is a session id in that store
            return _repo(store, cls).open(str(path), read_only=read_only, **options)
        from sessiontree.storage.opening import open_session

        return open_session(cls, path, session_dir, cwd_override, read_only=read_only, **options)

    @classmethod
    def continue_recent(
        cls, cwd: str, session_dir: str | Path | None = None, *, store: str | None = None, **options: Any
    ) -> SessionManager:
        """Open the most recently modified session of ``cwd`` (in ``store`` when given), or create one."""
        if store is not None:
            repo = _repo(store, cls)
            listed = repo.list(cwd)
            return repo.open(listed[0].id, **options) if listed else repo.create(cwd, **options)
        from sessiontree.storage.opening import continue_recent

        return continue_recent(cls, cwd, session_dir, **options)

    @classmethod
    def in_memory(cls, cwd: str | None = None, **options: Any) -> SessionManager:
        """A session that is never written to disk."""
        from sessiontree.storage.opening import in_memory

        return in_memory(cls, cwd, **options)

    @classmethod
    def fork_from(
        cls,
        source_path: str | Path,
        target_cwd: str,
        session_dir: str | Path | None = None,
        *,
        id: str | None = None,
        **options: Any,
    ) -> SessionManager:
        """Copy every entry of ``source_path`` (verbatim) into a new session of ``target_cwd``."""
        from sessiontree.storage.opening import fork_from

        return fork_from(cls, source_path, target_cwd, session_dir, id=id, **options)

    @staticmethod
    def list(
        cwd: str,
        session_dir: str | Path | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        store: str | None = None,
    ) -> builtins.list[Any]:
        """``SessionInfo`` for every session of ``cwd`` (in ``store`` when given), newest first."""
        if store is not None:
            return _repo(store, SessionManager).list(cwd)
        from sessiontree.storage.opening import list_sessions

        return list_sessions(cwd, session_dir, on_progress)

    @staticmethod
    def list_all(
        session_dir: str | Path | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        store: str | None = None,
    ) -> builtins.list[Any]:
        """``SessionInfo`` for every session of every project (or of one flat directory, or of ``store``)."""
        if store is not None:
            return _repo(store, SessionManager).list()
        from sessiontree.storage.opening import list_all_sessions

        return list_all_sessions(session_dir, on_progress)

    # ------------------------------------------------------------------ writing
    def _now_iso(self) -> str:
        return iso_from_ms(self.clock())

    def _new_id(self) -> str:
        self._ids_in_use.random = self.id_factory is new_entry_id
        return self.id_factory(self._ids_in_use)

    def _append(self, build: Callable[[str, str | None, str], dict[str, Any]]) -> str:
        with self._lock:
            if not self._index.atomic:
                return self._append_now(build)
            # SQL stores: in the transaction from the start, so the store's check that this manager's view
            # is current runs on the connection the entry is then written on; the leaf goes back when the
            # entry's commit fails (PostgreSQL sends the entry with it, and checks its new id there)
            refused = self._ids_in_use.refused
            try:
                for draw in range(1, _ID_DRAWS + 1):
                    try:
                        with self.transaction():
                            return self._append_now(build)
                    except EntryIdInUse as exc:
                        if draw == _ID_DRAWS:
                            raise
                        refused.add(exc.entry_id)  # nothing was written: build it again with another id
            finally:
                refused.clear()
            raise AssertionError("unreachable")

    def _append_now(self, build: Callable[[str, str | None, str], dict[str, Any]]) -> str:
        self._prepare_write()
        entry = build(self._new_id(), self._leaf, self._now_iso())
        self._write(entry)
        return str(entry["id"])

    def _prepare_write(self) -> None:
        """Take the writer role before an entry is built, so its parent is decided on the file as it is."""
        index = self._index
        generation = index.generation
        index.prepare_write()
        # a leaf a database store no longer holds (a server that lost commits); files only ever grow
        gone = index.atomic and self._leaf is not None and not index.contains(self._leaf)
        if index.generation == generation and not gone:
            return
        # Another writer appended since we read the session (it was read again under the lock), or the
        # store no longer holds entries this manager knew: never build on an entry that is not stored.
        self._index_labels_and_name()
        latest = index.last_leaf()
        if latest == self._leaf:
            return
        where = index.location or "<memory>"
        if self.stale_leaf == "latest" or (self._leaf is not None and not index.contains(self._leaf)):
            what = f"continuing from the session's latest entry {latest} instead of {self._leaf}"
            self._leaf = latest
        else:
            what = (
                f"the next entry branches from this manager's leaf {self._leaf}, not from the session's "
                f"latest entry {latest} (open with stale_leaf='latest' to continue from the latest entry)"
            )
        problem = Problem("stale_leaf", None, f"{where}: {index.change_reason}; {what}")
        self._extra_problems.append(problem)
        _log(_WARNING, problem.message)

    def _write(self, entry: dict[str, Any]) -> None:
        index = self._index
        if not self._persist and index.path is not None:
            raise SessionError("in-memory session has a path", kind="invalid_state")
        generation = index.generation
        index.append(entry)
        kind = entry.get("type")
        if index.generation != generation:
            # the session had changed and was read again: labels and name as it has them now
            self._index_labels_and_name()
        elif kind == "label":
            self._apply_label(entry)
        elif kind == "session_info":
            self._apply_session_info(entry)
        if kind == "leaf":
            target = entry.get("targetId")
            self._leaf = target if isinstance(target, str) else None
        else:
            self._leaf = entry["id"]

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry under the leaf (``validate_message`` checks it first); returns its id."""
        validate_message(message)
        return self._append(lambda i, p, t: E.message_entry(i, p, t, message))

    def append_thinking_level_change(self, thinking_level: str) -> str:
        return self._append(lambda i, p, t: E.thinking_level_change_entry(i, p, t, thinking_level))

    def append_model_change(self, provider: str, model_id: str) -> str:
        return self._append(lambda i, p, t: E.model_change_entry(i, p, t, provider, model_id))

    def append_active_tools_change(self, active_tool_names: builtins.list[str]) -> str:
        return self._append(lambda i, p, t: E.active_tools_change_entry(i, p, t, active_tool_names))

    def append_custom_entry(self, custom_type: str, data: Any = UNDEFINED) -> str:
        return self._append(lambda i, p, t: E.custom_entry(i, p, t, custom_type, data))

    def append_custom_message_entry(
        self, custom_type: str, content: Any, display: bool, details: Any = UNDEFINED
    ) -> str:
        return self._append(
            lambda i, p, t: E.custom_message_entry(i, p, t, custom_type, content, display, details)
        )

    def append_session_info(self, name: str) -> str:
        """Set the session name (trimmed; an empty name clears it)."""
        return self._append(lambda i, p, t: E.session_info_entry(i, p, t, name.strip()))

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (or, with ``None``/``""``, clear) the label of ``target_id``."""
        with self._lock:
            if not self._index.contains(target_id):
                raise SessionNotFoundError(f"Entry {target_id} not found")
            return self._append(lambda i, p, t: E.label_entry(i, p, t, target_id, label))

    def compute_retained_tail(self, first_kept_entry_id: str | None) -> builtins.list[dict[str, Any]]:
        """The messages pi's reader keeps for ``first_kept_entry_id`` on the current path (B§13)."""
        with self._lock:
            return compute_retained_tail(self.get_path_view(), first_kept_entry_id)

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: float,
        details: Any = UNDEFINED,
        from_hook: Any = UNDEFINED,
        *,
        retained_tail: Any = None,
    ) -> str:
        """Append a compaction; ``retainedTail`` is computed from the path unless given (``UNDEFINED`` omits it)."""
        with self._lock:
            tail = self.compute_retained_tail(first_kept_entry_id) if retained_tail is None else retained_tail
            return self._append(
                lambda i, p, t: E.compaction_entry(
                    i, p, t, summary, first_kept_entry_id, tokens_before, details, from_hook, tail
                )
            )

    # ------------------------------------------------------------------ navigation
    def branch(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id`` (nothing is deleted; the next append branches from there)."""
        with self._lock:
            if not self._index.contains(entry_id):
                raise SessionNotFoundError(f"Entry {entry_id} not found")
            self._move_leaf(entry_id)

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append starts a new root."""
        with self._lock:
            self._move_leaf(None)

    def _move_leaf(self, target: str | None) -> None:
        if self.persist_leaf and target != self._leaf:
            self._append(lambda i, p, t: E.leaf_entry(i, p, t, target))
        self._leaf = target

    def branch_with_summary(
        self, branch_from_id: str | None, summary: str, details: Any = UNDEFINED, from_hook: Any = UNDEFINED
    ) -> str:
        """Move the leaf to ``branch_from_id`` and attach a branch summary of the abandoned work there.

        ``fromId`` records the abandoned leaf (``"root"`` when there was none), as the design articles say.
        """
        with self._lock:
            if branch_from_id is not None and not self._index.contains(branch_from_id):
                raise SessionNotFoundError(f"Entry {branch_from_id} not found")
            abandoned = self._leaf
            self._leaf = branch_from_id
            return self._append(
                lambda i, p, t: E.branch_summary_entry(
                    i, p, t, abandoned if abandoned is not None else "root", summary, details, from_hook
                )
            )

    def create_branched_session(self, leaf_id: str, *, session_id: str | None = None) -> str | None:
        """Extract root→``leaf_id`` into a new session (beside this one) and continue there; returns its path
        (``None`` in memory and in database stores)."""
        from sessiontree.storage.forking import branch_lines

        self._refuse_read_only("create a branched session")
        header, lines, name = branch_lines(self, leaf_id, session_id=session_id)
        self._replace_store(self._spawn(header, name, lines))
        return self.get_session_file()

    def new_session(self, *, id: str | None = None, parent_session: str | None = None) -> str | None:
        """Start a new empty session beside this one; returns its file path (``None`` in memory)."""
        self._refuse_read_only("start a new session")
        header, name = new_header(self._options(), self._cwd, id, parent_session)
        self._replace_store(self._spawn(header, name, None))
        return self.get_session_file()

    def set_session_file(self, path: str | Path) -> None:
        """Switch to another session file (opened like ``open``; a read-only manager stays read-only).

        A missing or empty file starts a new session there that keeps this manager's cwd, as pi does.
        """
        store = open_file_store(
            Path(path).expanduser().absolute(),
            self._options(),
            read_only=self._index.read_only,
            new_cwd=self._cwd,
        )
        header_cwd = store.header.get("cwd") if store.header else None
        self._replace_store(store, cwd=header_cwd if isinstance(header_cwd, str) else None)

    def _options(self) -> dict[str, Any]:
        return {
            "clock": self.clock,
            "id_factory": self.id_factory,
            "session_id_factory": self.session_id_factory,
            "durability": self.durability,
        }

    def _refuse_read_only(self, what: str) -> None:
        if self._index.read_only:
            raise SessionError(f"Cannot {what}: the session was opened read-only", kind="read_only")

    # ------------------------------------------------------------------ lifecycle
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several writes: no other thread's write lands between them (one transaction in SQL stores).

        When the block fails in a SQL store nothing of it was written: the leaf, labels and name are put back
        as they were before it (without asking the store, which may be the thing that failed).
        """
        with self._lock:
            before = (self._leaf, dict(self._labels), dict(self._label_times), self._session_name)
            generation = self._index.generation
            try:
                with self._index.transaction():
                    yield
            except BaseException:
                if self._index.generation != generation:  # the store rolled back what the block appended
                    self._leaf, self._labels, self._label_times, self._session_name = before
                raise

    def claim_writer(self) -> None:
        """Take the writer role now rather than at the first write (the file's lock, a database session's
        lease): ``SessionLockedError`` when another writer holds it. A session not written yet has nothing
        to claim; the role is kept until ``close()``."""
        with self._lock:
            self._prepare_write()

    def sync(self) -> None:
        """Make every write durable now (fsync); the harness calls this at save points."""
        self._index.sync()

    def close(self) -> None:
        """Release the writer lock and the file; the manager must not be used to write afterwards."""
        self._index.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _replace_store(
        self, store: EntryStore | SessionIndex, *, session_dir: Path | None = None, cwd: str | None = None
    ) -> None:
        old = self._index
        if old is not store and getattr(old, "store", None) is not store:
            old.close()
        if session_dir is not None:
            self._session_dir = session_dir
        if cwd is not None:
            self._cwd = cwd
        self._attach(store)

    def _spawn(
        self, header: dict[str, Any], file_name: str, lines: builtins.list[dict[str, Any] | bytes] | None
    ) -> EntryStore | SessionIndex:
        """A new session beside this one (``lines`` written at once; ``None``: nothing until the first entry)."""
        if self.spawner is not None:
            return self.spawner(header, lines)
        if not self._persist:
            return MemoryStore(header=header, entries=lines or ())
        directory = Path(self.get_session_dir() or ".")
        ensure_private_dir(directory)
        if lines is None:
            return JsonlStore.create(directory / file_name, header, durability=self.durability)
        return JsonlStore.write_new(directory / file_name, header, lines, durability=self.durability)
