"""Persistence back ends for session entries: the store protocol, the JSONL file store, the memory store.

Also migration, the writer lock and check/repair. Nothing here knows about messages beyond the entry envelope.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
    from sessiontree.tree.entry_store import DURABILITY_MODES, Durability, EntryStore, IndexedStore, Problem

    from .jsonl import JsonlStore
    from .memory import MemoryStore
    from .migrate import MigrationResult, migrate_entries, needs_migration, session_version
    from .repair import RepairReport, repair_session_file


__all__ = [
    "DURABILITY_MODES",
    "Durability",
    "EntryStore",
    "IndexedStore",
    "JsonlStore",
    "MemoryStore",
    "MigrationResult",
    "Problem",
    "RepairReport",
    "migrate_entries",
    "needs_migration",
    "repair_session_file",
    "session_version",
]

export_lazily(
    __name__,
    {
        "DURABILITY_MODES": "sessiontree.tree.entry_store",
        "Durability": "sessiontree.tree.entry_store",
        "EntryStore": "sessiontree.tree.entry_store",
        "IndexedStore": "sessiontree.tree.entry_store",
        "Problem": "sessiontree.tree.entry_store",
        "JsonlStore": ".jsonl",
        "MemoryStore": ".memory",
        "MigrationResult": ".migrate",
        "migrate_entries": ".migrate",
        "needs_migration": ".migrate",
        "session_version": ".migrate",
        "RepairReport": ".repair",
        "repair_session_file": ".repair",
    },
)
