"""How big the context is now, for what the commands and the chat show: the last reply's reported usage plus
estimates of the messages after it, unless that reply came before the latest compaction (its usage counts
what the summary replaced) or reported nothing (all zeros); then every message of the context is estimated.

The same figure after every change of the leaf (a compaction, a move in the tree, a fork) as before the
next request, without asking a provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..llm.tokens import estimate_context_tokens, estimate_tokens

__all__ = ["context_tokens"]


def _latest_compaction(messages: Sequence[Any]) -> tuple[int, Any] | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "compactionSummary":
            return index, message.get("timestamp")
    return None


def context_tokens(messages: Sequence[Any]) -> int:
    """Tokens of ``messages`` (a built context) as the next request would carry them, estimated."""
    estimate = estimate_context_tokens(messages)
    index = estimate.last_usage_index
    if index is not None and estimate.usage_tokens == 0:  # a server that reports no usage sends zeros
        return sum(estimate_tokens(m) for m in messages)
    compaction = _latest_compaction(messages)
    if index is None or compaction is None:
        return estimate.tokens
    position, when = compaction
    answered = messages[index].get("timestamp")
    fresh = (
        index > position
        and isinstance(when, (int, float))
        and isinstance(answered, (int, float))
        and answered > when
    )
    if fresh:
        return estimate.tokens
    return sum(estimate_tokens(m) for m in messages)
