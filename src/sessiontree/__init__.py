"""sessiontree: an LLM agent's conversation as a durable, branchable tree in pi's JSONL session format.

The public API is re-exported here; everything else is an implementation detail.
"""

from __future__ import annotations

from sessiontree.format.entries import CURRENT_SESSION_VERSION
from sessiontree.session.manager import SessionManager
from sessiontree.session.store_access import open_repo
from sessiontree.storage.repository import Repo
from sessiontree.storage.session_dirs import SessionInfo
from sessiontree.tree.context import (
    SessionContext,
    build_context_entries,
    build_session_context,
    build_session_path,
    get_session_context_settings,
    session_entry_to_context_messages,
)

from .errors import (
    CorruptSessionError,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    StorageError,
)

__all__ = [
    "CURRENT_SESSION_VERSION",
    "CorruptSessionError",
    "Repo",
    "SessionContext",
    "SessionError",
    "SessionInfo",
    "SessionLockedError",
    "SessionManager",
    "SessionNotFoundError",
    "StorageError",
    "build_context_entries",
    "build_session_context",
    "build_session_path",
    "get_session_context_settings",
    "open_repo",
    "session_entry_to_context_messages",
]

__version__ = "0.1.0"
