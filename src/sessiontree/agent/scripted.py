"""``ScriptedModel``: an offline model that replays scripted replies through the same streaming events as the
real providers (pi's faux provider), and records every request it receives.

A ``ScriptedModel`` is a ``sessiontree.llm.Model`` whose ``api`` is ``"scripted"``; importing this module
registers the provider for that api, so ``stream``, ``complete``, the agent harness and compaction's
``LlmSummarizer`` all accept it. It opens no connection and reads no environment.
"""

from __future__ import annotations

import inspect
import math
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio

from sessiontree.format.messages import Message, StopReason
from sessiontree.format.pi_json import dumps

from ..llm.providers._common import payload_hook
from ..llm.stream import MessageBuilder, register_provider
from ..llm.tokens import estimate_tokens
from ..llm.types import Api, Context, Model, ModelCost, StreamEvent, StreamOptions, ThinkingLevel, Tool

__all__ = [
    "SCRIPTED_API",
    "Reply",
    "ScriptedError",
    "ScriptedModel",
    "ScriptedRequest",
    "error_reply",
    "overflow_reply",
    "reply",
    "text",
    "thinking",
    "tool_call",
]

SCRIPTED_API = cast(Api, "scripted")
OVERFLOW_MESSAGE = "prompt is too long: {tokens} tokens > {limit} maximum"
"""Anthropic's wording, which ``is_context_overflow`` recognises."""


class ScriptedError(Exception):
    """Raised inside the scripted stream for an error reply; the stream ends with ``stopReason: "error"``."""


@dataclass(frozen=True, slots=True)
class _Text:
    text: str


@dataclass(frozen=True, slots=True)
class _Thinking:
    thinking: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class _ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None


Block = _Text | _Thinking | _ToolCall


def text(value: str) -> _Text:
    """A text block of a scripted reply."""
    return _Text(value)


def thinking(value: str, signature: str | None = None) -> _Thinking:
    """A thinking block of a scripted reply."""
    return _Thinking(value, signature)


def tool_call(name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None) -> _ToolCall:
    """A tool call of a scripted reply (its id defaults to ``call_<n>`` for the n-th call streamed)."""
    return _ToolCall(name, dict(arguments or {}), id)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted reply.

    ``blocks`` stream in order; ``stop_reason`` defaults to ``toolUse`` when there are tool calls, else
    ``stop``; ``usage`` is ``(input, output, cache_read, cache_write)`` (default: pi's chars/4 estimate of the
    request and of the reply); ``error`` ends the stream as an error with that message after the blocks;
    ``delay`` seconds pass before every chunk; ``chunk`` splits text into deltas of that many characters (0:
    one delta per block); ``wait`` holds the reply until the event is set; ``hang_after`` streams that many
    chunks and then waits until the request is aborted (an abort point). Waits are interrupted by aborts.
    """

    blocks: tuple[Block, ...] = ()
    stop_reason: StopReason | None = None
    usage: tuple[int, int, int, int] | None = None
    error: str | None = None
    delay: float = 0.0
    chunk: int = 0
    wait: anyio.Event | None = None
    hang_after: int | None = None


def reply(*blocks: Block | str, **options: Any) -> Reply:
    """A scripted reply: strings are text blocks; keyword options as ``Reply``'s fields."""
    return Reply(tuple(_Text(b) if isinstance(b, str) else b for b in blocks), **options)


def error_reply(message: str, **options: Any) -> Reply:
    """A reply that fails with ``message`` (``stopReason: "error"``, ``errorMessage`` set)."""
    return Reply(error=message, **options)


