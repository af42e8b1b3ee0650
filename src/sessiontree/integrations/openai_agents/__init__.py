"""The OpenAI Agents SDK adapter: ``TreeSession``, a ``Session`` whose history is a sessiontree tree.

Needs ``sessiontree[openai-agents]``. The item mapping is in ``mapping`` (items to pi messages) and
``restore`` (back), both pure; the session is in ``session``.
"""

from __future__ import annotations

from .session import DEFAULT_CONTEXT_WINDOW, TreeSession

__all__ = ["DEFAULT_CONTEXT_WINDOW", "TreeSession"]
