"""``InMemoryChatMessageHistory`` for langchain-core's history tests: a ``TreeChatMessageHistory`` on the
chosen back end (``sessiontree_swap``), built the way the pydantic model is."""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.messages import BaseMessage
from sessiontree_swap import BACKEND, opened, target

from sessiontree.integrations._open import _open_manager
from sessiontree.integrations.langchain import TreeChatMessageHistory


class TreeBackedHistory(TreeChatMessageHistory):
    """``InMemoryChatMessageHistory``'s constructor over a new ``TreeChatMessageHistory`` (its session opened
    on first use, as ``get_session_history`` does); equal to another when their messages are (as the pydantic
    model it stands for)."""

    def __init__(self, messages: Iterable[BaseMessage] | None = None) -> None:
        where = "memory:" if BACKEND == "memory" else target(None, None, None)
        super().__init__(lambda: _open_manager(where))
        opened.append(self)
        if messages:
            self.add_messages(list(messages))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeBackedHistory):
            return NotImplemented
        return self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TreeBackedHistory(messages={self.messages!r})"
