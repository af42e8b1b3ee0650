"""sessiontree: an LLM agent's conversation as a durable, branchable tree in pi's JSONL session format.

The public API is re-exported here; everything else is an implementation detail.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

from .errors import (
    CorruptSessionError,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    StorageError,
)

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
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

export_lazily(
    __name__,
    {
        "CURRENT_SESSION_VERSION": "sessiontree.format.entries",
        "SessionManager": "sessiontree.session.manager",
        "open_repo": "sessiontree.session.store_access",
        "Repo": "sessiontree.storage.repository",
        "SessionInfo": "sessiontree.storage.session_dirs",
        "SessionContext": "sessiontree.tree.context",
        "build_context_entries": "sessiontree.tree.context",
        "build_session_context": "sessiontree.tree.context",
        "build_session_path": "sessiontree.tree.context",
        "get_session_context_settings": "sessiontree.tree.context",
        "session_entry_to_context_messages": "sessiontree.tree.context",
    },
)
