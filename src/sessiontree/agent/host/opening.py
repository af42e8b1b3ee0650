"""Which session an agent session works on, as pi's command line names it: ``--session FILE|ID`` (a path, or
a session id, unique id prefix or name: this project's sessions first, then every project's), ``-c`` (the
most recent session of the directory), ``--no-session`` (in memory, nothing written), ``--session-dir DIR``
(where sessions are looked for and created) and ``--store URL`` (another back end; ``--session`` is then an
id in it).

Opening and listing are library calls (``SessionManager``, ``session.lookup``, the listing cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sessiontree.session.manager import SessionManager

from ...errors import SessionError

__all__ = ["SessionSpec", "looks_like_path", "open_ref", "open_session"]


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """What the command line said about the session (at most one of ``ref``, ``continue_recent``,
    ``in_memory`` is set; none: a new session)."""

    ref: str | None = None
    continue_recent: bool = False
    in_memory: bool = False
    session_dir: str | None = None
    store: str | None = None

    def check(self) -> None:
        """``invalid_argument`` for options that contradict each other."""
        chosen = [
            name
            for name, value in (
                ("--session", self.ref is not None),
                ("--continue", self.continue_recent),
                ("--no-session", self.in_memory),
            )
            if value
        ]
        if len(chosen) > 1:
            raise SessionError(f"{' and '.join(chosen)} cannot be used together", kind="invalid_argument")
        if self.store is not None and self.session_dir is not None:
            raise SessionError("--store and --session-dir cannot be used together", kind="invalid_argument")


def looks_like_path(ref: str) -> bool:
    """pi's rule: a reference with a path separator or ending in ``.jsonl`` is a file path, not an id."""
    return "/" in ref or "\\" in ref or ref.endswith(".jsonl")


def _find(ref: str, cwd: Path, session_dir: str | None) -> Path:
    from sessiontree.session.lookup import select_session
    from sessiontree.storage.listing_cache import list_sessions, session_dirs
    from sessiontree.storage.session_dirs import get_sessions_root

    here = session_dirs(str(cwd), session_dir)
    places = [here] if session_dir is not None else [here, session_dirs(all_projects=True)]
    groups = (list_sessions(directories).infos for directories in places)
    return select_session(ref, groups, [*here, *([] if session_dir else [get_sessions_root()])])


def open_ref(
    ref: str, store: str | None = None, *, cwd: Path | None = None, session_dir: str | None = None
) -> SessionManager:
    """Open the session ``ref`` names to write: with ``store``, an id (or prefix) in it unless ``ref`` is an
    existing file; else a path (relative to ``cwd``; a missing file starts a new session there, as pi does),
    or an id, unique id prefix or name of a listed session."""
    base = cwd if cwd is not None else Path.cwd()
    path = (base / Path(ref).expanduser()) if not Path(ref).expanduser().is_absolute() else Path(ref)
    if store is not None and not path.exists():
        return SessionManager.open(ref, store=store)
    if looks_like_path(ref) or path.is_file():
        from sessiontree.session.lookup import resolve_session_file

        if path.exists():
            resolve_session_file(str(path))  # a directory or another non-file is refused by name
        return SessionManager.open(path, session_dir, str(base) if not path.exists() else None)
    return SessionManager.open(_find(ref, base, session_dir), session_dir)


def open_session(spec: SessionSpec, cwd: Path) -> SessionManager:
    """The session ``spec`` names, opened for ``cwd`` (created when it names none)."""
    spec.check()
    if spec.in_memory:
        return SessionManager.in_memory(str(cwd))
    if spec.ref is not None:
        return open_ref(spec.ref, spec.store, cwd=cwd, session_dir=spec.session_dir)
    if spec.continue_recent:
        return SessionManager.continue_recent(str(cwd), spec.session_dir, store=spec.store)
    return SessionManager.create(str(cwd), spec.session_dir, store=spec.store)
