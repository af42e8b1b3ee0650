"""Token accounting as pi does it: chars/4 estimates in UTF-16 units, provider usage when a reply has one.

Pure arithmetic over message dicts; it never calls a tokenizer or a provider, and never mutates messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree.format.messages import AgentMessage, Usage
from sessiontree.format.pi_json import dumps, utf16_len

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_CHARS",
    "ContextUsageEstimate",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_tokens",
    "get_last_assistant_usage",
    "get_last_assistant_usage_info",
]

CHARS_PER_TOKEN = 4
IMAGE_CHARS = 4800
"""An image counts as 4800 characters (1200 tokens), pi's constant."""


@dataclass(slots=True, frozen=True)
class ContextUsageEstimate:
    """pi's ``estimateContextTokens`` result; ``to_dict()`` gives its camelCase JSON shape."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None

    @property
    def usageTokens(self) -> int:
        return self.usage_tokens

    @property
    def trailingTokens(self) -> int:
        return self.trailing_tokens

    @property
    def lastUsageIndex(self) -> int | None:
        return self.last_usage_index

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape: ``{tokens, usageTokens, trailingTokens, lastUsageIndex}``."""
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


def _len(value: Any) -> int:
    return utf16_len(value) if isinstance(value, str) else 0


def _tool_call_chars(block: Mapping[str, Any]) -> int:
    arguments = block.get("arguments")
    # JSON.stringify(undefined) has no length in pi (it would throw); an absent value counts as {}.
    return _len(block.get("name")) + utf16_len(dumps(arguments if arguments is not None else {}))


_BLOCK_CHARS: dict[str, Callable[[Mapping[str, Any]], int]] = {
    "text": lambda block: _len(block.get("text")),
    "thinking": lambda block: _len(block.get("thinking")),
    "toolCall": _tool_call_chars,
    "image": lambda block: IMAGE_CHARS,
}
_CONTENT_KINDS = ("text", "image")
_ASSISTANT_KINDS = ("text", "thinking", "toolCall")


def _blocks_chars(content: Any, kinds: tuple[str, ...]) -> int:
    """Characters of the blocks of the given kinds in a content list; other blocks and non-lists count 0."""
    if not isinstance(content, list):
        return 0
    chars = 0
    for block in content:
        if isinstance(block, Mapping) and (kind := block.get("type")) in kinds:
            chars += _BLOCK_CHARS[kind](block)
    return chars


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """pi's ``estimateTokens``: ``ceil(chars / 4)`` with per-role character counts (SPEC B§7.2)."""
    role = message.get("role")
    if role in ("user", "custom", "toolResult"):
        content = message.get("content")
        chars = utf16_len(content) if isinstance(content, str) else _blocks_chars(content, _CONTENT_KINDS)
    elif role == "assistant":
        chars = _blocks_chars(message.get("content"), _ASSISTANT_KINDS)
    elif role == "bashExecution":
        chars = _len(message.get("command")) + _len(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        chars = _len(message.get("summary"))
    else:
        return 0
    return math.ceil(chars / CHARS_PER_TOKEN)


def _num(value: Any) -> int:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0  # type: ignore[return-value]


def calculate_context_tokens(usage: Mapping[str, Any]) -> int:
    """``usage.totalTokens`` when non-zero, else ``input + output + cacheRead + cacheWrite``."""
    total = usage.get("totalTokens")
    if total:
        return _num(total)
    return (
        _num(usage.get("input"))
        + _num(usage.get("output"))
        + _num(usage.get("cacheRead"))
        + _num(usage.get("cacheWrite"))
    )


def _usable_usage(message: Any) -> Usage | None:
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    # JavaScript truthiness: any object (even an empty one) counts as a usage.
    return usage if isinstance(usage, Mapping) or usage else None  # type: ignore[return-value]


def get_last_assistant_usage(entries: Sequence[Mapping[str, Any]]) -> Usage | None:
    """Usage of the last ``message`` entry holding a usable assistant reply (not aborted/error), or None."""
    for entry in reversed(entries):
        if entry.get("type") == "message":
            usage = _usable_usage(entry.get("message"))
            if usage is not None:
                return usage
    return None


def get_last_assistant_usage_info(messages: Sequence[AgentMessage]) -> tuple[Usage, int] | None:
    """The last usable assistant usage among runtime messages and its index, or None."""
    for index in range(len(messages) - 1, -1, -1):
        usage = _usable_usage(messages[index])
        if usage is not None:
            return usage, index
    return None


def estimate_context_tokens(messages: Sequence[AgentMessage]) -> ContextUsageEstimate:
    """pi's ``estimateContextTokens``: last usable usage plus estimates of the messages after it."""
    info = get_last_assistant_usage_info(messages)
    if info is None:
        estimated = sum(estimate_tokens(m) for m in messages)
        return ContextUsageEstimate(estimated, 0, estimated, None)
    usage, index = info
    usage_tokens = calculate_context_tokens(usage)
    trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
    return ContextUsageEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
