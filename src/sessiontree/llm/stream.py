"""The provider-neutral streaming machinery: ``stream`` / ``complete`` dispatch and the message builder.

Providers only translate wire events into builder calls; they never handle errors, aborts or costs (done here).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar, cast

import anyio

from sessiontree.format.messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

from ._partial_json import parse_partial_object
from .errors import describe_error
from .types import Context, Model, StreamEvent, StreamOptions

__all__ = [
    "ABORTED_MESSAGE",
    "AssistantMessageStream",
    "MessageBuilder",
    "ProviderStream",
    "StreamAborted",
    "calculate_cost",
    "complete",
    "register_provider",
    "stream",
]

ABORTED_MESSAGE = "Request was aborted"
_KEY_ORDER = (
    "role",
    "content",
    "api",
    "provider",
    "model",
    "responseModel",
    "responseId",
    "diagnostics",
    "usage",
    "stopReason",
    "errorMessage",
    "timestamp",
)

T = TypeVar("T")

ProviderStream = Callable[
    [Model, Context, StreamOptions, "MessageBuilder"], AsyncGenerator[StreamEvent, None]
]
"""A wire format: reads the provider's stream and yields the events the builder returns."""

_PROVIDERS: dict[str, ProviderStream] = {}


def register_provider(api: str, provider: ProviderStream) -> None:
    """Make ``stream`` send models whose ``api`` is ``api`` through ``provider``."""
    _PROVIDERS[api] = provider


_BUILTIN = {
    "anthropic-messages": "anthropic",
    "openai-completions": "openai_completions",
    "openai-responses": "openai_responses",
}
"""The built-in provider module of each api (importing one registers it and loads its SDK)."""


def _provider_for(api: str) -> ProviderStream:
    if api not in _PROVIDERS and api in _BUILTIN:
        # Only the SDK this api needs is loaded, and only when it is first used.
        import importlib

        importlib.import_module(f"{__package__}.providers.{_BUILTIN[api]}")
    if api not in _PROVIDERS:
        raise ValueError(f"No provider for api {api!r}")
    return _PROVIDERS[api]


class StreamAborted(Exception):
    """Raised inside a provider stream when the abort signal fires (never escapes ``stream``)."""


