"""Context-overflow detection on a finished AssistantMessage (pi's ``isContextOverflow``, SPEC B§7.8).

Reads ``stopReason``, ``errorMessage`` and ``usage`` only; it never inspects requests or retries anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["NON_OVERFLOW_PATTERNS", "OVERFLOW_PATTERNS", "is_context_overflow"]

_I = re.IGNORECASE

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"prompt is too long", _I),
    re.compile(r"request_too_large", _I),
    re.compile(r"input is too long for requested model", _I),
    re.compile(r"exceeds the context window", _I),
    re.compile(r"exceeds (?:the )?(?:model'?s )?maximum context length of [\d,]+ tokens?", _I),
    re.compile(r"input token count.*exceeds the maximum", _I),
    re.compile(r"maximum prompt length is \d+", _I),
    re.compile(r"reduce the length of the messages", _I),
    re.compile(r"maximum context length is \d+ tokens", _I),
    re.compile(r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?", _I),
    re.compile(r"input \(\d+ tokens\) is longer than the model's context length \(\d+ tokens\)", _I),
    re.compile(r"exceeds the limit of \d+", _I),
    re.compile(r"exceeds the available context size", _I),
    re.compile(r"greater than the context length", _I),
    re.compile(r"context window exceeds limit", _I),
    re.compile(r"exceeded model token limit", _I),
    re.compile(r"too large for model with \d+ maximum context length", _I),
    re.compile(r"model_context_window_exceeded", _I),
    re.compile(r"prompt too long; exceeded (?:max )?context length", _I),
    re.compile(r"context[_ ]length[_ ]exceeded", _I),
    re.compile(r"too many tokens", _I),
    re.compile(r"token limit exceeded", _I),
    re.compile(r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)", _I),
)
"""Provider wordings of "the prompt does not fit" (Anthropic, OpenAI, Google, Bedrock, xAI, Groq,
OpenRouter, llama.cpp, LM Studio, vLLM, Mistral, Cerebras, z.ai, Kimi, ...)."""

NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^(?:Throttling error|Service unavailable):", _I),
    re.compile(r"rate limit", _I),
    re.compile(r"too many requests", _I),
)
"""Throttling messages that mention token limits but are not overflows (retry them instead)."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _is_overflow_text(error: str) -> bool:
    if any(p.search(error) for p in NON_OVERFLOW_PATTERNS):
        return False
    return any(p.search(error) for p in OVERFLOW_PATTERNS)


def is_context_overflow(message: Mapping[str, Any], context_window: int = 0) -> bool:
    """True when ``message`` shows the context did not fit: an overflow error, or (with a known window) a
    reply whose input already exceeds it (silent overflow) or a ``length`` stop with nothing produced."""
    stop_reason = message.get("stopReason")
    error = message.get("errorMessage")
    if stop_reason == "error" and isinstance(error, str) and error and _is_overflow_text(error):
        return True
    if context_window > 0:
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            prompt = _int(usage.get("input")) + _int(usage.get("cacheRead"))
            if stop_reason == "stop" and prompt > context_window:
                return True
            if stop_reason == "length" and _int(usage.get("output")) == 0 and prompt >= 0.99 * context_window:
                return True
    return False
