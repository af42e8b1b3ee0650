"""The LangChain adapter: ``TreeChatMessageHistory``, a chat message history that is a sessiontree tree.

Needs ``sessiontree[langchain]``. The message mapping is in ``mapping`` (pure), the history in ``history``.
"""

from __future__ import annotations

from .history import TreeChatMessageHistory

__all__ = ["TreeChatMessageHistory"]
