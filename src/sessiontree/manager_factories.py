"""How SessionManagers come to be: create, open, continue, in-memory, fork, branch into a new file, list.

Separated from ``manager.py`` so that file stays about one session's state; no context logic here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import entries as E
from .errors import CorruptSessionError, SessionError, SessionNotFoundError
from .ids import assert_valid_session_id, iso_from_ms, new_entry_id, now_ms, uuid7
from .repo import (
    SessionInfo,
    collect_session_infos,
    ensure_private_dir,
    find_most_recent_session,
    get_default_session_dir,
    get_sessions_root,
    list_session_files,
    resolve_cwd,
    session_file_name,
)
from .storage import EntryStore, JsonlStore, MemoryStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from .manager import SessionManager

_MANAGER_OPTIONS = ("clock", "id_factory", "session_id_factory", "durability", "persist_leaf", "stale_leaf")


def _split_options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(_MANAGER_OPTIONS)
    if unknown:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    return options


def _header(
    options: dict[str, Any], cwd: str, session_id: str | None, parent_session: str | None
) -> tuple[dict[str, Any], str]:
    sid = session_id if session_id is not None else options.get("session_id_factory", uuid7)()
    assert_valid_session_id(sid)  # a factory's output too: an id is part of a file name
    ts = iso_from_ms(options.get("clock", now_ms)())
    return E.session_header(sid, ts, cwd, parent_session), session_file_name(ts, sid)


def _session_dir(cwd: str, session_dir: str | Path | None) -> Path:
    directory = (
        Path(session_dir).expanduser().resolve() if session_dir is not None else get_default_session_dir(cwd)
    )
    return ensure_private_dir(directory)


def create_session(
    cls: type[SessionManager],
    cwd: str,
    session_dir: str | Path | None,
    *,
    id: str | None,
    parent_session: str | None,
    **options: Any,
) -> SessionManager:
    opts = _split_options(options)
    if id is not None:
        assert_valid_session_id(id)  # before any directory is created
    cwd = resolve_cwd(cwd)
    header, name = _header(opts, cwd, id, parent_session)  # validates the id before any directory exists
    directory = _session_dir(cwd, session_dir)
    store = JsonlStore.create(directory / name, header, durability=opts.get("durability", "flush"))
    return cls(store, cwd=cwd, session_dir=directory, persist=True, **opts)


def _open_store(
    path: Path, opts: dict[str, Any], *, read_only: bool, new_cwd: str | None = None
) -> EntryStore:
    """Open ``path``; a missing or empty file becomes a new session whose header cwd is ``new_cwd``."""
    durability = opts.get("durability", "flush")
    cwd = new_cwd if new_cwd is not None else os.getcwd()
    # No exists() check first: a missing file is a new session at that path (created, exclusively, with its
    # first entry), so a process that loses a race to create it gets SessionLockedError at that write.
    store = JsonlStore.open(
        path,
        read_only=read_only,
        durability=durability,
        id_factory=opts.get("id_factory", new_entry_id),
        missing_ok=not read_only,
    )
    if store.header is None:
        header, _ = _header(opts, cwd, None, None)
        store.set_header(header)
    return store


def open_session(
    cls: type[SessionManager],
    path: str | Path,
    session_dir: str | Path | None,
    cwd_override: str | None,
    *,
    read_only: bool,
    **options: Any,
) -> SessionManager:
    opts = _split_options(options)
    # Not resolved here: the store resolves a symbolic link itself (and refuses to create through one).
    store = _open_store(Path(path).expanduser().absolute(), opts, read_only=read_only, new_cwd=cwd_override)
    header_cwd = store.header.get("cwd") if store.header else None
    cwd = cwd_override or (header_cwd if isinstance(header_cwd, str) else None) or os.getcwd()
    assert store.path is not None
    directory = Path(session_dir).expanduser().resolve() if session_dir is not None else store.path.parent
    return cls(store, cwd=cwd, session_dir=directory, persist=True, **opts)


def load_into(manager: SessionManager, path: Path) -> None:
    file = path.expanduser().absolute()
    opts = {
        "clock": manager.clock,
        "id_factory": manager.id_factory,
        "session_id_factory": manager.session_id_factory,
        "durability": manager.durability,
    }
    # A missing or empty file starts a new session that keeps this manager's cwd (as pi does). A read-only
    # manager stays read-only: the new file is opened read-only too (never migrated, locked or created).
    store = _open_store(file, opts, read_only=manager.store.read_only, new_cwd=manager.get_cwd())
    header_cwd = store.header.get("cwd") if store.header else None
    manager._replace_store(store, cwd=header_cwd if isinstance(header_cwd, str) else None)


def in_memory(cls: type[SessionManager], cwd: str | None, **options: Any) -> SessionManager:
    opts = _split_options(options)
    cwd = cwd if cwd is not None else os.getcwd()
    header, _ = _header(opts, cwd, None, None)
    return cls(MemoryStore(header=header), cwd=cwd, session_dir=None, persist=False, **opts)


def _cwd_filter(cwd: str, session_dir: str | Path | None) -> str | None:
    """A custom session directory shared by projects lists only the sessions of ``cwd``."""
    if session_dir is None:
        return None
    resolved = resolve_cwd(cwd)
    if Path(session_dir).expanduser().resolve() == get_default_session_dir(resolved):
        return None
    return resolved


def continue_recent(
    cls: type[SessionManager], cwd: str, session_dir: str | Path | None, **options: Any
) -> SessionManager:
    directory = _session_dir(resolve_cwd(cwd), session_dir)
    recent = find_most_recent_session(directory, _cwd_filter(cwd, session_dir))
    if recent is not None:
        return open_session(cls, recent, directory, None, read_only=False, **options)
    return create_session(cls, cwd, directory, id=None, parent_session=None, **options)


def fork_from(
    cls: type[SessionManager],
    source_path: str | Path,
    target_cwd: str,
    session_dir: str | Path | None,
    *,
    id: str | None,
    **options: Any,
) -> SessionManager:
    opts = _split_options(options)
    if id is not None:
        assert_valid_session_id(id)  # before any directory is created
    source = Path(source_path).expanduser().resolve()
    try:
        src = JsonlStore.open(source, read_only=True, id_factory=opts.get("id_factory", new_entry_id))
    except CorruptSessionError as exc:
        raise CorruptSessionError(
            f"Cannot fork: source session has no header: {source}", path=str(source)
        ) from exc
    except SessionNotFoundError as exc:
        raise SessionNotFoundError(
            f"Cannot fork: source session file is empty or invalid: {source}", path=str(source)
        ) from exc
    try:
        if src.header is None:
            raise SessionError(
                f"Cannot fork: source session file is empty or invalid: {source}",
                kind="invalid_session",
                path=str(source),
            )
        cwd = resolve_cwd(target_cwd)
        header, name = _header(opts, cwd, id, str(source))
        directory = _session_dir(cwd, session_dir)
        migrated = any(p.kind == "migrated" for p in src.problems)
        lines: list[dict[str, Any] | bytes] = [
            src.entry_at(i) if migrated else src.raw_at(i) for i in range(len(src))
        ]
        store = JsonlStore.write_new(
            directory / name, header, lines, durability=opts.get("durability", "flush")
        )
    finally:
        src.close()
    return cls(store, cwd=cwd, session_dir=directory, persist=True, **opts)


def _refuse_read_only(manager: SessionManager, what: str) -> None:
    if manager.store.read_only:
        raise SessionError(f"Cannot {what}: the session was opened read-only", kind="read_only")


def branched_session_content(
    manager: SessionManager, leaf_id: str, *, session_id: str | None
) -> tuple[dict[str, Any], list[dict[str, Any] | bytes], str]:
    """The header, lines and file name of a new session holding root→``leaf_id`` (labels re-created after
    the path, as pi's ``createBranchedSession``); reads only, so read-only managers can use it."""
    path = manager.get_path_view(leaf_id)
    if not len(path):
        raise SessionNotFoundError(f"Entry {leaf_id} not found")
    lines: list[dict[str, Any] | bytes] = []
    kept_ids: set[str] = set()
    dropped: set[str] = set()
    previous: str | None = None
    parents = path.parents
    for i, (entry_id, kind) in enumerate(zip(path.ids, path.types, strict=True)):
        if kind == "label":
            dropped.add(entry_id)
            continue
        if parents[i] in dropped:
            # pi leaves this entry pointing at a dropped label (an orphan root); keep the chain instead.
            lines.append({**path[i], "parentId": previous})
        else:
            lines.append(path.raw(i))
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
        label_ts = manager.get_label_timestamp(target) or ts
        lines.append(E.label_entry(new_id, previous, label_ts, target, label))
        previous = new_id
    return header, lines, session_file_name(ts, sid)


def create_branched_session(manager: SessionManager, leaf_id: str, *, session_id: str | None) -> str | None:
    _refuse_read_only(manager, "create a branched session")
    header, lines, name = branched_session_content(manager, leaf_id, session_id=session_id)
    manager._replace_store(manager._spawn(header, name, lines))
    return manager.get_session_file()


def new_session(manager: SessionManager, *, id: str | None, parent_session: str | None) -> str | None:
    _refuse_read_only(manager, "start a new session")
    if id is not None:
        assert_valid_session_id(id)
    header, name = manager._fresh_header(id, parent_session)
    manager._replace_store(manager._spawn(header, name, None))
    return manager.get_session_file()


def list_sessions(
    cwd: str, session_dir: str | Path | None, on_progress: Callable[[int, int], None] | None
) -> list[SessionInfo]:
    resolved = resolve_cwd(cwd)
    directory = (
        Path(session_dir).expanduser().resolve()
        if session_dir is not None
        else get_default_session_dir(resolved)
    )
    return collect_session_infos(list_session_files(directory), on_progress, _cwd_filter(cwd, session_dir))


def list_all_sessions(
    session_dir: str | Path | None, on_progress: Callable[[int, int], None] | None
) -> list[SessionInfo]:
    if session_dir is not None:
        files = list_session_files(Path(session_dir).expanduser().resolve())
    else:
        root = get_sessions_root()
        try:
            subdirs = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            subdirs = []
        files = [f for d in subdirs for f in list_session_files(d)]
    return collect_session_infos(files, on_progress)
