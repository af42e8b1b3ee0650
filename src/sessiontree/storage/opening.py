"""How SessionManagers come to be from files: create, open, continue, in memory, fork a file, list.

The manager's class methods call these with the class itself (``cls``), so this module needs nothing from
``manager.py``; operations on an existing manager (branching into a new file, switching files) are methods.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sessiontree.errors import CorruptSessionError, SessionError, SessionNotFoundError
from sessiontree.format.ids import assert_valid_session_id, new_entry_id
from sessiontree.storage import JsonlStore, MemoryStore, _fileio
from sessiontree.storage.new_session import ensure_session_dir, new_header, open_file_store, split_options
from sessiontree.storage.session_dirs import (
    SessionInfo,
    collect_session_infos,
    find_most_recent_session,
    get_default_session_dir,
    get_sessions_root,
    list_session_files,
    resolve_cwd,
)

M = TypeVar("M")
Maker = Callable[..., M]
"""The manager class: ``Maker(store, cwd=…, session_dir=…, persist=…, **options)``."""


def create_session(
    cls: Maker[M],
    cwd: str,
    session_dir: str | Path | None,
    *,
    id: str | None,
    parent_session: str | None,
    **options: Any,
) -> M:
    opts = split_options(options)
    if id is not None:
        assert_valid_session_id(id)  # before any directory is created
    cwd = resolve_cwd(cwd)
    header, name = new_header(opts, cwd, id, parent_session)  # validates the id before any directory exists
    directory = ensure_session_dir(cwd, session_dir)
    store = JsonlStore.create(directory / name, header, durability=opts.get("durability", "flush"))
    return cls(store, cwd=cwd, session_dir=directory, persist=True, **opts)


def open_session(
    cls: Maker[M],
    path: str | Path,
    session_dir: str | Path | None,
    cwd_override: str | None,
    *,
    read_only: bool,
    **options: Any,
) -> M:
    opts = split_options(options)
    # Not resolved here: the store resolves a symbolic link itself (and refuses to create through one).
    store = open_file_store(
        Path(path).expanduser().absolute(), opts, read_only=read_only, new_cwd=cwd_override
    )
    header_cwd = store.header.get("cwd") if store.header else None
    cwd = cwd_override or (header_cwd if isinstance(header_cwd, str) else None) or os.getcwd()
    assert store.path is not None
    directory = (
        _fileio.resolve_session_dir(Path(session_dir)) if session_dir is not None else store.path.parent
    )
    return cls(store, cwd=cwd, session_dir=directory, persist=True, **opts)


def in_memory(cls: Maker[M], cwd: str | None, **options: Any) -> M:
    opts = split_options(options)
    cwd = cwd if cwd is not None else os.getcwd()
    header, _ = new_header(opts, cwd, None, None)
    return cls(MemoryStore(header=header), cwd=cwd, session_dir=None, persist=False, **opts)


def _cwd_filter(cwd: str, session_dir: str | Path | None) -> str | None:
    """A custom session directory shared by projects lists only the sessions of ``cwd``."""
    if session_dir is None:
        return None
    resolved = resolve_cwd(cwd)
    if _fileio.resolve_session_dir(Path(session_dir)) == get_default_session_dir(resolved):
        return None
    return resolved


def continue_recent(cls: Maker[M], cwd: str, session_dir: str | Path | None, **options: Any) -> M:
    directory = ensure_session_dir(resolve_cwd(cwd), session_dir)
    recent = find_most_recent_session(directory, _cwd_filter(cwd, session_dir))
    if recent is not None:
        return open_session(cls, recent, directory, None, read_only=False, **options)
    return create_session(cls, cwd, directory, id=None, parent_session=None, **options)


def fork_from(
    cls: Maker[M],
    source_path: str | Path,
    target_cwd: str,
    session_dir: str | Path | None,
    *,
    id: str | None,
    **options: Any,
) -> M:
    opts = split_options(options)
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
        header, name = new_header(opts, cwd, id, str(source))
        directory = ensure_session_dir(cwd, session_dir)
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


def list_sessions(
    cwd: str, session_dir: str | Path | None, on_progress: Callable[[int, int], None] | None
) -> list[SessionInfo]:
    resolved = resolve_cwd(cwd)
    directory = (
        _fileio.resolve_session_dir(Path(session_dir))
        if session_dir is not None
        else get_default_session_dir(resolved)
    )
    return collect_session_infos(list_session_files(directory), on_progress, _cwd_filter(cwd, session_dir))


def list_all_sessions(
    session_dir: str | Path | None, on_progress: Callable[[int, int], None] | None
) -> list[SessionInfo]:
    if session_dir is not None:
        files = list_session_files(_fileio.resolve_session_dir(Path(session_dir)))
    else:
        root = get_sessions_root()
        try:
            subdirs = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            subdirs = []
        files = [f for d in subdirs for f in list_session_files(d)]
    return collect_session_infos(files, on_progress)
