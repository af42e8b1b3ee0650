"""A cache of session metadata for fast listings: ``SessionInfo`` per file, keyed by path, size and times.

Lives in the user's cache directory (``SESSIONTREE_CACHE_DIR`` overrides it) and is never required for
correctness: a missing, stale, damaged or unwritable cache only means files are read again. It never writes
next to sessions, and a session's text is kept aside and read only when asked for.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from sessiontree.storage import _fileio
from sessiontree.storage.cache_dir import CACHE_ENV, default_cache_dir
from sessiontree.storage.session_dirs import (
    PROCESS_BYTES,
    SessionInfo,
    build_session_info,
    get_default_session_dir,
    get_sessions_root,
    list_session_files,
    read_files,
    resolve_cwd,
)

__all__ = [
    "CACHE_ENV",
    "PROCESS_BYTES",
    "Catalogue",
    "ListedSessions",
    "default_cache_dir",
    "list_sessions",
    "read_files",
    "session_dirs",
]

_FORMAT = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
Progress = Callable[[int, int], None]
# (size, mtime_ns, ctime_ns, inode): ctime moves on every change to a file and cannot be set back by tools
# that preserve mtime, so a rewritten file of the same size and mtime is still noticed.
_Stamp = tuple[int, int, int, int]


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _micros(dt: datetime) -> int:
    return (dt - _EPOCH) // _MICRO


def _keep(value: Any) -> Any:
    """A field as the cache stores it: text that UTF-8 cannot hold (a lone surrogate, which JavaScript writes
    and a session file can carry as ``\\ud800``) goes in as bytes, kept exactly with ``surrogatepass``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
    return value


def _restore(value: Any) -> Any:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _encodable(key: str) -> bool:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:  # a file name the file system gave as undecodable bytes: left uncached
        return False
    return True


class _ListedSession(SessionInfo):
    """A ``SessionInfo`` from the catalogue: ``all_messages_text`` is read from the cache when first used."""

    __slots__ = ("_text", "_text_file")

    def __init__(self, fields: list[Any], path: Path, text_file: Callable[[], Path]) -> None:
        self._text: str | None = None
        self._text_file = text_file  # where the text is, worked out only when it is read
        sid, cwd, name, parent, created, modified, count, first = map(_restore, fields)
        super().__init__(
            path,
            sid,
            cwd,
            name,
            parent,
            _EPOCH + created * _MICRO,
            _EPOCH + modified * _MICRO,
            count,
            first,
            "",
        )
        self._text = None  # the base class set "": read it on demand instead

    @property  # type: ignore[override]
    def all_messages_text(self) -> str:
        if self._text is None:
            try:
                self._text = self._text_file().read_text("utf-8", "surrogatepass")
            except OSError:
                fresh = build_session_info(Path(self.path))
                self._text = fresh.all_messages_text if fresh is not None else ""
        return self._text

    @all_messages_text.setter
    def all_messages_text(self, value: str) -> None:
        self._text = value


@dataclass
class ListedSessions:
    """What a listing found (newest first), where it looked, and how many files had to be read."""

    infos: list[SessionInfo]
    looked_in: list[Path]
    files: int
    read: int


