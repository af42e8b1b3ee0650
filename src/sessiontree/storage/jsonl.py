"""The JSONL file store: pi's session file scanned once into an envelope index, entries read on demand.

Lines are validated at open but not kept in memory: entries are read back with ``pread`` by offset and
decoded when asked for. Appends use one ``write`` per entry under an advisory lock; the store never rewrites
lines except by an atomic migration, and never touches a file it cannot read as a session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from sessiontree.format import pi_json as _json
from sessiontree.format.ids import new_entry_id
from sessiontree.tree.entry_store import DURABILITY_MODES, Durability, Problem, check_envelope

from ..errors import SessionNotFoundError, StorageError
from . import _fileio, body_cache, index_cache, lock
from ._encode import encode_entry
from ._fileformat import decode_for_migration, find_header, needs_migration, parse_header, session_version
from ._lines import LineTable
from ._scan import Chunk, ScanResult, fd_chunks, memory_chunks, reader_chunks, scan
from .jsonl_reads import JsonlReads
from .jsonl_writes import JsonlWrites, _exists_error

__all__ = ["JsonlStore", "resolve_path"]

_HEAD_BYTES = 1 << 16
Reader = Callable[[int, int], bytes]


def resolve_path(path: Path) -> Path:
    """``path`` made absolute with every symbolic link resolved (a dangling link gives its target's path)."""
    return Path(os.path.realpath(path.expanduser()))


def _read_head(read: Reader, size: int) -> bytes:
    """Enough bytes from the start of the file to hold the whole first non-blank line."""
    n = min(size, _HEAD_BYTES)
    while True:
        head = read(0, n)
        found = find_header(head)
        if n >= size or (found is not None and found[1] < len(head)):
            return head
        n = min(size, n * 4)


class JsonlStore(JsonlReads, JsonlWrites):
    """A pi session file. Build with ``open``, ``create`` or ``write_new``; positions index valid entries."""

    def __init__(
        self,
        path: Path,
        *,
        read_only: bool = False,
        durability: Durability = "flush",
        id_factory: Callable[[Container[str]], str] = new_entry_id,
    ) -> None:
        super().__init__()
        if durability not in DURABILITY_MODES:
            raise ValueError(f"durability must be one of {DURABILITY_MODES}, not {durability!r}")
        self.path = self._path = Path(path)
        self.read_only = read_only
        self.durability: Durability = durability
        self._id_factory = id_factory
        self._buf: bytes | None = None  # only for content that exists in memory alone (read-only migration)
        self._table = LineTable()  # where each entry's line is
        self._cache_stat: tuple[os.stat_result, int] | None = None  # for the index cache, while loading
        self._bodies: body_cache.Bodies | None = None
        self._bodies_pending: tuple[os.stat_result, int] | None = None
        self._context_runs: list[tuple[int, int]] | None = None
        self._context_hit: list[tuple[int, int]] | None = None
        self._next_line = 1
        self._fd: int | None = None  # writer descriptor (O_APPEND), holds the lock
        self._rfd: int | None = None  # reader descriptor for pread
        self._exists = False
        self._header_written = False
        self._identity: tuple[int, int, int] | None = None  # (st_dev, st_ino, size) as indexed
        self._size = 0
        self._torn: tuple[int, int] | None = None
        self._needs_newline = False
        self._clear_on_first_write = False
        self._dirty = False
        self._closed = False

    # -- constructors --------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        read_only: bool = False,
        durability: Durability = "flush",
        id_factory: Callable[[Container[str]], str] = new_entry_id,
        missing_ok: bool = False,
    ) -> JsonlStore:
        """Open an existing session file (v1/v2 files are migrated; a 0-byte file is a new session).

        Raises ``SessionNotFoundError`` for a missing file (unless ``missing_ok``: then the store is a new
        session at that path), ``CorruptSessionError`` for a damaged header (the file is not modified).
        ``id_factory`` gives the ids of a v1 migration.
        """
        given = Path(path)
        # Symbolic links are resolved once, here: every later read, append, rewrite and file set aside
        # (backups, torn tails) uses the target's path, and a ``symlink`` note says so.
        store = cls(resolve_path(given), read_only=read_only, durability=durability, id_factory=id_factory)
        try:
            fd = _fileio.open_regular(store._path)
        except FileNotFoundError as exc:
            if os.path.islink(given):
                raise StorageError(
                    f"{given} is a symbolic link to {os.readlink(given)}, which does not exist; sessiontree "
                    "never creates a file through a symbolic link",
                    path=str(given),
                ) from exc
            if missing_ok:
                return store
            raise SessionNotFoundError(f"Session file not found: {path}", path=str(path)) from exc
        store._rfd = fd
        st = os.fstat(fd)
        store._exists = True
        if os.path.islink(given):
            store.problems.append(
                Problem(
                    "symlink",
                    None,
                    f"{given} is a symbolic link; sessiontree reads and writes its target {store._path}",
                )
            )
        store._load(store._pread, st.st_size, (st.st_dev, st.st_ino, st.st_size), allow_migration=True)
        return store

    @classmethod
    def create(
        cls, path: str | Path, header: Mapping[str, Any], *, durability: Durability = "flush"
    ) -> JsonlStore:
        """A new session at ``path``; nothing is written until the first ``append`` (header + entry)."""
        store = cls(Path(path), durability=durability)
        if os.path.lexists(store._path):
            raise _exists_error(store._path)
        store.set_header(header)
        return store

    @classmethod
    def write_new(
        cls,
        path: str | Path,
        header: Mapping[str, Any],
        lines: Iterable[Mapping[str, Any] | bytes],
        *,
        durability: Durability = "flush",
    ) -> JsonlStore:
        """Create ``path`` now (it must not exist) with the header and ``lines``; bytes lines are copied verbatim.

        The file appears atomically (temp file, fsync, link) and the returned store holds its writer lock.
        """
        store = cls(Path(path), durability=durability)
        head = store._check_new_header(header)
        parts = [_json.dumps_bytes(head)]
        for line in lines:
            if isinstance(line, (bytes, bytearray, memoryview)):
                parts.append(bytes(line).rstrip(b"\r\n"))
            else:
                check_envelope(line)
                parts.append(encode_entry(line))
        parts.append(b"")
        blob = b"\n".join(parts)
        fd = _fileio.atomic_replace(store._path, blob, exclusive=True, keep_open=True)
        assert fd is not None
        st = os.fstat(fd)
        store._fd = fd
        store._exists = True
        store._load_memory(blob, (st.st_dev, st.st_ino, st.st_size), keep=False)
        return store

    # -- loading -------------------------------------------------------------------------------------
    def _load_memory(self, blob: bytes, identity: tuple[int, int, int], *, keep: bool) -> None:
        """Index ``blob`` (the file's content, or content that exists only in memory when ``keep``)."""
        self._load(
            lambda offset, n: blob[offset : offset + n],
            len(blob),
            identity,
            allow_migration=False,
            memory=blob,
        )
        self._buf = blob if keep else None

    def _load(
        self,
        read: Reader,
        size: int,
        identity: tuple[int, int, int],
        *,
        allow_migration: bool,
        memory: bytes | None = None,
    ) -> None:
        where = str(self.path)
        head = _read_head(read, size)
        parsed = parse_header(head, where)
        self._reset_index()
        self._bodies, self._bodies_pending = None, None
        self._context_runs = self._context_hit = None
        self._size, self._identity = size, identity
        self._torn = None
        self._clear_on_first_write = False
        self._table = LineTable()
        if parsed is None or isinstance(parsed, int):  # no header yet: a new session at this path
            self.header = None
            self._header_written = False
            self._next_line, self._needs_newline = 1, False
            if isinstance(parsed, int):  # the first write was torn inside the header line
                self._torn = (0, parsed)
                self.problems.append(
                    Problem(
                        "torn_tail",
                        parsed,
                        f"{where}: line {parsed}: the file holds only the start of a session header (the "
                        "first write was torn); it is a new session: the bytes are moved to a '.torn-<n>' "
                        "file at the first write",
                    )
                )
            else:
                self._clear_on_first_write = size > 0  # whitespace only: nothing to keep
            return
        header, header_end, header_line = parsed
        if needs_migration(header):
            if not allow_migration:
                raise StorageError(f"{where}: became an old-format session while open", path=where)
            self._migrate(read(0, size))
            return
        self.header = header
        self._header_written = True
        start = min(header_end + 1, size)
        if memory is not None:
            result = scan(memory_chunks(memory, start, size), header_line + 1, where)
        else:
            result = self._scan_file(read, start, size, header_line + 1)
        self._table = result.table
        self.problems.extend(result.all_problems(where))
        self._install(result.ids, result.parents, result.types, result.timestamps, result.known_breaks)
        if self._cache_stat is not None:
            st, scanned = self._cache_stat
            self._cache_stat = None
            if scanned >= index_cache.MIN_BYTES:
                index_cache.save(self._path, self._reader(), st, start, header_line + 1, result, self._breaks)
            self._load_bodies(st)
        if result.torn_offset is not None:
            self._torn = (result.torn_offset, result.torn_line or 0)
            self._next_line = result.torn_line or 0
        else:
            self._next_line = max(result.end_line, header_line) + 1
        self._needs_newline = result.needs_newline or header_end == size
        if header_end == size:
            self.problems.append(
                Problem(
                    "missing_newline",
                    header_line,
                    f"{where}: line {header_line}: the "
                    "header has no final newline; one is written before the next entry",
                )
            )

    def _migrate(self, data: bytes) -> None:
        """Migrate a v1/v2 file: in memory when read-only, else backup + atomic rewrite under the lock."""
        where = str(self.path)
        path = self._path
        old_fd: int | None = None
        if not self.read_only:
            old_fd = _fileio.open_regular(path)
            try:
                lock.acquire(old_fd, path)
                data = _fileio.read_all(path)  # the content as it is now that we hold the lock
                parsed = parse_header(data, where)
                if not isinstance(parsed, tuple) or not needs_migration(
                    parsed[0]
                ):  # emptied or migrated meanwhile
                    st = os.fstat(old_fd)
                    self._drop_reader()
                    self._load_memory(data, (st.st_dev, st.st_ino, st.st_size), keep=False)
                    os.close(old_fd)
                    return
            except BaseException:
                os.close(old_fd)
                raise
        from .migrate import migrate_entries  # an old file only: most processes never load it

        try:
            objects, dropped = decode_for_migration(data, where)
            result = migrate_entries(objects, id_factory=self._id_factory)
            blob = b"".join(_json.dumps_bytes(e) + b"\n" for e in result.entries)
            version = session_version(objects[0])
            tag = str(int(version)) if version == version and version.is_integer() else "x"
            if self.read_only:
                note = "in memory only (opened read-only; the file is unchanged)"
                identity = self._identity or (0, 0, 0)
            else:
                backup = path.with_name(f"{path.name}.v{tag}.bak")
                if os.path.lexists(backup) and _fileio.read_all(backup) != data:
                    backup = _fileio.first_free(backup, "-")
                if not os.path.lexists(backup):
                    _fileio.write_new_file(backup, data)
                fd = _fileio.atomic_replace(path, blob, keep_open=True)
                assert fd is not None
                self._fd = fd
                self._drop_reader()
                st = os.fstat(fd)
                identity = (st.st_dev, st.st_ino, st.st_size)
                note = f"the original is kept as {backup}"
        finally:
            if old_fd is not None:
                os.close(old_fd)
        self._load_memory(blob, identity, keep=self.read_only)
        self.problems[:0] = [
            *dropped,
            Problem("migrated", None, f"{where}: migrated from version {tag} to 3; {note}"),
        ]

    def _reload_under_lock(self, fd: int) -> None:
        """The file changed between reading and locking: index it again (``generation`` moves on)."""
        st = os.fstat(fd)
        self._drop_reader()
        old_problems = self.problems
        pending = None if self._header_written else self.header
        self.problems = []
        self._identity = (st.st_dev, st.st_ino, st.st_size)
        self._load(self._pread, st.st_size, self._identity, allow_migration=False)
        if self.header is None:  # still no header on disk: keep the one this store was given
            self.header = pending
        note = Problem(
            "changed_on_disk",
            None,
            f"{self.path}: the file changed on disk after it was opened; it was indexed again",
        )
        self.problems = [*old_problems, note, *self.problems]
        self.generation += 1

    def _scan_file(self, read: Reader, start: int, size: int, first_line: int) -> ScanResult:
        """Scan the file's entries from ``start`` to ``size``: only what follows a valid cached scan."""
        self._cache_stat = None
        if read == self._pread and size >= index_cache.MIN_BYTES and index_cache.enabled():
            st = os.fstat(self._reader())
            if st.st_size == size:
                cached = index_cache.lookup(self._path, self._reader(), st, start, first_line)
                scanned = size - (start if cached is None else cached.size)
                self._cache_stat = (st, scanned)
                if cached is not None:
                    chunks = self._chunks(read, cached.size, size)
                    return scan(chunks, cached.result.end_line + 1, str(self.path), resume=cached.result)
        return scan(self._chunks(read, start, size), first_line, str(self.path))

    def _chunks(self, read: Reader, start: int, end: int) -> Iterator[Chunk]:
        """The file's bytes from ``start`` to ``end`` in chunks (``preadv`` into one buffer where it can)."""
        if read == self._pread and hasattr(os, "preadv"):
            return fd_chunks(self._reader(), start, end)
        return reader_chunks(read, start, end)

    @property
    def file_exists(self) -> bool:
        return self._exists

    @property
    def is_persisted(self) -> bool:
        return self._exists and self._header_written

    @property
    def torn_tail(self) -> tuple[int, int] | None:
        """``(byte offset, line number)`` of a torn last line not yet cut off, else ``None``."""
        return self._torn

    @property
    def is_locked(self) -> bool:
        """Whether this store holds the writer lock."""
        return self._fd is not None

    def close(self) -> None:
        with self._lock:
            try:
                if not self._closed:
                    fresh: dict[int, Any] = {}  # entries decoded again from the file's bytes, shared by both
                    self._save_context(fresh)
                    self._save_bodies(fresh)
            finally:  # whatever keeping the caches met, the lock and the descriptors are released
                self._closed = True
                self._release()

    def _release(self) -> None:
        if self._fd is not None:
            try:
                if self._dirty:
                    os.fsync(self._fd)
                    self._dirty = False
            finally:
                lock.release(self._fd)
                os.close(self._fd)
                self._fd = None
        self._drop_reader()

    def __del__(self) -> None:
        for name in ("_fd", "_rfd"):
            fd = getattr(self, name, None)
            if fd is not None:
                os.close(fd)
