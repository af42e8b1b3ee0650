"""SessionManager: pi's session API in snake_case over a store, a tree index and the context functions.

Owns the leaf pointer, labels, the session name and the append methods. Byte-level storage lives in
``storage/``, the tree walk in ``tree.py``, context building in ``context.py``; this module only composes.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Container, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, overload

from . import entries as E
from ._json import UNDEFINED
from .context import SessionContext, compute_retained_tail, context_from_path
from .errors import SessionError, SessionNotFoundError
from .ids import Clock, IdFactory, iso_from_ms, new_entry_id, now_ms, uuid7
from .messages import validate_message
from .repo import ensure_private_dir, resolve_cwd, session_file_name
from .storage import EntryStore, JsonlStore, MemoryStore, Problem
from .tree import TreeIndex, TreeNode

__all__ = ["Durability", "SessionManager"]

logger = logging.getLogger(__name__)
logging.getLogger("sessiontree").addHandler(logging.NullHandler())  # silent unless the application logs

Durability = Literal["flush", "fsync", "batch"]
SessionIdFactory = Callable[[], str]


class _PathView(Sequence[dict[str, Any]]):
    """Root-first path over store positions: types and ids known up front, entries decoded on demand."""

    __slots__ = ("_positions", "_store", "ids", "types")

    def __init__(self, store: EntryStore, positions: list[int]) -> None:
        self._store = store
        self._positions = positions
        self.types = store.types_at(positions)
        self.ids = store.ids_at(positions)

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._store.entry_at(p) for p in self._positions[index]]
        return self._store.entry_at(self._positions[index])


class _IdsInUse(Container[str]):
    """The ids of a store, as a container for id factories (no copy of the index)."""

    __slots__ = ("_store",)

    def __init__(self, store: EntryStore) -> None:
        self._store = store

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and self._store.index_of(item) is not None


class SessionManager:
    """One session (a pi JSONL file, or memory): append entries, move the leaf, build the context.

    Construct with the class methods (``create``, ``open``, ``continue_recent``, ``in_memory``,
    ``fork_from``). Ids and time are injectable: ``clock`` (epoch ms), ``id_factory`` (entry ids) and
    ``session_id_factory`` (session ids), so recorded sessions can be replayed byte for byte.
    """

    def __init__(
        self,
        store: EntryStore,
        *,
        cwd: str,
        session_dir: Path | None,
        persist: bool,
        clock: Clock = now_ms,
        id_factory: IdFactory = new_entry_id,
        session_id_factory: SessionIdFactory = uuid7,
        durability: Durability = "flush",
        persist_leaf: bool = False,
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
        self._attach(store)

    # ------------------------------------------------------------------ loading
    def _attach(self, store: EntryStore) -> None:
        self._store = store
        self._ids_in_use = _IdsInUse(store)
        self._tree = TreeIndex(store)
        self._leaf: str | None = None
        self._index_labels_and_name()
        n = len(store)
        if n:
            self._leaf = self._leaf_after(n - 1)
        self._cycles_checked: int | None = None
        for problem in [*store.problems, *self._extra_problems]:
            logger.warning("%s", problem.message)

    def _index_labels_and_name(self) -> None:
        """Labels and the session name from every entry of the store (on load, and after a re-index)."""
        store = self._store
        self._labels: dict[str, str] = {}
        self._label_times: dict[str, str | None] = {}
        self._session_name: str | None = None
        self._extra_problems: builtins.list[Problem] = []
        types = store.types_at(range(len(store)))
        if "label" in types or "session_info" in types:
            for i, kind in enumerate(types):
                if kind == "label":
                    self._apply_label(store.entry_at(i))
                elif kind == "session_info":
                    self._apply_session_info(store.entry_at(i))
        self._check_references()

    def _leaf_after(self, i: int) -> str | None:
        if self._store.type_at(i) == "leaf":
            target = self._store.entry_at(i).get("targetId")
            return target if isinstance(target, str) else None
        return self._store.id_at(i)

    def _apply_label(self, entry: dict[str, Any]) -> None:
        target = entry.get("targetId")
        if not isinstance(target, str):
            return
        label = entry.get("label")
        if isinstance(label, str) and label:
            self._labels[target] = label
            self._label_times[target] = entry.get("timestamp")
        else:
            self._labels.pop(target, None)
            self._label_times.pop(target, None)

    def _apply_session_info(self, entry: dict[str, Any]) -> None:
        name = entry.get("name")
        self._session_name = (name.strip() or None) if isinstance(name, str) else None

    def _check_references(self) -> None:
        store = self._store
        where = str(store.path) if store.path else "<memory>"
        for target in self._labels:
            if store.index_of(target) is None:
                self._extra_problems.append(
                    Problem(
                        "unknown_label_target",
                        None,
                        f"{where}: label points to unknown entry {target}",
                        target,
                    )
                )

    # ------------------------------------------------------------------ factories
    @classmethod
    def create(
        cls,
        cwd: str,
        session_dir: str | Path | None = None,
        *,
        id: str | None = None,
        parent_session: str | None = None,
        **options: Any,
    ) -> SessionManager:
        """A new persisted session for ``cwd`` (the file is written with the first entry)."""
        from .manager_factories import create_session

        return create_session(cls, cwd, session_dir, id=id, parent_session=parent_session, **options)

    @classmethod
    def open(
        cls,
        path: str | Path,
        session_dir: str | Path | None = None,
        cwd_override: str | None = None,
        *,
        read_only: bool = False,
        **options: Any,
    ) -> SessionManager:
        """Open a session file (migrating v1/v2; a missing or 0-byte file starts a session at that path)."""
        from .manager_factories import open_session

        return open_session(cls, path, session_dir, cwd_override, read_only=read_only, **options)

    @classmethod
    def continue_recent(
        cls, cwd: str, session_dir: str | Path | None = None, **options: Any
    ) -> SessionManager:
        """Open the most recently modified session of ``cwd``, or create one."""
        from .manager_factories import continue_recent

        return continue_recent(cls, cwd, session_dir, **options)

    @classmethod
    def in_memory(cls, cwd: str | None = None, **options: Any) -> SessionManager:
        """A session that is never written to disk."""
        from .manager_factories import in_memory

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
        from .manager_factories import fork_from

        return fork_from(cls, source_path, target_cwd, session_dir, id=id, **options)

    @staticmethod
    def list(
        cwd: str, session_dir: str | Path | None = None, on_progress: Callable[[int, int], None] | None = None
    ) -> builtins.list[Any]:
        """``SessionInfo`` for every session of ``cwd``, newest first."""
        from .manager_factories import list_sessions

        return list_sessions(cwd, session_dir, on_progress)

    @staticmethod
    def list_all(
        session_dir: str | Path | None = None, on_progress: Callable[[int, int], None] | None = None
    ) -> builtins.list[Any]:
        """``SessionInfo`` for every session of every project (or of one flat directory), newest first."""
        from .manager_factories import list_all_sessions

        return list_all_sessions(session_dir, on_progress)

    # ------------------------------------------------------------------ simple getters
    @property
    def problems(self) -> builtins.list[Problem]:
        """Everything the loader found wrong (kind, line number, message), plus reference problems and cycles."""
        if self._cycles_checked != self._store.generation:
            # appends cannot close a cycle (a new entry hangs under an existing one): one pass per load
            self._tree.find_cycles()
            self._cycles_checked = self._store.generation
        return [*self._store.problems, *self._tree.problems, *self._extra_problems]

    @property
    def store(self) -> EntryStore:
        """The storage back end (for tools that need raw lines)."""
        return self._store

    def is_persisted(self) -> bool:
        return self._persist

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return str(self._session_dir) if self._session_dir is not None else ""

    def get_session_id(self) -> str:
        header = self._store.header
        return str(header.get("id")) if header else ""

    def get_session_file(self) -> str | None:
        return str(self._store.path) if self._persist and self._store.path is not None else None

    def get_header(self) -> dict[str, Any] | None:
        return self._store.header

    def get_entries(self) -> builtins.list[dict[str, Any]]:
        """Every entry in file order (header excluded), as plain dicts."""
        return self._store.entries()

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        i = self._store.index_of(entry_id)
        return None if i is None else self._store.entry_at(i)

    def get_leaf_id(self) -> str | None:
        return self._leaf

    def get_leaf_entry(self) -> dict[str, Any] | None:
        return None if self._leaf is None else self.get_entry(self._leaf)

    def get_children(self, parent_id: str) -> builtins.list[dict[str, Any]]:
        return [self._store.entry_at(i) for i in self._tree.children_of(parent_id)]

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def get_label_timestamp(self, entry_id: str) -> str | None:
        return self._label_times.get(entry_id)

    def get_labels(self) -> dict[str, str]:
        """Current labels by target id, in pi's internal (insertion) order."""
        return dict(self._labels)

    def get_session_name(self) -> str | None:
        return self._session_name

    def _path_positions(self, leaf_id: str | None) -> builtins.list[int]:
        if leaf_id is None:
            return []
        i = self._store.index_of(leaf_id)
        return [] if i is None else self._tree.path_to_root(i)

    def get_branch(self, from_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """Entries from the root to ``from_id`` (default: the leaf), root first."""
        positions = self._path_positions(self._leaf if from_id is None else from_id)
        return [self._store.entry_at(i) for i in positions]

    def get_path_view(self, leaf_id: str | None = None) -> Sequence[dict[str, Any]]:
        """Like ``get_branch`` but lazy: entries are decoded only when read."""
        return _PathView(self._store, self._path_positions(self._leaf if leaf_id is None else leaf_id))

    def get_tree(self) -> builtins.list[TreeNode]:
        """Root nodes with children (sorted by timestamp, as pi) and labels."""
        labels = {k: (v, self._label_times.get(k)) for k, v in self._labels.items()}
        return self._tree.get_tree(labels)

    def build_session_context(self, leaf_id: str | None = None) -> SessionContext:
        """Messages and settings at the leaf (or at ``leaf_id``), honouring the latest compaction."""
        with self._lock:
            return context_from_path(self.get_path_view(leaf_id))

    # ------------------------------------------------------------------ writing
    def _now_iso(self) -> str:
        return iso_from_ms(self.clock())

    def _new_id(self) -> str:
        return self.id_factory(self._ids_in_use)

    def _append(self, build: Callable[[str, str | None, str], dict[str, Any]]) -> str:
        with self._lock:
            entry = build(self._new_id(), self._leaf, self._now_iso())
            self._write(entry)
            return str(entry["id"])

    def _write(self, entry: dict[str, Any]) -> None:
        store = self._store
        if not self._persist and store.path is not None:
            raise SessionError("in-memory session has a path", kind="invalid_state")
        generation = store.generation
        store.append(entry)
        index = len(store) - 1
        self._tree.on_append(index)
        kind = entry.get("type")
        if store.generation != generation:
            # the file had changed on disk and was indexed again: labels and name as the file has them now
            self._index_labels_and_name()
        elif kind == "label":
            self._apply_label(entry)
        elif kind == "session_info":
            self._apply_session_info(entry)
        self._leaf = self._leaf_after(index)

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
            if self._store.index_of(target_id) is None:
                raise SessionNotFoundError(f"Entry {target_id} not found")
            return self._append(lambda i, p, t: E.label_entry(i, p, t, target_id, label))

    def compute_retained_tail(self, first_kept_entry_id: str | None) -> builtins.list[dict[str, Any]]:
        """The messages pi's reader keeps for ``first_kept_entry_id`` on the current path (B§13)."""
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
            if self._store.index_of(entry_id) is None:
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
            if branch_from_id is not None and self._store.index_of(branch_from_id) is None:
                raise SessionNotFoundError(f"Entry {branch_from_id} not found")
            abandoned = self._leaf
            self._leaf = branch_from_id
            return self._append(
                lambda i, p, t: E.branch_summary_entry(
                    i, p, t, abandoned if abandoned is not None else "root", summary, details, from_hook
                )
            )

    def create_branched_session(self, leaf_id: str, *, session_id: str | None = None) -> str | None:
        """Extract root→``leaf_id`` into a new session file and continue there; returns the new path."""
        from .manager_factories import create_branched_session

        return create_branched_session(self, leaf_id, session_id=session_id)

    def new_session(self, *, id: str | None = None, parent_session: str | None = None) -> str | None:
        """Start a new empty session in the same directory; returns its file path (``None`` in memory)."""
        from .manager_factories import new_session

        return new_session(self, id=id, parent_session=parent_session)

    def set_session_file(self, path: str | Path) -> None:
        """Switch to another session file (opened like ``open``)."""
        from .manager_factories import load_into

        load_into(self, Path(path))

    # ------------------------------------------------------------------ lifecycle
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several writes: no other thread's write lands between them (one transaction in SQL stores)."""
        with self._lock:
            yield

    def sync(self) -> None:
        """Make every write durable now (fsync); the harness calls this at save points."""
        self._store.sync()

    def close(self) -> None:
        """Release the writer lock and the file; the manager must not be used to write afterwards."""
        self._store.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _replace_store(
        self, store: EntryStore, *, session_dir: Path | None = None, cwd: str | None = None
    ) -> None:
        old = self._store
        if old is not store:
            old.close()
        if session_dir is not None:
            self._session_dir = session_dir
        if cwd is not None:
            self._cwd = cwd
        self._attach(store)

    @staticmethod
    def _new_store(path: Path | None, header: dict[str, Any], durability: Durability) -> EntryStore:
        if path is None:
            return MemoryStore(header=header)
        ensure_private_dir(path.parent)
        return JsonlStore.create(path, header, durability=durability)

    def _fresh_header(self, session_id: str | None, parent_session: str | None) -> tuple[dict[str, Any], str]:
        sid = session_id if session_id is not None else self.session_id_factory()
        ts = self._now_iso()
        return E.session_header(sid, ts, self._cwd, parent_session), session_file_name(ts, sid)


def _resolve(cwd: str) -> str:
    return resolve_cwd(cwd)
