"""A SQL session loaded whole: every envelope in memory, lines fetched by sequence number on demand.

The same ``IndexedStore`` the file store uses, so a session with duplicate ids, dangling parents or cycles
(an imported damaged file) is read exactly as its file is, and the tree is built by ``tree.py``. Read-only:
the SQL session index does the writing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.storage.sql.database import Conn
from sessiontree.storage.sql.text import unkey
from sessiontree.tree.entry_store import IndexedStore

__all__ = ["LoadedSession", "strip_cr"]


def strip_cr(line: bytes) -> bytes:
    """A stored line as ``raw_at`` gives it: one trailing ``\\r`` (a CRLF file's) left out, as the file store does."""
    return line[:-1] if line.endswith(b"\r") else line


class LoadedSession(IndexedStore):
    """Position ``i`` is the row with ``seq = i + 1``; lines are read with one query per batch."""

    def __init__(self, conn: Conn, session_id: str, header: dict[str, Any] | None) -> None:
        super().__init__()
        self._conn = conn
        self._session_id = session_id
        self.header = header
        self.read_only = True
        rows = conn.query(
            "SELECT id, parent_id, type, timestamp FROM st_entries WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        self._install(
            [str(unkey(r[0])) for r in rows],
            [unkey(r[1]) for r in rows],
            [str(unkey(r[2])) for r in rows],
            [unkey(r[3]) for r in rows],
        )

    def _where(self) -> str:
        return f"{self._conn.display}#{self._session_id}"

    def raw_at(self, i: int) -> bytes:
        if i < 0:
            i += len(self._ids)
        row = self._conn.query_one(
            "SELECT line FROM st_entries WHERE session_id = ? AND seq = ?", (self._session_id, i + 1)
        )
        if row is None:
            raise SessionError(f"{self._where()}: entry {i + 1} is missing", kind="invalid_session")
        return strip_cr(bytes(row[0]))

    def entries(self) -> list[dict[str, Any]]:
        rows = self._conn.query(
            "SELECT line FROM st_entries WHERE session_id = ? ORDER BY seq", (self._session_id,)
        )
        return [self._cache.get(i) or self._decode_raw(i, strip_cr(bytes(r[0]))) for i, r in enumerate(rows)]

    def line_of(self, i: int) -> int | None:
        if i < 0:
            i += len(self._ids)
        return i + 2 if 0 <= i < len(self._ids) else None

    @property
    def file_exists(self) -> bool:
        return False

    @property
    def is_persisted(self) -> bool:
        return True

    def append(self, entry: Mapping[str, Any]) -> None:
        raise SessionError("a loaded SQL session is read through; append through its session index")

    def set_header(self, header: Mapping[str, Any]) -> None:
        raise SessionError("a loaded SQL session already has its header")

    def sync(self) -> None:
        """Nothing to make durable: this view never writes."""

    def close(self) -> None:
        """The connection belongs to the session index."""