def calculate_cost(model: Model, usage: Usage) -> None:
    """Fill ``usage["cost"]`` in dollars: tokens × price per million (pi's arithmetic order)."""
    cost = {
        "input": (model.cost.input / 1_000_000) * usage["input"],
        "output": (model.cost.output / 1_000_000) * usage["output"],
        "cacheRead": (model.cost.cache_read / 1_000_000) * usage["cacheRead"],
        "cacheWrite": (model.cost.cache_write / 1_000_000) * usage["cacheWrite"],
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    usage["cost"] = cast(Any, cost)


class MessageBuilder:
    """Assembles one AssistantMessage from wire events and returns the matching ``StreamEvent``s.

    Also owns the abort plumbing: ``call`` and ``iterate`` wrap every network await in a cancel scope the
    abort signal can cancel, without ever holding a scope across a ``yield``.
    """

    def __init__(self, model: Model, options: StreamOptions, *, now: Callable[[], int] | None = None) -> None:
        self.model = model
        self.options = options
        usage: Usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
        calculate_cost(model, usage)
        self.message: AssistantMessage = {
            "role": "assistant",
            "content": [],
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "usage": usage,
            "stopReason": "stop",
            "timestamp": (now or (lambda: int(time.time() * 1000)))(),
        }
        self._tool_json: dict[int, str] = {}
        self._scope: anyio.CancelScope | None = None

    # -- abort-aware awaiting ------------------------------------------------------------------------------

    def _check(self) -> None:
        signal = self.options.signal
        if signal is not None and signal.aborted:
            raise StreamAborted(signal.reason or ABORTED_MESSAGE)

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Await ``fn()`` so that the abort signal can interrupt it."""
        self._check()
        result: T
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                result = await fn()
            finally:
                self._scope = None
        if scope.cancelled_caught:
            self._check()
            raise StreamAborted(ABORTED_MESSAGE)
        return result

    async def iterate(self, source: AsyncIterator[T] | Any) -> AsyncIterator[T]:
        """Iterate an async iterable chunk by chunk, each wait interruptible by the abort signal."""
        iterator = source.__aiter__()
        while True:
            try:
                item = await self.call(iterator.__anext__)
            except StopAsyncIteration:
                return
            yield item

    def cancel_pending(self) -> None:
        """Cancel the network wait in progress (the abort signal's callback)."""
        if self._scope is not None:
            self._scope.cancel()

    # -- content -------------------------------------------------------------------------------------------

    def _event(self, type_: Any, index: int | None = None, **fields: Any) -> StreamEvent:
        return StreamEvent(type=type_, partial=self.message, content_index=index, **fields)

    def start(self) -> StreamEvent:
        """The ``start`` event."""
        return self._event("start")

    def text_start(self, **extra: Any) -> tuple[int, StreamEvent]:
        """Open a text block; returns its index and the event."""
        block: TextContent = {"type": "text", "text": ""}
        block.update(extra)  # type: ignore[typeddict-item]
        self.message["content"].append(block)
        index = len(self.message["content"]) - 1
        return index, self._event("text_start", index)

    def text_delta(self, index: int, delta: str) -> StreamEvent:
        """Append text to block ``index``."""
        block = cast(TextContent, self.message["content"][index])
        block["text"] += delta
        return self._event("text_delta", index, delta=delta)

    def text_end(self, index: int) -> StreamEvent:
        """Close text block ``index``."""
        block = cast(TextContent, self.message["content"][index])
        return self._event("text_end", index, content=block["text"])

    def thinking_start(self, **extra: Any) -> tuple[int, StreamEvent]:
        """Open a thinking block; returns its index and the event."""
        block: ThinkingContent = {"type": "thinking", "thinking": ""}
        block.update(extra)  # type: ignore[typeddict-item]
        self.message["content"].append(block)
        index = len(self.message["content"]) - 1
        return index, self._event("thinking_start", index)

    def thinking_delta(self, index: int, delta: str) -> StreamEvent:
        """Append reasoning text to block ``index``."""
        block = cast(ThinkingContent, self.message["content"][index])
        block["thinking"] += delta
        return self._event("thinking_delta", index, delta=delta)

    def thinking_end(self, index: int) -> StreamEvent:
        """Close thinking block ``index``."""
        block = cast(ThinkingContent, self.message["content"][index])
        return self._event("thinking_end", index, content=block["thinking"])

    def block(self, index: int) -> dict[str, Any]:
        """The content block at ``index`` (to set signatures and the like)."""
        return cast(dict[str, Any], self.message["content"][index])

    def toolcall_start(self, call_id: str, name: str) -> tuple[int, StreamEvent]:
        """Open a tool call; its arguments arrive as JSON deltas."""
        call: ToolCall = {"type": "toolCall", "id": call_id, "name": name, "arguments": {}}
        self.message["content"].append(call)
        index = len(self.message["content"]) - 1
        self._tool_json[index] = ""
        return index, self._event("toolcall_start", index)

    def toolcall_delta(self, index: int, delta: str) -> StreamEvent:
        """Append argument JSON to tool call ``index`` (arguments are re-parsed leniently as they grow)."""
        self._tool_json[index] = self._tool_json.get(index, "") + delta
        call = cast(ToolCall, self.message["content"][index])
        call["arguments"] = parse_partial_object(self._tool_json[index])
        return self._event("toolcall_delta", index, delta=delta)

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> StreamEvent:
        """Close tool call ``index``; ``arguments`` overrides the streamed JSON when the wire gives it whole."""
        call = cast(ToolCall, self.message["content"][index])
        if arguments is not None:
            call["arguments"] = arguments
        else:
            call["arguments"] = parse_partial_object(self._tool_json.get(index, ""))
        self._tool_json.pop(index, None)
        return self._event("toolcall_end", index, tool_call=call)

    def open_tool_indexes(self) -> list[int]:
        """Tool calls not yet closed."""
        return sorted(self._tool_json)

    # -- outcome -------------------------------------------------------------------------------------------

    def set_usage(self, input_: int, output: int, cache_read: int = 0, cache_write: int = 0) -> None:
        """Record token counts (input excludes cached tokens, pi's convention) and price them."""
        usage: Usage = {
            "input": input_,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": input_ + output + cache_read + cache_write,
        }
        calculate_cost(self.model, usage)
        self.message["usage"] = usage

    def set_stop_reason(self, reason: StopReason) -> None:
        """Record why the model stopped."""
        self.message["stopReason"] = reason

    def set_response_id(self, response_id: str | None) -> None:
        """Record the provider's response id."""
        if response_id:
            self.message["responseId"] = response_id

    def set_response_model(self, response_model: str | None) -> None:
        """Record the concrete model the provider reports, when it differs from the requested one."""
        if response_model and response_model != self.model.id:
            self.message["responseModel"] = response_model

    def _finish(self) -> None:
        # Fixed key order (messages.assistant_message's) whatever order the wire filled the fields in.
        msg = cast(dict[str, Any], self.message)
        items = dict(msg)
        msg.clear()
        for key in _KEY_ORDER:
            if key in items:
                msg[key] = items.pop(key)
        msg.update(items)

    def done(self) -> StreamEvent:
        """The final ``done`` event."""
        self._finish()
        reason = self.message["stopReason"]
        return self._event("done", reason=reason, message=self.message)

    def fail(self, reason: StopReason, error_message: str) -> StreamEvent:
        """End the message as ``error``/``aborted`` with ``errorMessage``; closes nothing else."""
        for index in self.open_tool_indexes():
            call = cast(ToolCall, self.message["content"][index])
            call["arguments"] = parse_partial_object(self._tool_json.pop(index))
        self.message["stopReason"] = reason
        self.message["errorMessage"] = error_message
        self._finish()
        return self._event("error", reason=reason, message=self.message)


async def _run(model: Model, context: Context, options: StreamOptions) -> AsyncGenerator[StreamEvent, None]:
    builder = MessageBuilder(model, options)
    signal = options.signal
    remove = signal.add_callback(builder.cancel_pending) if signal is not None else None
    yield builder.start()
    try:
        provider = _provider_for(model.api)
        # Closed explicitly, so an early stop by the consumer releases the HTTP response at once.
        async with contextlib.aclosing(provider(model, context, options, builder)) as events:
            async for event in events:
                yield event
        if signal is not None and signal.aborted:
            raise StreamAborted(signal.reason or ABORTED_MESSAGE)
    except StreamAborted as exc:
        yield builder.fail("aborted", str(exc) or ABORTED_MESSAGE)
        return
    except anyio.get_cancelled_exc_class():
        # Cancelled from outside (anyio scope): record the partial reply as aborted, then let it propagate.
        builder.fail("aborted", ABORTED_MESSAGE)
        raise
    except Exception as exc:
        if signal is not None and signal.aborted:
            yield builder.fail("aborted", signal.reason or ABORTED_MESSAGE)
        else:
            yield builder.fail("error", describe_error(exc))
        return
    finally:
        if remove is not None:
            remove()
    yield builder.done()


class AssistantMessageStream:
    """Async iterator of ``StreamEvent``s; ``await result()`` gives the final AssistantMessage.

    ``message`` is the message as far as it got, also after an outside cancellation (then ``aborted``).
    """

    def __init__(self, model: Model, context: Context, options: StreamOptions) -> None:
        self._events = _run(model, context, options)
        self._message: AssistantMessage | None = None
        self._final: AssistantMessage | None = None

    def __aiter__(self) -> AssistantMessageStream:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        self._message = event.partial
        if event.type in ("done", "error"):
            self._final = event.message
        return event

    @property
    def message(self) -> AssistantMessage | None:
        """The message so far (final once the stream has ended)."""
        return self._final or self._message

    async def result(self) -> AssistantMessage:
        """Consume the remaining events and return the final message."""
        async for _ in self:
            pass
        if self._final is None:
            raise RuntimeError("stream ended without a final message")
        return self._final

    async def aclose(self) -> None:
        """Stop reading (closes the HTTP response)."""
        await self._events.aclose()


def stream(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageStream:
    """Send ``context`` to ``model`` and stream the reply; failures end the stream, they never raise."""
    return AssistantMessageStream(model, context, options or StreamOptions())


async def complete(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessage:
    """``stream`` and wait for the final AssistantMessage (stopReason ``error``/``aborted`` on failure)."""
    return await stream(model, context, options).result()
