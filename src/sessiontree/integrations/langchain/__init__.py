"""The LangChain adapter: ``TreeChatMessageHistory``, a chat message history that is a sessiontree tree.

Needs ``sessiontree[langchain]``. The message mapping is in ``mapping`` (pure), the history in ``history``,
``get_session_history`` (one history per session id of a store, for ``RunnableWithMessageHistory``) in
``histories``.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
    from .histories import SessionHistories, get_session_history
    from .history import TreeChatMessageHistory


__all__ = ["SessionHistories", "TreeChatMessageHistory", "get_session_history"]

export_lazily(
    __name__,
    {
        "SessionHistories": ".histories",
        "TreeChatMessageHistory": ".history",
        "get_session_history": ".histories",
    },
)
