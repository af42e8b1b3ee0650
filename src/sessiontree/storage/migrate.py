"""Migration of decoded v1/v2 session entries to format v3, exactly as pi's ``migrateToCurrentVersion`` does.

Pure functions on decoded JSON objects (inputs are not mutated); no I/O: the stores decide about backups
and atomic rewrites.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree.format.entries import CURRENT_SESSION_VERSION
from sessiontree.format.ids import new_entry_id

from ._fileformat import needs_migration, session_version

__all__ = ["MigrationResult", "migrate_entries", "needs_migration", "session_version"]


@dataclass(slots=True)
class MigrationResult:
    """The migrated objects (header first), the version migrated from, and whether anything ran."""

    entries: list[dict[str, Any]]
    from_version: float
    changed: bool


def migrate_entries(
    file_entries: Sequence[Mapping[str, Any]],
    *,
    id_factory: Callable[[Container[str]], str] = new_entry_id,
) -> MigrationResult:
    """Migrate pi file entries (header first, as parsed, malformed lines already dropped) to v3.

    v1->v2: every non-``session`` object gets a fresh id (``id_factory`` receives the ids assigned so far) and
    ``parentId`` = the previous entry's id (a linear chain in file order); an existing ``id``/``parentId``
    key is overwritten in place, a missing one is appended at the end. A compaction's numeric
    ``firstKeptEntryIndex`` (an index into ``file_entries``, header = 0) becomes ``firstKeptEntryId`` when it
    points at a non-header object that has an id at that moment; the index is deleted. Every ``session``
    object gets ``version`` 2. v2->v3: ``session`` objects get ``version`` 3; message entries with role
    ``hookMessage`` get role ``custom``. Objects that need no change are returned as shallow copies.
    """
    work = [dict(e) for e in file_entries]
    header = next((e for e in work if e.get("type") == "session"), None)
    version = 1.0 if header is None else session_version(header)
    if version >= CURRENT_SESSION_VERSION:
        return MigrationResult(work, version, False)
    if version < 2:
        _v1_to_v2(work, id_factory)
    if version < 3:
        _v2_to_v3(work)
    return MigrationResult(work, version, True)


def _index_target(value: Any, count: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    index = int(value)
    return index if 0 <= index < count else None


def _v1_to_v2(work: list[dict[str, Any]], id_factory: Callable[[Container[str]], str]) -> None:
    assigned: set[str] = set()
    previous: str | None = None
    for entry in work:
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        new_id = id_factory(assigned)
        assigned.add(new_id)
        entry["id"] = new_id
        entry["parentId"] = previous
        previous = new_id
        if entry.get("type") != "compaction":
            continue
        raw_index = entry.get("firstKeptEntryIndex")
        if isinstance(raw_index, bool) or not isinstance(raw_index, (int, float)):
            continue
        index = _index_target(raw_index, len(work))
        target = work[index] if index is not None else None
        if target is not None and target.get("type") != "session":
            if "id" in target:
                entry["firstKeptEntryId"] = target["id"]
            else:  # JavaScript assigns undefined: the key is not written
                entry.pop("firstKeptEntryId", None)
        del entry["firstKeptEntryIndex"]


def _v2_to_v3(work: list[dict[str, Any]]) -> None:
    for entry in work:
        if entry.get("type") == "session":
            entry["version"] = 3
            continue
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "hookMessage":
            message = dict(message)
            message["role"] = "custom"
            entry["message"] = message
