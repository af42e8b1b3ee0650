"""pi's ``/fork`` and ``/clone`` as functions: one branch of a session copied into a new session file.

Reads the source (a read-only manager will do) and writes only the new file, next to the source, with
``parentSession`` pointing back; the source is never changed and the manager stays on it.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sessiontree.errors import SessionError, SessionNotFoundError
from sessiontree.format import entries as E
from sessiontree.format.ids import assert_valid_session_id, iso_from_ms
from sessiontree.storage import EntryStore, JsonlStore
from sessiontree.storage.session_dirs import session_file_name
from sessiontree.tree.session_index import LocalIndex, PathView, SessionIndex

__all__ = ["BranchSource", "ForkResult", "branch_lines", "clone_session", "fork_lines", "fork_session"]


class BranchSource(Protocol):
    """What branching reads from a session (a ``SessionManager`` has all of it)."""

    clock: Callable[[], int]
    id_factory: Callable[[Container[str]], str]
    session_id_factory: Callable[[], str]
    spawner: Callable[[dict[str, Any], Any], EntryStore | SessionIndex] | None

    @property
    def index(self) -> SessionIndex: ...

    def get_path_view(self, leaf_id: str | None = None) -> PathView: ...

    def get_labels(self) -> dict[str, str]: ...

    def get_label_timestamp(self, entry_id: str) -> str | None: ...

    def get_cwd(self) -> str: ...

    def get_leaf_id(self) -> str | None: ...

    def get_entry(self, entry_id: str) -> dict[str, Any] | None: ...

    def get_session_file(self) -> str | None: ...


def branch_lines(
    manager: BranchSource, leaf_id: str, *, session_id: str | None
) -> tuple[dict[str, Any], list[dict[str, Any] | bytes], str]:
    """The header, lines and file name of a new session holding root→``leaf_id``, as pi's
    ``createBranchedSession``: labels on the path re-created after it; where pi orphans the entry after a
    dropped label, the chain is kept. Reads only, so a read-only manager will do."""
    path = manager.get_path_view(leaf_id)
    if not len(path):
        raise SessionNotFoundError(f"Entry {leaf_id} not found")
    lines: list[dict[str, Any] | bytes] = []
    kept_ids: set[str] = set()
    dropped: set[str] = set()
    waiting: list[str] = []  # dropped labels not yet followed by a kept entry
    next_kept: dict[str, str] = {}  # dropped label -> the next kept entry on the path
    previous: str | None = None
    parents = path.parents
    for i, (entry_id, kind) in enumerate(zip(path.ids, path.types, strict=True)):
        if kind == "label":
            dropped.add(entry_id)
            waiting.append(entry_id)
            continue
        for label_id in waiting:
            next_kept[label_id] = entry_id
        waiting.clear()
        changes: dict[str, Any] = {}
        if parents[i] in dropped:
            changes["parentId"] = previous
        if kind == "compaction":
            # A compaction whose cut was moved back over a label names the label; the copy has no labels
            # on the path, so it names the next kept entry instead (pi's createBranchedSession does the same).
            first_kept = path[i].get("firstKeptEntryId")
            if isinstance(first_kept, str) and first_kept in next_kept:
                changes["firstKeptEntryId"] = next_kept[first_kept]
        lines.append({**path[i], **changes} if changes else path.raw(i))
        kept_ids.add(entry_id)
        previous = entry_id
    sid = session_id if session_id is not None else manager.session_id_factory()
    assert_valid_session_id(sid)
    ts = iso_from_ms(manager.clock())
    header = E.session_header(sid, ts, manager.get_cwd(), manager.index.location)
    used = set(kept_ids)
    for target, label in manager.get_labels().items():
        if target not in kept_ids:
            continue
        new_id = manager.id_factory(used)
        used.add(new_id)
        lines.append(
            E.label_entry(new_id, previous, manager.get_label_timestamp(target) or ts, target, label)
        )
        previous = new_id
    return header, lines, session_file_name(ts, sid)


@dataclass(frozen=True, slots=True)
class ForkResult:
    """The new session (a file, or ``<store>#<id>`` in a database store), its leaf, and (for a fork) the text
    of the message it was forked before."""

    path: Path | str
    leaf_id: str
    entries: int
    text: str | None = None


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _write(manager: BranchSource, leaf_id: str, session_id: str | None, directory: Path | None) -> ForkResult:
    from sessiontree.storage.session_dirs import ensure_private_dir

    header, lines, name = branch_lines(manager, leaf_id, session_id=session_id)
    source = manager.get_session_file()
    target_dir = directory or (Path(source).parent if source else None)
    if target_dir is None and manager.spawner is not None:  # a database store: the copy goes beside it
        spawned = manager.spawner(header, lines)
        index = spawned if isinstance(spawned, SessionIndex) else LocalIndex(spawned)
        try:
            return ForkResult(index.location or "", str(index.last_leaf()), len(index))
        finally:
            index.close()
    if target_dir is None:
        raise SessionError("an in-memory session has no directory to fork into", kind="invalid_argument")
    ensure_private_dir(target_dir)
    store = JsonlStore.write_new(target_dir / name, header, lines)
    try:
        last = store.id_at(len(store) - 1)
        return ForkResult(Path(target_dir / name), last, len(store))
    finally:
        store.close()


def fork_session(
    manager: BranchSource,
    entry_id: str,
    *,
    session_id: str | None = None,
    directory: Path | None = None,
) -> ForkResult:
    """pi's ``/fork``: a new session with the branch up to just before the user message ``entry_id``, whose
    text comes back in ``ForkResult.text`` (to edit and send again).

    Raises ``SessionNotFoundError`` for an unknown entry and ``SessionError`` (``invalid_fork_target``) when
    the entry is not a user message, or is the first entry of its branch (the fork would be empty).
    """
    entry = manager.get_entry(entry_id)
    if entry is None:
        raise SessionNotFoundError(f"Entry {entry_id} not found")
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "user":
        raise SessionError(
            f"Cannot fork at {entry_id}: a fork starts before a user message, and this entry is not one",
            kind="invalid_fork_target",
        )
    parent = entry.get("parentId")
    if not isinstance(parent, str) or manager.get_entry(parent) is None:
        raise SessionError(
            f"Cannot fork at {entry_id}: it is the first entry of its branch, so the fork would be empty "
            "(start a new session instead)",
            kind="invalid_fork_target",
        )
    result = _write(manager, parent, session_id, directory)
    return ForkResult(result.path, result.leaf_id, result.entries, _message_text(message.get("content")))


def clone_session(
    manager: BranchSource,
    leaf_id: str | None = None,
    *,
    session_id: str | None = None,
    directory: Path | None = None,
) -> ForkResult:
    """pi's ``/clone``: a new session with the branch up to and including ``leaf_id`` (default: the leaf)."""
    target = leaf_id if leaf_id is not None else manager.get_leaf_id()
    if target is None:
        raise SessionError("Nothing to clone yet: the session has no entries", kind="invalid_fork_target")
    return _write(manager, target, session_id, directory)


def fork_lines(index: SessionIndex, entry_id: str | None, position: str = "before") -> list[bytes]:
    """The lines a repository fork copies (pi's harness repositories, SPEC B§11.5), verbatim, ids kept.

    No ``entry_id``: every entry (the whole tree). ``position="before"``: ``entry_id`` must be a user message
    and the copy is the path to its parent (empty for a root message); ``"at"``: the path to ``entry_id``.
    Raises ``SessionError`` (``invalid_fork_target``) for an unknown entry or a wrong kind of entry.
    """
    if position not in ("before", "at"):
        raise ValueError(f"position must be 'before' or 'at', not {position!r}")
    if entry_id is None:
        return list(index.raw_lines())
    entry = index.get_entry(entry_id)
    if entry is None:
        raise SessionError(f"Entry {entry_id} not found", kind="invalid_fork_target")
    end: str | None = entry_id
    if position == "before":
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "user":
            raise SessionError(f"Entry {entry_id} is not a user message", kind="invalid_fork_target")
        parent = entry.get("parentId")
        end = parent if isinstance(parent, str) else None
    view = index.path_view(end)
    return [view.raw(i) for i in range(len(view))]
