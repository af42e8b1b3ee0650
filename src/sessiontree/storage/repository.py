"""One repository interface over every back end (``Repo``), and the file and memory repositories.

A repository creates, opens, lists, deletes, forks and searches sessions, and imports and exports the exact
lines ``sessiontree copy`` moves; it hands out sessions of the manager class it is given (``SessionManager``),
so it sits below the manager. Which store a URL names is ``store_urls.py``'s job; no session logic here.
"""

from __future__ import annotations

import builtins
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from sessiontree.errors import AmbiguousReferenceError, SessionError, SessionNotFoundError, StorageError
from sessiontree.format import pi_json as _json
from sessiontree.format.entries import session_header
from sessiontree.format.ids import assert_valid_session_id, iso_from_ms, now_ms, uuid7
from sessiontree.storage import JsonlStore, MemoryStore, Problem, _fileio
from sessiontree.storage.forking import fork_lines
from sessiontree.storage.new_session import split_options
from sessiontree.storage.opening import create_session, open_session
from sessiontree.storage.search import SearchHit, entry_search_text, query_terms, snippet
from sessiontree.storage.session_dirs import (
    SessionInfo,
    SessionInfoBuilder,
    collect_session_infos,
    encode_cwd,
    get_sessions_root,
    list_session_files,
    read_header,
    resolve_cwd,
    session_file_name,
)
from sessiontree.storage.stored_ids import storable_session_id
from sessiontree.tree.session_index import SessionIndex

__all__ = ["JsonlRepo", "ManagedSession", "ManagerClass", "MemoryRepo", "Repo", "SearchHit", "file_lines"]


class ManagedSession(Protocol):
    """What a repository needs of the sessions it hands out (``SessionManager`` is the one it is given)."""

    spawner: Any

    @property
    def index(self) -> SessionIndex: ...

    def get_session_id(self) -> str: ...

    def get_cwd(self) -> str: ...

    def get_header(self) -> dict[str, Any] | None: ...

    def get_entries(self) -> builtins.list[dict[str, Any]]: ...

    def get_session_name(self) -> str | None: ...

    def get_session_file(self) -> str | None: ...

    def close(self) -> None: ...


M = TypeVar("M", bound=ManagedSession)
ManagerClass = Callable[..., M]
"""The class sessions are built with: ``ManagerClass(store, cwd=…, session_dir=…, persist=…, **options)``."""


class Repo(ABC, Generic[M]):
    """Sessions in one store, handed out as ``manager_class`` instances (``sessiontree.open_repo`` gives
    ``SessionManager``s). ``open`` takes an id or a unique id prefix of at least 4 characters."""

    url: str
    manager_class: ManagerClass[M]

    @abstractmethod
    def create(
        self, cwd: str, *, id: str | None = None, parent_session: str | None = None, **options: Any
    ) -> M:
        """A new session for ``cwd`` (stored with its first entry)."""

    @abstractmethod
    def resolve(self, ref: str) -> str:
        """The session id ``ref`` names (an id, or a unique prefix of at least 4 characters)."""

    @abstractmethod
    def open(self, session_id: str, *, read_only: bool = False, **options: Any) -> M:
        """An existing session; ``SessionNotFoundError`` when there is none."""

    @abstractmethod
    def list(self, cwd: str | None = None) -> builtins.list[SessionInfo]:
        """``SessionInfo`` of every session (of ``cwd`` when given), newest activity first."""

    @abstractmethod
    def delete(self, session_id: str) -> None:
        """Remove a session (a missing one is no error)."""

    @abstractmethod
    def fork(
        self,
        session_id: str,
        *,
        entry_id: str | None = None,
        position: str = "before",
        cwd: str | None = None,
        id: str | None = None,
        **options: Any,
    ) -> M:
        """A new session with all of the source's entries, or the path before (``"before"``, a user message)
        or up to (``"at"``) ``entry_id``; lines and ids are kept, the header names the source."""

    @abstractmethod
    def search(self, text: str, *, cwd: str | None = None, limit: int = 20) -> builtins.list[SearchHit]:
        """Entries whose text (or session name) has every word of ``text``."""

    @abstractmethod
    def import_session(
        self, header_block: bytes, lines: Iterable[bytes], *, problems: Iterable[Problem] = ()
    ) -> str:
        """Store a session from its exact header block and entry lines; returns its id."""

    @abstractmethod
    def export(self, session_id: str) -> tuple[bytes, Iterator[bytes]]:
        """A session's exact header block and entry lines."""

    def setup(self) -> builtins.list[str]:
        """Prepare the store (apply database migrations); returns what was done."""
        return []

    def close(self) -> None:
        """Release connections (nothing to do for files and memory)."""

    def __enter__(self) -> Repo[M]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _new_header(cwd: str, id: str | None, parent: str | None, options: dict[str, Any]) -> dict[str, Any]:
    sid = id if id is not None else options.get("session_id_factory", uuid7)()
    assert_valid_session_id(sid)
    return session_header(sid, iso_from_ms(options.get("clock", now_ms)()), cwd, parent)