class Catalogue:
    """The cache file (``catalogue-v1.msgpack``) and the sessions' texts beside it (``texts/``)."""

    def __init__(self, directory: Path | None = None, *, enabled: bool = True) -> None:
        self.directory = directory if directory is not None else default_cache_dir()
        self.file = self.directory / f"catalogue-v{_FORMAT}.msgpack"
        self.enabled = enabled
        self._records: dict[str, list[Any]] = {}
        self._dirty = False
        self._loaded = not enabled  # a disabled catalogue reads nothing and remembers nothing

    def _load(self) -> None:
        self._loaded = True
        try:
            data = msgspec.msgpack.decode(self.file.read_bytes())
        except (OSError, msgspec.DecodeError):
            return
        if isinstance(data, dict) and data.get("format") == _FORMAT and isinstance(data.get("records"), dict):
            self._records = data["records"]

    def _text_file(self, key: str, stamp: _Stamp) -> Path:
        import hashlib

        digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return self.directory / "texts" / f"{digest}-{stamp[0]}-{stamp[1]}.txt"

    def describe(
        self,
        files: Iterable[Path],
        on_progress: Progress | None = None,
        *,
        workers: int = 10,
        processes: bool = False,
    ) -> tuple[list[SessionInfo], int]:
        """``SessionInfo`` for every file that is a session (cached ones without reading the file); also the
        number of files that had to be read. ``processes``: read many files in processes (``read_files``)."""
        if not self._loaded:
            self._load()
        hits: list[SessionInfo] = []
        misses: list[tuple[Path, _Stamp]] = []
        for path in files:
            stamp = _stamp(path)
            if stamp is None:
                continue
            key = str(path)
            record = self._records.get(key)
            if record is not None and tuple(record[:4]) == stamp:
                if record[4]:
                    text_file = functools.partial(self._text_file, key, stamp)
                    hits.append(_ListedSession(record[4], path, text_file))
                continue
            misses.append((path, stamp))
        total = len(misses)
        if on_progress is not None and total:
            on_progress(0, total)
        if not misses:
            return hits, 0
        size = sum(stamp[0] for _, stamp in misses)
        described = read_files([m[0] for m in misses], size, workers=workers, processes=processes)
        for done, ((path, stamp), info) in enumerate(zip(misses, described, strict=True), start=1):
            fields = self._remember(path, stamp, info)
            if fields is not None:  # its text was written beside the catalogue: read again when asked for
                text_file = functools.partial(self._text_file, str(path), stamp)
                hits.append(_ListedSession(fields, path, text_file))
            elif info is not None:
                hits.append(info)
            if on_progress is not None:
                on_progress(done, total)
        return hits, total

    def _remember(self, path: Path, stamp: _Stamp, info: SessionInfo | None) -> list[Any] | None:
        """Record what ``info`` says of ``path`` (``None``: not a session); returns the record's fields when
        they and the text were kept (a listing of many files then holds no session's whole text)."""
        if not self.enabled:
            return None
        key = str(path)
        old = self._records.get(key)
        if old is not None and old[4]:
            with contextlib.suppress(OSError):
                self._text_file(key, tuple(old[:4])).unlink()  # type: ignore[arg-type]
        fields: list[Any] | None = None
        if info is not None:
            fields = [
                _keep(info.id), _keep(info.cwd), _keep(info.name), _keep(info.parent_session_path),
                _micros(info.created), _micros(info.modified), info.message_count, _keep(info.first_message),
            ]  # fmt: skip
            try:
                text_file = self._text_file(key, stamp)
                _fileio.ensure_dir(text_file.parent)
                text_file.write_text(info.all_messages_text, "utf-8", "surrogatepass")
            except OSError:
                fields = None  # no room for the text: keep the file uncached rather than half cached
                if key in self._records:
                    del self._records[key]
                self._dirty = True
                return None
        self._records[key] = [*stamp, fields]
        self._dirty = True
        return fields

    def forget_missing(self, directories: Iterable[Path], present: Iterable[Path]) -> None:
        """Drop records of files in ``directories`` that are no longer there."""
        if not self.enabled:
            return
        if not self._loaded:
            self._load()
        dirs = {str(d) for d in directories}
        keep = {str(p) for p in present}
        for key in [k for k in self._records if os.path.dirname(k) in dirs and k not in keep]:
            record = self._records.pop(key)
            if record[4]:
                with contextlib.suppress(OSError):
                    self._text_file(key, tuple(record[:4])).unlink()  # type: ignore[arg-type]
            self._dirty = True

    def save(self) -> None:
        """Write the catalogue when it changed (atomically; an unwritable cache is silently skipped)."""
        if not self._dirty or not self.enabled:
            return
        records = {k: v for k, v in self._records.items() if _encodable(k)}
        blob = msgspec.msgpack.encode({"format": _FORMAT, "records": records})
        try:
            _fileio.atomic_replace(self.file, blob)
        except OSError:
            return
        self._dirty = False


def session_dirs(
    cwd: str | None = None, session_dir: str | Path | None = None, *, all_projects: bool = False
) -> list[Path]:
    """The directories a listing reads: ``session_dir`` alone when given, every project's directory with
    ``all_projects``, else the current project's (pi's layout under ``PI_CODING_AGENT_DIR``)."""
    if session_dir is not None:
        return [Path(session_dir).expanduser().resolve()]
    if all_projects:
        try:
            return sorted(p for p in get_sessions_root().iterdir() if p.is_dir())
        except OSError:
            return []
    return [get_default_session_dir(resolve_cwd(cwd if cwd is not None else os.getcwd()))]


def list_sessions(
    directories: list[Path],
    *,
    on_progress: Progress | None = None,
    catalogue: Catalogue | None = None,
    use_cache: bool = True,
    processes: bool = False,
) -> ListedSessions:
    """Every session in ``directories``, newest ``modified`` first, through the catalogue unless
    ``use_cache`` is false (then every file is read and the cache is neither read nor written);
    ``processes``: many files to read are read in processes (``read_files``)."""
    files = [f for d in directories for f in list_session_files(d)]
    if catalogue is None:
        catalogue = Catalogue() if use_cache else Catalogue(Path(os.devnull), enabled=False)
    infos, read = catalogue.describe(files, on_progress, processes=processes)
    if catalogue.enabled:
        catalogue.forget_missing(directories, files)
        catalogue.save()
    infos.sort(key=lambda i: i.modified, reverse=True)
    return ListedSessions(infos, directories, len(files), read)
