"""Anthropic Messages wire format (api ``anthropic-messages``): thinking budgets, signatures, prompt caching.

Only translates (request out, events in); errors, aborts and costs are handled by ``llm.stream``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, cast

import anthropic

from ..stream import MessageBuilder, register_provider
from ..transform import transform_messages
from ..types import Context, Model, StreamEvent, StreamOptions, ThinkingLevel, Tool
from ._common import (
    NoResponseError,
    clean_strings,
    client_kwargs,
    last_user_index,
    max_tokens,
    payload_hook,
    reasoning_level,
    safe_id,
    stream_response,
)

__all__ = ["DEFAULT_THINKING_BUDGETS", "build_request", "convert_messages", "stream_anthropic"]

DEFAULT_THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384,
                                            "xhigh": 32768}  # fmt: skip
"""Thinking tokens per level (pi's defaults); ``StreamOptions.thinking_budgets`` overrides them."""

_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
         "tool_use": "toolUse"}  # fmt: skip
REDACTED_THINKING_TEXT = "[Reasoning redacted]"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
EXTENDED_CACHE_TTL_BETA = "extended-cache-ttl-2025-04-11"


def _normalize_id(raw: str) -> str:
    return safe_id(raw.split("|", 1)[0], 64)


def _blocks(content: Any, *, images_ok: bool = True) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    out: list[dict[str, Any]] = []
    for block in content or []:
        if block.get("type") == "text" and (block.get("text") or "").strip():
            out.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image" and images_ok:
            source = {
                "type": "base64",
                "media_type": block.get("mimeType", "image/png"),
                "data": block.get("data", ""),
            }
            out.append({"type": "image", "source": source})
    return out


