"""Automatic retry of a reply that failed for a passing reason (pi's coding agent, SPEC B§7.9).

A reply that ended with ``stopReason: "error"`` is retried when its error reads as transient (overloaded,
rate limited, a 5xx, a dropped connection, a timeout) and is neither a context overflow (compaction handles
that) nor a spent quota or billing limit (waiting does not help). Attempt k waits ``base × 2^(k-1)`` ms,
abortably; the failed reply stays in the session, only the retried request leaves it out. The counter
resets at the first reply that is not an error. The SDKs' own HTTP retries (``StreamOptions.max_retries``)
are off by default, so these are all the attempts, each announced with pi's events ``auto_retry_start`` and
``auto_retry_end``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import anyio

from ..errors import SessionError
from ..llm.overflow import is_context_overflow
from ..llm.types import AbortSignal

__all__ = ["DEFAULT_RETRY_SETTINGS", "RetrySettings", "is_retryable_error", "wait_or_abort"]

_PROVIDER_LIMIT = re.compile(
    r"GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance|"
    r"insufficient_quota|out of budget|quota exceeded|billing",
    re.IGNORECASE,
)
_TRANSIENT = re.compile(
    r"overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|"
    r"service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|"
    r"connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|"
    r"fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|"
    r"stream ended before message_stop|http2 request did not get a response|timed? out|timeout|"
    r"terminated|retry delay",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """``retry.*`` in pi's settings: on by default, three retries, 2 s before the first."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay_ms < 0:
            raise SessionError(
                f"retry settings must not be negative (maxRetries {self.max_retries}, "
                f"baseDelayMs {self.base_delay_ms})",
                kind="invalid_argument",
            )

    def delay_ms(self, attempt: int) -> int:
        """How long attempt ``attempt`` (from 1) waits before its request."""
        return int(self.base_delay_ms * 2 ** (attempt - 1))

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape: ``{enabled, maxRetries, baseDelayMs}``."""
        return {"enabled": self.enabled, "maxRetries": self.max_retries, "baseDelayMs": self.base_delay_ms}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrySettings:
        """Read pi's camelCase settings object; missing keys take the defaults."""
        default = cls()
        enabled = data.get("enabled", default.enabled)
        numbers = {key: data.get(key, getattr(default, name)) for key, name in _NUMBER_KEYS}
        if not isinstance(enabled, bool):
            raise SessionError(
                f"retry.enabled must be true or false, not {enabled!r}", kind="invalid_argument"
            )
        for key, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise SessionError(
                    f"retry.{key} must be a whole number, not {value!r}", kind="invalid_argument"
                )
        return cls(enabled, numbers["maxRetries"], numbers["baseDelayMs"])


_NUMBER_KEYS = (("maxRetries", "max_retries"), ("baseDelayMs", "base_delay_ms"))
DEFAULT_RETRY_SETTINGS = RetrySettings()


def is_retryable_error(message: dict[str, Any], context_window: int = 0) -> bool:
    """Whether an assistant reply failed for a reason a later attempt may not meet (SPEC B§7.9)."""
    if message.get("role") != "assistant" or message.get("stopReason") != "error":
        return False
    error = message.get("errorMessage")
    if not isinstance(error, str) or not error:
        return False
    if is_context_overflow(message, context_window) or _PROVIDER_LIMIT.search(error):
        return False
    return _TRANSIENT.search(error) is not None


async def wait_or_abort(delay_ms: int, signal: AbortSignal | None) -> bool:
    """Sleep ``delay_ms``; False (at once) when ``signal`` aborts meanwhile."""
    if signal is None:
        await anyio.sleep(delay_ms / 1000)
        return True
    woken = anyio.Event()
    remove = signal.add_callback(woken.set)
    try:
        with anyio.move_on_after(delay_ms / 1000):
            await woken.wait()
    finally:
        remove()
    return not signal.aborted