def _matches(entry: Any, terms: list[str]) -> str | None:
    text = entry_search_text(entry)
    if text is None:
        return None
    lower = text.lower()
    return text if all(t in lower for t in terms) else None


class JsonlRepo(Repo[M]):
    """pi's session files under a root: ``<root>/--<encoded cwd>--/<timestamp>_<id>.jsonl`` (files directly in
    the root count too). Listing reads headers and counts lines; search streams through the files."""

    def __init__(self, root: Path | None, *, manager_class: ManagerClass[M]) -> None:
        self.root = _fileio.resolve_session_dir(root if root is not None else get_sessions_root())
        self.url = f"jsonl:{self.root}"
        self.manager_class = manager_class

    def _files(self) -> list[Path]:
        files = list_session_files(self.root)
        try:
            subdirs = sorted(p for p in self.root.iterdir() if p.is_dir())
        except OSError:
            subdirs = []
        return files + [f for d in subdirs for f in list_session_files(d)]

    def _directory(self, cwd: str) -> Path:
        return self.root / encode_cwd(resolve_cwd(cwd))

    def path_of(self, ref: str) -> Path:
        """The file of the session ``ref`` names."""
        files = self._files()
        exact = [f for f in files if f.name.endswith(f"_{ref}.jsonl")]
        if not exact:
            exact = [f for f in files if (read_header(f) or {}).get("id") == ref]
        if len(exact) == 1:
            return exact[0]
        if not exact and len(ref) >= 4:
            ids = {f: (read_header(f) or {}).get("id") for f in files}
            prefixed = [f for f, i in ids.items() if isinstance(i, str) and i.startswith(ref)]
            if len(prefixed) == 1:
                return prefixed[0]
            if prefixed:
                names = [str(ids[f]) for f in prefixed]
                raise AmbiguousReferenceError(
                    f"{self.url}: {ref!r} is the start of several session ids: {', '.join(names)}",
                    candidates=names,
                )
        if len(exact) > 1:
            raise AmbiguousReferenceError(
                f"{self.url}: several files hold session {ref}: {', '.join(map(str, exact))}",
                candidates=[str(f) for f in exact],
            )
        raise SessionNotFoundError(f"Session not found: {self.url}#{ref}")

    def resolve(self, ref: str) -> str:
        header = read_header(self.path_of(ref))
        return str((header or {}).get("id"))

    def create(
        self, cwd: str, *, id: str | None = None, parent_session: str | None = None, **options: Any
    ) -> M:
        return create_session(
            self.manager_class, cwd, self._directory(cwd), id=id, parent_session=parent_session, **options
        )

    def open(self, session_id: str, *, read_only: bool = False, **options: Any) -> M:
        return open_session(
            self.manager_class, self.path_of(session_id), None, None, read_only=read_only, **options
        )

    def list(self, cwd: str | None = None) -> builtins.list[SessionInfo]:
        return collect_session_infos(self._files(), None, resolve_cwd(cwd) if cwd is not None else None)

    def delete(self, session_id: str) -> None:
        try:
            path = self.path_of(session_id)
        except SessionNotFoundError:
            return
        path.unlink(missing_ok=True)

    def fork(
        self,
        session_id: str,
        *,
        entry_id: str | None = None,
        position: str = "before",
        cwd: str | None = None,
        id: str | None = None,
        **options: Any,
    ) -> M:
        source = open_session(self.manager_class, self.path_of(session_id), None, None, read_only=True)
        try:
            lines = fork_lines(source.index, entry_id, position)
            target = resolve_cwd(cwd) if cwd is not None else source.get_cwd()
            header = _new_header(target, id, source.get_session_file(), options)
        finally:
            source.close()
        directory = self._directory(target)
        path = directory / session_file_name(str(header["timestamp"]), str(header["id"]))
        store = JsonlStore.write_new(path, header, lines, durability=options.get("durability", "flush"))
        return self.manager_class(
            store, cwd=target, session_dir=directory, persist=True, **split_options(options)
        )

    def search(self, text: str, *, cwd: str | None = None, limit: int = 20) -> builtins.list[SearchHit]:
        terms = query_terms(text)
        if not terms:
            return []
        wanted = resolve_cwd(cwd) if cwd is not None else None
        needles = [t.encode("utf-8") for t in terms]
        hits: list[SearchHit] = []
        for path in self._files():
            header = read_header(path)
            if header is None or (wanted is not None and resolve_cwd(str(header.get("cwd", "."))) != wanted):
                continue
            sid = str(header.get("id"))
            name: str | None = None
            found: list[tuple[str, str]] = []
            try:
                with path.open("rb") as handle:
                    for raw in handle:
                        lower = raw.lower()
                        if not all(n in lower for n in needles):  # cheap: words appear verbatim in pi's JSON
                            continue
                        try:
                            entry = _json.loads(raw)
                        except ValueError:
                            continue
                        body = _matches(entry, terms)
                        if body is not None and isinstance(entry, dict) and isinstance(entry.get("id"), str):
                            found.append((entry["id"], body))
                            if entry.get("type") == "session_info":
                                name = body
            except OSError:
                continue
            hits.extend(SearchHit(sid, eid, snippet(body, terms), name, str(path)) for eid, body in found)
            if len(hits) >= limit:
                break
        return hits[:limit]

    def import_session(
        self, header_block: bytes, lines: Iterable[bytes], *, problems: Iterable[Problem] = ()
    ) -> str:
        header = _json.first_object(header_block)
        if header is None or not isinstance(header.get("id"), str):
            raise SessionError("the source has no session header with an id", kind="invalid_session")
        sid = storable_session_id(header["id"], self.url)
        cwd = header.get("cwd")
        directory = self._directory(cwd if isinstance(cwd, str) else os.getcwd())
        stamp = header.get("timestamp")
        name = session_file_name(stamp if isinstance(stamp, str) else iso_from_ms(now_ms()), sid)
        blob = b"".join([header_block, b"\n", *(line + b"\n" for line in lines)])
        _fileio.atomic_replace(directory / name, blob, exclusive=True)
        return sid

    def export(self, session_id: str) -> tuple[bytes, Iterator[bytes]]:
        return file_lines(self.path_of(session_id))


