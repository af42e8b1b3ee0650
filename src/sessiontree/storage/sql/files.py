"""The files of a SQLite store: the database is created private (0600, in directories created 0700, as session
files are; SQLite gives its ``-wal`` and ``-shm`` files the database's mode), and only by a write: a read of
a store that does not exist says so and leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from sessiontree.errors import SessionNotFoundError
from sessiontree.storage.session_dirs import ensure_private_dir

__all__ = ["PAGE_SIZE", "missing_store", "open_sqlite"]

PAGE_SIZE = 16384
"""The page size of a database this creates (SQLite's default is 4096): a page holds some twenty entry rows
rather than five, so less of it is left unused at the end of each page (an existing database keeps its own)."""


def missing_store(display: str, path: str) -> SessionNotFoundError:
    """The error of a read of a SQLite store whose file does not exist."""
    return SessionNotFoundError(
        f"{display}: no such store: {path} does not exist (nothing was created; a write, or "
        "`sessiontree db migrate`, creates it)"
    )


def _create_private(file: Path) -> None:
    """Create ``file`` empty with mode 0600, unless it exists. Never opens an existing file: closing any
    descriptor of a database file drops every POSIX lock this process holds on it (SQLite's connections')."""
    with contextlib.suppress(FileExistsError):  # another process created it first
        os.close(os.open(file, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600))


def open_sqlite(path: str, display: str, *, create: bool, timeout: float) -> sqlite3.Connection:
    """A connection to the database at ``path``; with ``create``, the file (0600) and its missing parent
    directories (0700) are made first, else ``SessionNotFoundError`` when it is not there."""
    file = Path(path)
    if create:
        ensure_private_dir(file.parent)
        if not file.exists():
            _create_private(file)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout)
        # only takes effect while the database is empty (before its first table, and the WAL switch)
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        return db
    if not file.exists():
        raise missing_store(display, path)
    # mode=rw: never create the file, even if it is removed between the check and the open
    return sqlite3.connect(
        f"file:{quote(path)}?mode=rw",
        uri=True,
        isolation_level=None,
        check_same_thread=False,
        timeout=timeout,
    )