def overflow_reply(tokens: int = 213_462, limit: int = 200_000, **options: Any) -> Reply:
    """A context-overflow error in a provider's own words."""
    return Reply(error=OVERFLOW_MESSAGE.format(tokens=tokens, limit=limit), **options)


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One request the scripted model received: the converted context, system prompt, tools, thinking level."""

    model_id: str
    messages: list[Message]
    system_prompt: str | None
    tools: list[Tool]
    reasoning: ThinkingLevel | None
    options: StreamOptions = field(compare=False)

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered with the request."""
        return [t.name for t in self.tools]

    def texts(self, role: str = "user") -> list[str]:
        """The text blocks (or string contents) of the messages with ``role``, in order."""
        out: list[str] = []
        for message in self.messages:
            if message.get("role") != role:
                continue
            content: Any = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")
        return out


ScriptStep = Reply | Callable[[ScriptedRequest], "Reply | Awaitable[Reply]"]
"""A reply, or a function of the request that returns one (sync or async), like pi's faux factories."""


class _Script:
    """The reply queue and the request log, shared by the variants of one scripted model."""

    __slots__ = ("calls", "payloads", "queue", "requests")

    def __init__(self, steps: Iterable[ScriptStep]) -> None:
        self.queue: deque[ScriptStep] = deque(steps)
        self.requests: list[ScriptedRequest] = []
        self.payloads: list[dict[str, Any]] = []
        self.calls = 0


@dataclass(frozen=True, slots=True, init=False, eq=False)
class ScriptedModel(Model):
    """A model that answers from a script (see ``Reply``); usable wherever a ``Model`` is.

    ``ScriptedModel([reply("hi"), reply(tool_call("read", {"path": "a"}))])``; ``add`` queues more replies,
    ``requests`` lists what was asked, ``variant(id=...)`` gives another model sharing the same script (for
    model switches inside one run). A request with no reply left ends with an error reply.
    """

    script: _Script = field(default_factory=lambda: _Script(()))

    def __init__(
        self,
        replies: Iterable[ScriptStep] = (),
        *,
        id: str = "scripted-model",
        provider: str = "scripted",
        name: str = "",
        reasoning: bool = False,
        context_window: int = 128_000,
        max_tokens: int = 16_384,
        input: tuple[str, ...] = ("text", "image"),
        cost: ModelCost | None = None,
        script: _Script | None = None,
    ) -> None:
        values: dict[str, Any] = {
            "id": id,
            "api": SCRIPTED_API,
            "provider": provider,
            "name": name or id,
            "base_url": None,
            "reasoning": reasoning,
            "input": input,
            "cost": cost or ModelCost(),
            "context_window": context_window,
            "max_tokens": max_tokens,
            "headers": {},
            "compat": {},
            "script": script if script is not None else _Script(replies),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)
        if script is not None:
            self.add(*replies)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"ScriptedModel(id={self.id!r}, pending={len(self.script.queue)})"

    def add(self, *replies: ScriptStep) -> ScriptedModel:
        """Queue more replies (returns the model, for chaining)."""
        self.script.queue.extend(replies)
        return self

    @property
    def requests(self) -> list[ScriptedRequest]:
        """Every request received so far by this model and its variants, in order."""
        return self.script.requests

    @property
    def payloads(self) -> list[dict[str, Any]]:
        """The request bodies as payload hooks left them (recorded only when a hook is installed)."""
        return self.script.payloads

    @property
    def pending(self) -> int:
        """Replies not used yet."""
        return len(self.script.queue)

    def variant(self, **changes: Any) -> ScriptedModel:
        """Another model (other id, window, ...) answering from the same script."""
        fields: dict[str, Any] = {
            "id": self.id,
            "provider": self.provider,
            "reasoning": self.reasoning,
            "context_window": self.context_window,
            "max_tokens": self.max_tokens,
            "input": self.input,
            "cost": self.cost,
        }
        fields.update(changes)
        return ScriptedModel(script=self.script, **fields)


def _chunks(value: str, size: int) -> list[str]:
    if size <= 0 or len(value) <= size:
        return [value]
    return [value[i : i + size] for i in range(0, len(value), size)]


