"""The in-memory store: the JSONL store's behaviour (envelope index, raw lines, problems) without any I/O.

Entries are kept as their serialized lines so ``raw_at`` and decoding behave exactly like the file store;
it must not touch the file system.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sessiontree.format import pi_json as _json
from sessiontree.tree.entry_store import IndexedStore, Problem, check_envelope

from ..errors import SessionError
from ._encode import encode_entry

__all__ = ["MemoryStore"]


class MemoryStore(IndexedStore):
    """Entries in memory. Line numbers are those the entries would have in a file (header = line 1)."""

    def __init__(
        self, header: Mapping[str, Any] | None = None, entries: Iterable[Mapping[str, Any] | bytes] = ()
    ) -> None:
        super().__init__()
        self._raw: list[bytes] = []
        self._closed = False
        if header is not None:
            self.header = self._check_new_header(header)
        for n, item in enumerate(entries, start=2):
            raw = self._line_bytes(item, n)
            if raw is None:
                continue
            value = _json.loads(raw)
            if value.get("type") == "session":
                self.problems.append(
                    Problem("extra_header", n, f"<memory>: line {n}: a second session header; it is ignored")
                )
                continue
            self._append_raw(raw, value)
        self._report_dangling()

    def _line_bytes(self, item: Mapping[str, Any] | bytes, n: int) -> bytes | None:
        if isinstance(item, (bytes, bytearray, memoryview)):
            raw = bytes(item).rstrip(b"\r\n")
            try:
                value = _json.loads(raw)
            except ValueError:
                value = None
            if (
                not isinstance(value, dict)
                or not isinstance(value.get("type"), str)
                or (value.get("type") != "session" and not isinstance(value.get("id"), str))
            ):
                self.problems.append(
                    Problem("bad_line", n, f"<memory>: line {n}: not a session entry; skipped")
                )
                return None
            return raw
        if item.get("type") != "session":
            check_envelope(item)
        return _json.dumps_bytes(item)

    def _append_raw(self, raw: bytes, entry: Mapping[str, Any]) -> None:
        parent = entry.get("parentId")
        stamp = entry.get("timestamp")
        self._raw.append(raw)
        if parent is not None and not isinstance(parent, str):
            parent = None
        self._add(entry["id"], parent, entry["type"], stamp if isinstance(stamp, str) else None)

    def raw_at(self, i: int) -> bytes:
        return self._raw[i]

    def line_of(self, i: int) -> int | None:
        if i < 0:
            i += len(self._raw)
        return i + 2 if 0 <= i < len(self._raw) else None

    @property
    def file_exists(self) -> bool:
        return False

    @property
    def is_persisted(self) -> bool:
        return False

    def set_header(self, header: Mapping[str, Any]) -> None:
        with self._lock:
            self.header = self._check_new_header(header)

    def append(self, entry: Mapping[str, Any]) -> None:
        check_envelope(entry)
        raw = encode_entry(entry)
        with self._lock:
            if self._closed:
                raise SessionError("<memory>: the store is closed", kind="invalid_state")
            self._append_raw(raw, entry)

    def sync(self) -> None:
        """Nothing to make durable."""

    def close(self) -> None:
        self._closed = True