def _assistant_blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in msg.get("content") or []:
        kind = block.get("type")
        if kind == "text" and (block.get("text") or "").strip():
            out.append({"type": "text", "text": block["text"]})
        elif kind == "thinking":
            signature = block.get("thinkingSignature")
            if block.get("redacted"):
                if signature:
                    out.append({"type": "redacted_thinking", "data": signature})
            elif signature:
                out.append(
                    {"type": "thinking", "thinking": block.get("thinking", ""), "signature": signature}
                )
            elif (block.get("thinking") or "").strip():
                # Unsigned thinking (e.g. an interrupted stream) cannot be replayed as thinking.
                out.append({"type": "text", "text": block["thinking"]})
        elif kind == "toolCall":
            out.append({"type": "tool_use", "id": block["id"], "name": block["name"],
                        "input": block.get("arguments") or {}})  # fmt: skip
    return out


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """Model messages as Anthropic ``messages`` (tool results of one turn merged into one user message)."""
    out: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model, normalize_tool_call_id=_normalize_id):
        msg = cast(dict[str, Any], message)
        role = msg["role"]
        if role == "user":
            blocks = _blocks(msg.get("content"))
            if blocks:
                out.append({"role": "user", "content": blocks})
        elif role == "assistant":
            blocks = _assistant_blocks(msg)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            content = _blocks(msg.get("content")) or [{"type": "text", "text": "(no output)"}]
            result = {"type": "tool_result", "tool_use_id": msg["toolCallId"], "content": content,
                      "is_error": bool(msg.get("isError"))}  # fmt: skip
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and all(b.get("type") == "tool_result" for b in previous["content"])
            ):
                previous["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
    return out


def _cache_control(options: StreamOptions) -> dict[str, Any] | None:
    if options.cache_retention == "none":
        return None
    control: dict[str, Any] = {"type": "ephemeral"}
    if options.cache_retention == "long":
        control["ttl"] = "1h"
    return control


def _tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": dict(t.parameters)} for t in tools]


def _thinking(
    model: Model, options: StreamOptions, level: ThinkingLevel, limit: int
) -> tuple[dict[str, Any], int]:
    if model.compat.get("thinking") == "adaptive":
        return {"type": "adaptive"}, limit
    budgets = {**DEFAULT_THINKING_BUDGETS, **dict(options.thinking_budgets or {})}
    budget = budgets.get(level, DEFAULT_THINKING_BUDGETS["medium"])
    # Thinking counts toward max_tokens: make room for it, within the model's limit.
    total = min(limit + budget, model.max_tokens) if options.max_tokens is None else limit
    if total <= budget:
        budget = max(1024, total - 1024)
    return {"type": "enabled", "budget_tokens": budget}, total


def build_request(
    model: Model, context: Context, options: StreamOptions
) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON body sent to ``POST /v1/messages`` and the extra headers (``anthropic-beta``)."""
    messages = convert_messages(model, context)
    cache = _cache_control(options)
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens(model, options), "messages": messages}
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if cache is not None:
            system["cache_control"] = cache
        body["system"] = [system]
    if cache is not None:
        # Cache everything up to the newest user turn, so the next request reads it back.
        index = last_user_index(messages)
        if index >= 0 and messages[index]["content"]:
            messages[index]["content"][-1]["cache_control"] = dict(cache)
    if context.tools:
        body["tools"] = _tools(context.tools)
    betas: list[str] = []
    level = reasoning_level(model, options)
    if level is not None and level != "off":
        thinking, body["max_tokens"] = _thinking(model, options, level, body["max_tokens"])
        body["thinking"] = thinking
        if thinking["type"] == "adaptive":
            body["output_config"] = {"effort": _EFFORT[level]}
        elif context.tools:
            betas.append(INTERLEAVED_THINKING_BETA)
    elif level == "off":
        body["thinking"] = {"type": "disabled"}
    if options.temperature is not None and "thinking" not in body:
        body["temperature"] = options.temperature
    if options.cache_retention == "long":
        betas.append(EXTENDED_CACHE_TTL_BETA)
    body["stream"] = True
    if options.extra_body:
        body.update(options.extra_body)
    headers = {"anthropic-beta": ",".join(betas)} if betas else {}
    return cast(dict[str, Any], clean_strings(body)), headers


async def stream_anthropic(
    model: Model, context: Context, options: StreamOptions, b: MessageBuilder
) -> AsyncGenerator[StreamEvent, None]:
    """Send the request and translate the event stream."""
    body, headers = build_request(model, context, options)
    body = await payload_hook(options, body)
    client = anthropic.AsyncAnthropic(**client_kwargs(model, options))
    extra = {k: v for k, v in body.items() if k not in ("model", "max_tokens", "messages", "stream")}

    def create() -> Any:
        return client.messages.create(
            model=body["model"], max_tokens=body["max_tokens"], messages=body["messages"], stream=True,
            extra_body=extra, extra_headers=headers or None,
        )  # fmt: skip

    async with contextlib.aclosing(stream_response(b, client, create, _translate)) as events:
        async for event in events:
            yield event


class _Usage:
    __slots__ = ("cache_read", "cache_write", "input", "output")

    def __init__(self) -> None:
        self.input = self.output = self.cache_read = self.cache_write = 0

    def update(self, usage: Any) -> None:
        # message_delta repeats or refines the counts; only fields that are present replace earlier ones.
        for attr, name in (("input", "input_tokens"), ("output", "output_tokens"),
                           ("cache_read", "cache_read_input_tokens"),
                           ("cache_write", "cache_creation_input_tokens")):  # fmt: skip
            value = getattr(usage, name, None)
            if isinstance(value, int):
                setattr(self, attr, value)


async def _translate(b: MessageBuilder, response: Any) -> AsyncIterator[StreamEvent]:
    slots: dict[int, tuple[str, int]] = {}  # wire block index -> (kind, content index)
    usage = _Usage()
    stopped = False  # message_stop came
    async for event in b.iterate(response):
        kind = event.type
        if kind == "message_stop":
            stopped = True
        elif kind == "message_start":
            b.set_response_id(event.message.id)
            b.set_response_model(event.message.model)
            usage.update(event.message.usage)
            b.set_usage(usage.input, usage.output, usage.cache_read, usage.cache_write)
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "text":
                index, ev = b.text_start()
                slots[event.index] = ("text", index)
            elif block.type == "thinking":
                index, ev = b.thinking_start(thinkingSignature="")
                slots[event.index] = ("thinking", index)
            elif block.type == "redacted_thinking":
                index, ev = b.thinking_start(thinkingSignature=block.data, redacted=True)
                b.block(index)["thinking"] = REDACTED_THINKING_TEXT
                slots[event.index] = ("thinking", index)
            elif block.type == "tool_use":
                index, ev = b.toolcall_start(block.id, block.name)
                slots[event.index] = ("toolCall", index)
            else:
                continue
            yield ev
        elif kind == "content_block_delta":
            slot = slots.get(event.index)
            if slot is None:
                continue
            delta = event.delta
            if delta.type == "text_delta":
                yield b.text_delta(slot[1], delta.text)
            elif delta.type == "thinking_delta":
                yield b.thinking_delta(slot[1], delta.thinking)
            elif delta.type == "signature_delta":
                b.block(slot[1])["thinkingSignature"] = (
                    b.block(slot[1]).get("thinkingSignature", "") + delta.signature
                )
            elif delta.type == "input_json_delta":
                yield b.toolcall_delta(slot[1], delta.partial_json)
        elif kind == "content_block_stop":
            slot = slots.pop(event.index, None)
            if slot is None:
                continue
            if slot[0] == "text":
                yield b.text_end(slot[1])
            elif slot[0] == "thinking":
                yield b.thinking_end(slot[1])
            else:
                yield b.toolcall_end(slot[1])
        elif kind == "message_delta":
            if event.usage is not None:
                usage.update(event.usage)
                b.set_usage(usage.input, usage.output, usage.cache_read, usage.cache_write)
            stop = event.delta.stop_reason
            if stop in _STOP:
                b.set_stop_reason(cast(Any, _STOP[stop]))
            elif stop:
                # refusal, model_context_window_exceeded, ...: not a normal end of turn.
                raise RuntimeError(f"Provider stop_reason: {stop}")
    for index in b.open_tool_indexes():
        yield b.toolcall_end(index)
    if not stopped:
        raise NoResponseError("no message_stop event came")


register_provider("anthropic-messages", stream_anthropic)