def file_lines(path: Path) -> tuple[bytes, Iterator[bytes]]:
    """A session file split into its header block (up to the header line) and the lines after it."""
    data = _fileio.read_all(path)
    from sessiontree.storage._fileformat import find_header

    found = find_header(data)
    if found is None:
        raise SessionError(f"{path}: not a session (no header line)", kind="invalid_session", path=str(path))
    _, stop, _ = found
    body = data[stop + 1 :]
    rows = body.split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()
    return data[:stop], iter(rows)


class MemoryRepo(Repo[M]):
    """Sessions held in this process only; ``open`` gives back the same manager (as pi's memory repository)."""

    url = "memory:"

    def __init__(self, *, manager_class: ManagerClass[M]) -> None:
        self.manager_class = manager_class
        self._sessions: dict[str, M] = {}

    def create(
        self, cwd: str, *, id: str | None = None, parent_session: str | None = None, **options: Any
    ) -> M:
        header = _new_header(resolve_cwd(cwd), id, parent_session, options)
        return self._add(MemoryStore(header=header), str(header["cwd"]), options)

    def _add(self, store: MemoryStore, cwd: str, options: dict[str, Any]) -> M:
        manager = self.manager_class(
            store, cwd=cwd, session_dir=None, persist=False, **split_options(options)
        )
        sid = manager.get_session_id()
        if sid in self._sessions:
            raise StorageError(f"memory:#{sid}: already exists")
        self._sessions[sid] = manager
        return manager

    def resolve(self, ref: str) -> str:
        if ref in self._sessions:
            return ref
        matches = [s for s in self._sessions if len(ref) >= 4 and s.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise AmbiguousReferenceError(
                f"memory:: {ref!r} matches {', '.join(matches)}", candidates=matches
            )
        raise SessionNotFoundError(f"Session not found: memory:#{ref}")

    def open(self, session_id: str, *, read_only: bool = False, **options: Any) -> M:
        return self._sessions[self.resolve(session_id)]

    def list(self, cwd: str | None = None) -> builtins.list[SessionInfo]:
        from datetime import UTC, datetime

        wanted = resolve_cwd(cwd) if cwd is not None else None
        infos = []
        for sid, manager in self._sessions.items():
            if wanted is not None and manager.get_cwd() != wanted:
                continue
            builder = SessionInfoBuilder()
            for entry in manager.get_entries():
                builder.add(entry)
            infos.append(builder.info(f"memory:#{sid}", manager.get_header() or {}, datetime.now(UTC)))
        infos.sort(key=lambda i: i.modified, reverse=True)
        return infos

    def delete(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def fork(
        self,
        session_id: str,
        *,
        entry_id: str | None = None,
        position: str = "before",
        cwd: str | None = None,
        id: str | None = None,
        **options: Any,
    ) -> M:
        source = self.open(session_id)
        lines = fork_lines(source.index, entry_id, position)
        target = resolve_cwd(cwd) if cwd is not None else source.get_cwd()
        header = _new_header(target, id, f"memory:#{source.get_session_id()}", options)
        return self._add(MemoryStore(header=header, entries=lines), target, options)

    def search(self, text: str, *, cwd: str | None = None, limit: int = 20) -> builtins.list[SearchHit]:
        terms = query_terms(text)
        wanted = resolve_cwd(cwd) if cwd is not None else None
        hits: list[SearchHit] = []
        for sid, manager in self._sessions.items():
            if not terms or (wanted is not None and manager.get_cwd() != wanted):
                continue
            for entry in manager.get_entries():
                body = _matches(entry, terms)
                if body is not None:
                    hits.append(
                        SearchHit(sid, str(entry.get("id")), snippet(body, terms), manager.get_session_name())
                    )
        return hits[:limit]

    def import_session(
        self, header_block: bytes, lines: Iterable[bytes], *, problems: Iterable[Problem] = ()
    ) -> str:
        header = _json.first_object(header_block)
        if header is None or not isinstance(header.get("id"), str):
            raise SessionError("the source has no session header with an id", kind="invalid_session")
        storable_session_id(header["id"], self.url)
        cwd = header.get("cwd")
        manager = self._add(
            MemoryStore(header=header, entries=list(lines)), cwd if isinstance(cwd, str) else "", {}
        )
        return manager.get_session_id()

    def export(self, session_id: str) -> tuple[bytes, Iterator[bytes]]:
        manager = self.open(session_id)
        return _json.dumps_bytes(manager.get_header()), manager.index.raw_lines()
