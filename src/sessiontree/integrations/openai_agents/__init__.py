"""The OpenAI Agents SDK adapter: ``TreeSession``, a ``Session`` whose history is a sessiontree tree.

Needs ``sessiontree[openai-agents]``. The item mapping is in ``mapping`` (items to pi messages) and
``restore`` (back), both pure; the session is in ``session``.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
    from .session import DEFAULT_CONTEXT_WINDOW, TreeSession


__all__ = ["DEFAULT_CONTEXT_WINDOW", "TreeSession"]

export_lazily(
    __name__,
    {
        "DEFAULT_CONTEXT_WINDOW": ".session",
        "TreeSession": ".session",
    },
)
