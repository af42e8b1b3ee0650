"""The LangChain adapter: ``TreeChatMessageHistory``, a chat message history that is a sessiontree tree.

Needs ``sessiontree[langchain]``. The message mapping is in ``mapping`` (pure), the history in ``history``.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
    from .history import TreeChatMessageHistory


__all__ = ["TreeChatMessageHistory"]

export_lazily(
    __name__,
    {
        "TreeChatMessageHistory": ".history",
    },
)
