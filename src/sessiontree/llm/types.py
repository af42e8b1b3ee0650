"""The model layer's vocabulary: models, request contexts, tools, stream options, stream events, abort signal.

Plain data only; no provider code, no I/O, no registry lookups (models.py owns the table of known models).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sessiontree.format.messages import AssistantMessage, Message, StopReason, ToolCall

__all__ = [
    "API_ANTHROPIC_MESSAGES",
    "API_OPENAI_COMPLETIONS",
    "API_OPENAI_RESPONSES",
    "AbortSignal",
    "Api",
    "Context",
    "EventType",
    "Model",
    "ModelCost",
    "StreamEvent",
    "StreamOptions",
    "ThinkingLevel",
    "Tool",
]

Api = Literal["openai-completions", "openai-responses", "anthropic-messages"]
API_OPENAI_COMPLETIONS: Api = "openai-completions"
API_OPENAI_RESPONSES: Api = "openai-responses"
API_ANTHROPIC_MESSAGES: Api = "anthropic-messages"

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
"""pi's thinking levels (``off`` = no reasoning requested)."""


@dataclass(slots=True, frozen=True)
class ModelCost:
    """Prices in dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(slots=True, frozen=True)
class Model:
    """A model the wire layer can call: which API speaks to it, where, and what it can take."""

    id: str
    api: Api
    provider: str
    name: str = ""
    base_url: str | None = None
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    cost: ModelCost = field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: Mapping[str, str] = field(default_factory=dict)
    compat: Mapping[str, Any] = field(default_factory=dict)
    """Wire quirks for OpenAI-compatible servers, e.g. ``{"maxTokensField": "max_tokens"}``."""

    @property
    def supports_images(self) -> bool:
        """Whether image blocks may be sent (otherwise they become a text placeholder)."""
        return "image" in self.input


@dataclass(slots=True, frozen=True)
class Tool:
    """A tool the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(slots=True)
class Context:
    """Everything a request carries besides options: system prompt, model messages, tools."""

    messages: Sequence[Message]
    system_prompt: str | None = None
    tools: Sequence[Tool] = ()


class AbortSignal:
    """A one-shot cancellation flag for a stream (pi's ``AbortSignal``); call ``abort()`` on the loop thread.

    A stream given this signal stops reading at the next chunk (or at once, if it is waiting) and ends with
    ``stopReason: "aborted"`` and the partial content.
    """

    __slots__ = ("_callbacks", "_reason")

    def __init__(self) -> None:
        self._reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        """True once ``abort()`` has been called."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The text given to ``abort()``, if aborted."""
        return self._reason

    def abort(self, reason: str = "Request was aborted") -> None:
        """Abort; every registered callback runs once."""
        if self._reason is not None:
            return
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on abort (immediately if already aborted); returns a function that removes it."""
        if self._reason is not None:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove


@dataclass(slots=True)
class StreamOptions:
    """Per-request options; ``None`` means the provider's or the model's default."""

    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: ThinkingLevel | None = None
    thinking_budgets: Mapping[str, int] | None = None
    """Anthropic thinking budget per level, overriding the defaults (``{"low": 2048, ...}``)."""
    signal: AbortSignal | None = None
    headers: Mapping[str, str] | None = None
    session_id: str | None = None
    """Sent where the API takes a cache/session key (OpenAI ``prompt_cache_key``)."""
    cache_retention: Literal["none", "short", "long"] = "short"
    """Anthropic prompt caching: ``none`` sends no cache markers, ``long`` asks for a 1 hour TTL."""
    base_url: str | None = None
    timeout: float | None = None
    max_retries: int = 0
    """The provider SDK's own HTTP retries, off by default: a call is one request, and retrying is the
    agent's (``agent.retry``), which says so (``auto_retry_start``); SDK retries under it would multiply
    the attempts out of sight."""
    on_payload: Callable[[dict[str, Any]], Any] | None = None
    """Called with the request body just before it is sent (logging, tests, payload hooks); a dict it returns
    (or an awaitable of one) is sent instead."""
    extra_body: Mapping[str, Any] | None = None


EventType = Literal[
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
]


@dataclass(slots=True, frozen=True)
class StreamEvent:
    """One event of a response stream (pi's ``AssistantMessageEvent``).

    ``partial`` is the message as assembled so far (the same dict throughout the stream); ``content_index``
    names the block a block event is about; ``delta`` carries the new text or argument JSON; ``content`` the
    finished text of a ``*_end``; ``tool_call`` the finished call of ``toolcall_end``; ``reason`` and
    ``message`` the outcome of ``done`` / ``error``.
    """

    type: EventType
    partial: AssistantMessage
    content_index: int | None = None
    delta: str | None = None
    content: str | None = None
    tool_call: ToolCall | None = None
    reason: StopReason | None = None
    message: AssistantMessage | None = None