def _estimate_request(context: Context) -> int:
    chars = len(context.system_prompt or "")
    tokens = sum(estimate_tokens(m) for m in context.messages)
    return tokens + math.ceil(chars / 4)


class _Player:
    """Streams one reply into the builder, counting chunks for ``hang_after``."""

    def __init__(self, builder: MessageBuilder, step: Reply) -> None:
        self.b = builder
        self.reply = step
        self.chunks = 0

    async def pause(self) -> None:
        if self.reply.delay > 0:
            await self.b.call(lambda: anyio.sleep(self.reply.delay))
        if self.reply.hang_after is not None and self.chunks >= self.reply.hang_after:
            await self.b.call(anyio.sleep_forever)
        self.chunks += 1

    async def blocks(self, first_call: int) -> AsyncGenerator[StreamEvent, None]:
        b = self.b
        calls = first_call
        for block in self.reply.blocks:
            await self.pause()
            if isinstance(block, _Text | _Thinking):
                is_text = isinstance(block, _Text)
                start, delta, end = (
                    (b.text_start, b.text_delta, b.text_end)
                    if is_text
                    else (b.thinking_start, b.thinking_delta, b.thinking_end)
                )
                index, event = start()
                yield event
                body = block.text if isinstance(block, _Text) else block.thinking
                for piece in _chunks(body, self.reply.chunk):
                    await self.pause()
                    yield delta(index, piece)
                if isinstance(block, _Thinking) and block.signature is not None:
                    b.block(index)["thinkingSignature"] = block.signature
                yield end(index)
            else:
                calls += 1
                index, event = b.toolcall_start(block.id or f"call_{calls}", block.name)
                yield event
                for piece in _chunks(dumps(block.arguments), self.reply.chunk):
                    await self.pause()
                    yield b.toolcall_delta(index, piece)
                yield b.toolcall_end(index, block.arguments)


async def _resolve(step: ScriptStep, request: ScriptedRequest, builder: MessageBuilder) -> Reply:
    if isinstance(step, Reply):
        return step
    produced = step(request)
    if inspect.isawaitable(produced):
        waiting = produced
        produced = await builder.call(lambda: waiting)
    if not isinstance(produced, Reply):
        raise TypeError(f"a script step must give a Reply, not {type(produced).__name__}")
    return produced


async def _scripted_stream(
    model: Model, context: Context, options: StreamOptions, builder: MessageBuilder
) -> AsyncGenerator[StreamEvent, None]:
    if not isinstance(model, ScriptedModel):
        raise TypeError("the scripted api needs a ScriptedModel")
    script = model.script
    request = ScriptedRequest(
        model.id,
        list(context.messages),
        context.system_prompt,
        list(context.tools),
        options.reasoning,
        options,
    )
    script.requests.append(request)
    if options.on_payload is not None:
        payload = {
            "model": model.id,
            "system": context.system_prompt,
            "messages": request.messages,
            "tools": [t.name for t in context.tools],
            "reasoning": options.reasoning,
        }
        script.payloads.append(await payload_hook(options, payload))
    if not script.queue:
        raise ScriptedError(f"ScriptedModel has no reply left for request {len(script.requests)}")
    step = await _resolve(script.queue.popleft(), request, builder)
    if step.wait is not None:
        await builder.call(step.wait.wait)
    player = _Player(builder, step)
    async for event in player.blocks(script.calls):
        yield event
    script.calls += sum(isinstance(b, _ToolCall) for b in step.blocks)
    if step.usage is not None:
        builder.set_usage(*step.usage)
    else:
        output = estimate_tokens(builder.message)  # type: ignore[arg-type]
        builder.set_usage(_estimate_request(context), output)
    if step.error is not None:
        raise ScriptedError(step.error)
    has_calls = any(isinstance(b, _ToolCall) for b in step.blocks)
    builder.set_stop_reason(step.stop_reason or ("toolUse" if has_calls else "stop"))


register_provider(SCRIPTED_API, _scripted_stream)
