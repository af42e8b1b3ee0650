"""Persistence back ends for session entries: the store protocol, the JSONL file store, the memory store.

Also migration, the writer lock and check/repair. Nothing here knows about messages beyond the entry envelope.
"""

from __future__ import annotations

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
