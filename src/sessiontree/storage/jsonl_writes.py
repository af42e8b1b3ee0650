"""The write side of the JSONL file store: the writer lock, one ``write`` per entry, torn tails cut aside.

A base class of ``JsonlStore`` (``jsonl.py`` holds opening, scanning and reading): the first write takes the
advisory lock and brings the file into an appendable state (re-reading it if another process changed it,
moving a torn last line aside); each entry is then one ``write`` to an ``O_APPEND`` descriptor, durable as
the store's durability mode says.
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sessiontree.format import pi_json as _json
from sessiontree.tree.entry_store import Durability, IndexedStore, Problem, check_envelope

from ..errors import SessionError, SessionLockedError, StorageError
from . import _fileio, lock
from ._encode import encode_entry
from ._lines import LineTable

__all__ = ["JsonlWrites"]


def _exists_error(path: Path, *, racing: bool = False) -> SessionError:
    """The error for creating a session where something exists: a lock error when a writer holds it."""
    if os.path.islink(path):
        return StorageError(
            f"{path}: a symbolic link is in the way; sessiontree never creates a file through one",
            path=str(path),
        )
    if racing or lock.is_locked(path):
        return SessionLockedError(
            f"{path} was created by another writer first (it holds the session now)", path=str(path)
        )
    return StorageError(f"{path}: already exists", path=str(path))


class JsonlWrites(IndexedStore):
    """Appending to a pi session file under the writer lock (the base of ``JsonlStore``)."""

    path: Path
    read_only: bool
    durability: Durability
    _path: Path
    _table: LineTable
    _next_line: int
    _fd: int | None
    _exists: bool
    _header_written: bool
    _identity: tuple[int, int, int] | None
    _size: int
    _torn: tuple[int, int] | None
    _needs_newline: bool
    _clear_on_first_write: bool
    _dirty: bool
    _closed: bool

    @abstractmethod
    def _read_range(self, start: int, end: int) -> bytes:
        """The file's bytes from ``start`` to ``end``."""

    @abstractmethod
    def _reload_under_lock(self, fd: int) -> None:
        """Index again what another process wrote since this store read the file."""

    # -- writes --------------------------------------------------------------------------------------
    def set_header(self, header: Mapping[str, Any]) -> None:
        with self._lock:
            self.header = self._check_new_header(header)

    def prepare_write(self) -> None:
        with self._lock:
            self._begin_write()

    def _begin_write(self) -> None:
        """Take the lock at the first write and bring the file into a clean, appendable state."""
        if self._closed:
            raise SessionError(f"{self.path}: the store is closed", kind="invalid_state", path=str(self.path))
        if self.read_only:
            raise SessionError(
                f"{self.path}: cannot write, the session was opened read-only",
                kind="read_only",
                path=str(self.path),
            )
        if self._fd is not None or not self._exists:
            return
        _fileio.require_safe_dir(self._path.parent)
        try:
            fd = _fileio.open_regular(self._path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError as exc:
            raise StorageError(f"{self.path}: the file was removed while open", path=str(self.path)) from exc
        try:
            lock.acquire(fd, self._path)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino, st.st_size) != self._identity:
                self._reload_under_lock(fd)
            if self._clear_on_first_write:
                os.ftruncate(fd, 0)
                self._size = 0
                self._clear_on_first_write = False
            if self._torn is not None:
                self._cut_torn_tail(fd, *self._torn)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _cut_torn_tail(self, fd: int, offset: int, line: int) -> None:
        path = self._path
        aside = _fileio.first_free(path, ".torn-")
        _fileio.write_new_file(aside, self._read_range(offset, self._size))
        os.ftruncate(fd, offset)
        os.fsync(fd)
        _fileio.fsync_dir(path.parent)
        self._size = offset
        self._torn = None
        self._needs_newline = False
        self.problems.append(
            Problem(
                "torn_tail_moved",
                line,
                f"{path}: line {line}: the torn last line was moved to {aside} and cut off",
            )
        )

    def append(self, entry: Mapping[str, Any]) -> None:
        check_envelope(entry)
        line = encode_entry(entry)
        with self._lock:
            self._begin_write()
            if not self._header_written:
                if self.header is None:
                    raise SessionError(f"{self.path}: no session header to write", kind="invalid_state")
                head = _json.dumps_bytes(self.header) + b"\n"
                start = self._write(head, line, creating=not self._exists)
                self._header_written = True
                self._next_line = 2
            else:
                start = self._write(b"\n" if self._needs_newline else b"", line, creating=False)
                self._needs_newline = False
            self._table.add(start, start + len(line), self._next_line)
            self._next_line += 1
            parent = entry.get("parentId")
            stamp = entry.get("timestamp")
            self._add(entry["id"], parent, entry["type"], stamp if isinstance(stamp, str) else None)

    def _write(self, prefix: bytes, line: bytes, *, creating: bool) -> int:
        """Write ``prefix + line + \\n`` in one write; returns the offset where ``line`` starts."""
        path = self._path
        data = prefix + line + b"\n"
        if creating:
            # The file appears with its first entry and already locked (written beside it, linked into
            # place), so any process that finds it also finds its writer: the loser of a race to create it
            # gets SessionLockedError, never a half-made file.
            try:
                self._fd = _fileio.atomic_replace(path, data, exclusive=True, keep_open=True)
            except _fileio.AlreadyExistsError as exc:
                raise _exists_error(path, racing=True) from exc
            self._exists = True
        fd = self._fd
        assert fd is not None
        try:
            if not creating:
                _fileio.write_all(fd, data)
        except OSError as exc:
            try:  # leave no torn tail behind
                os.ftruncate(fd, self._size)
            except OSError:
                self._needs_newline = True  # whatever got written, the next entry starts on a new line
                self._size = os.fstat(fd).st_size
            raise StorageError(f"{path}: write failed: {exc.strerror or exc}", path=str(path)) from exc
        start = self._size + len(prefix)
        self._size += len(data)
        if creating or self._identity is None:
            st = os.fstat(fd)
            self._identity = (st.st_dev, st.st_ino, st.st_size)
        else:
            self._identity = (self._identity[0], self._identity[1], self._size)
        if creating:
            pass  # the new file and its directory were fsynced before it became visible
        elif self.durability == "fsync":
            os.fsync(fd)
        elif self.durability == "batch":
            self._dirty = True
        return start

    def sync(self) -> None:
        with self._lock:
            if self._fd is not None and self._dirty:
                os.fsync(self._fd)
                _fileio.fsync_dir(self._path.parent)
                self._dirty = False
