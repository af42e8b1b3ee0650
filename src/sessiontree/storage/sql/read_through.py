"""The write side of the stores that read a SQL session's rows for the tree index (``LoadedSession``,
``ColumnTree``): they have no file, never write, and leave the connection to the session index."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.tree.entry_store import IndexedStore

__all__ = ["ReadThroughStore"]


class ReadThroughStore(IndexedStore):
    """An ``IndexedStore`` over rows the SQL session index owns; ``WHAT`` names it in refusals."""

    WHAT = "a SQL session's view"

    @property
    def file_exists(self) -> bool:
        return False

    @property
    def is_persisted(self) -> bool:
        return True

    def append(self, entry: Mapping[str, Any]) -> None:
        raise SessionError(f"{self.WHAT} is read through; append through its session index")

    def set_header(self, header: Mapping[str, Any]) -> None:
        raise SessionError(f"{self.WHAT} already has its header")

    def sync(self) -> None:
        """Nothing to make durable: this view never writes."""

    def close(self) -> None:
        """The connection belongs to the session index."""
