"""OpenAI Chat Completions wire format (api ``openai-completions``), for OpenAI and any compatible server.

Only translates (request out, chunks in); errors, aborts and costs are handled by ``llm.stream``.
"""

# Compatible servers (vLLM, llama.cpp, Ollama, LM Studio) are reached through ``base_url``; their quirks are
# switched by ``model.compat``: maxTokensField, supportsDeveloperRole, supportsReasoningEffort, supportsStore,
# thinkingAsText.

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, cast

import openai

from sessiontree.format.pi_json import dumps

from ..stream import MessageBuilder, register_provider
from ..transform import is_same_model, transform_messages
from ..types import Context, Model, StreamEvent, StreamOptions, Tool
from ._common import (
    NoResponseError,
    clean_strings,
    client_kwargs,
    data_url,
    images_of,
    max_tokens,
    new_call_id,
    payload_hook,
    reasoning_level,
    safe_id,
    stream_response,
    text_of,
)

__all__ = ["build_request", "convert_messages", "stream_openai_completions"]

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
"""Where compatible servers put reasoning deltas; the field seen is stored as the thinking signature."""

TOOL_IMAGES_TEXT = "Attached image(s) from tool result:"

_FINISH = {"stop": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse"}


def _compat(model: Model, key: str, default: Any) -> Any:
    return model.compat.get(key, default)


def _normalize_id(raw: str) -> str:
    # Responses-API ids are "call_id|item_id"; Chat Completions wants the call id, at most 40 characters.
    return safe_id(raw.split("|", 1)[0], 40)


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """Model messages (plus system prompt) as Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        developer = model.reasoning and _compat(model, "supportsDeveloperRole", model.provider == "openai")
        out.append({"role": "developer" if developer else "system", "content": context.system_prompt})
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            parts = [{"type": "image_url", "image_url": {"url": data_url(b)}} for b in pending_images]
            out.append({"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_TEXT}, *parts]})
            pending_images.clear()

    for message in transform_messages(context.messages, model, normalize_tool_call_id=_normalize_id):
        msg = cast(dict[str, Any], message)
        role = msg["role"]
        if role != "toolResult":
            flush_images()
        if role == "user":
            converted = _user(msg.get("content"))
            if converted is not None:
                out.append(converted)
        elif role == "assistant":
            converted = _assistant(model, msg)
            if converted is not None:
                out.append(converted)
        elif role == "toolResult":
            content = msg.get("content")
            text = text_of(content)
            images = images_of(content) if model.supports_images else []
            if not text:
                text = "(see attached image)" if images else "(no output)"
            out.append({"role": "tool", "tool_call_id": msg["toolCallId"], "content": text})
            pending_images.extend(images)
    flush_images()
    return out


def _user(content: Any) -> dict[str, Any] | None:
    if isinstance(content, str):
        return {"role": "user", "content": content} if content else None
    parts: list[dict[str, Any]] = []
    for block in content or []:
        if block.get("type") == "text" and block.get("text"):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append({"type": "image_url", "image_url": {"url": data_url(block)}})
    return {"role": "user", "content": parts} if parts else None


def _assistant(model: Model, msg: dict[str, Any]) -> dict[str, Any] | None:
    blocks = msg.get("content") or []
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    thinking = [b for b in blocks if b.get("type") == "thinking" and (b.get("thinking") or "").strip()]
    result: dict[str, Any] = {"role": "assistant", "content": text or None}
    if thinking and is_same_model(msg, model):
        field = thinking[0].get("thinkingSignature")
        if _compat(model, "thinkingAsText", False):
            joined = "\n\n".join(b["thinking"] for b in thinking)
            result["content"] = joined + ("\n\n" + text if text else "")
        elif field in REASONING_FIELDS:
            # Send the reasoning back in the field it arrived in (llama.cpp / gpt-oss need it for continuity).
            result[field] = "\n".join(b["thinking"] for b in thinking)
    if calls:
        result["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": dumps(c.get("arguments") or {})},
            }
            for c in calls
        ]
    if result["content"] is None and not calls:
        return None
    return result


def _tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": False,
            },
        }
        for t in tools
    ]


def build_request(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body sent to ``POST /chat/completions``."""
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    default_field = "max_completion_tokens" if model.provider == "openai" else "max_tokens"
    body[_compat(model, "maxTokensField", default_field)] = max_tokens(model, options)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = _tools(context.tools)
    level = reasoning_level(model, options)
    if level is not None and level != "off" and _compat(model, "supportsReasoningEffort", True):
        body["reasoning_effort"] = level
    if _compat(model, "supportsStore", model.provider == "openai"):
        body["store"] = False
    if options.session_id and model.provider == "openai":
        body["prompt_cache_key"] = options.session_id
    if options.extra_body:
        body.update(options.extra_body)
    return cast(dict[str, Any], clean_strings(body))


async def stream_openai_completions(
    model: Model, context: Context, options: StreamOptions, b: MessageBuilder
) -> AsyncGenerator[StreamEvent, None]:
    """Send the request and translate the chunk stream."""
    body = build_request(model, context, options)
    body = await payload_hook(options, body)
    client = openai.AsyncOpenAI(**client_kwargs(model, options))
    extra = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}

    def create() -> Any:
        return client.chat.completions.create(
            model=body["model"], messages=body["messages"], stream=True, extra_body=extra
        )

    async with contextlib.aclosing(stream_response(b, client, create, _translate)) as events:
        async for event in events:
            yield event


async def _translate(b: MessageBuilder, response: Any) -> AsyncIterator[StreamEvent]:
    current: tuple[str, int] | None = None  # (kind, content index) of the open block
    tool_slots: dict[int, int] = {}  # wire tool index -> content index
    finish: str | None = None
    answered = False  # a chunk with a choice (or the usage) arrived

    def close() -> StreamEvent | None:
        nonlocal current
        if current is None:
            return None
        kind, index = current
        current = None
        if kind == "text":
            return b.text_end(index)
        if kind == "thinking":
            return b.thinking_end(index)
        return b.toolcall_end(index)

    async for chunk in b.iterate(response):
        if chunk.id:
            b.set_response_id(chunk.id)
        if chunk.model:
            b.set_response_model(chunk.model)
        if chunk.usage is not None:
            answered = True
            _set_usage(b, chunk.usage)
        if not chunk.choices:
            continue
        answered = True
        choice = chunk.choices[0]
        delta = choice.delta
        extras = delta.model_extra or {}
        for field in REASONING_FIELDS:
            piece = extras.get(field)
            if isinstance(piece, str) and piece:
                if current is None or current[0] != "thinking":
                    if (event := close()) is not None:
                        yield event
                    index, event = b.thinking_start(thinkingSignature=field)
                    current = ("thinking", index)
                    yield event
                yield b.thinking_delta(current[1], piece)
                break
        if delta.content:
            if current is None or current[0] != "text":
                if (event := close()) is not None:
                    yield event
                index, event = b.text_start()
                current = ("text", index)
                yield event
            yield b.text_delta(current[1], delta.content)
        for call in delta.tool_calls or []:
            slot = call.index if call.index is not None else len(tool_slots)
            if slot not in tool_slots or (call.id and b.block(tool_slots[slot])["id"] != call.id):
                if (event := close()) is not None:
                    yield event
                name = call.function.name if call.function and call.function.name else ""
                index, event = b.toolcall_start(call.id or new_call_id(), name)
                tool_slots[slot] = index
                current = ("toolCall", index)
                yield event
            index = tool_slots[slot]
            if call.function and call.function.name and not b.block(index)["name"]:
                b.block(index)["name"] = call.function.name
            if call.function and call.function.arguments:
                yield b.toolcall_delta(index, call.function.arguments)
        if choice.finish_reason:
            finish = choice.finish_reason
    if (event := close()) is not None:
        yield event
    for index in b.open_tool_indexes():
        yield b.toolcall_end(index)
    if not answered:
        raise NoResponseError("no Chat Completions chunk came")
    if finish is not None and finish not in _FINISH:
        raise RuntimeError(f"Provider finish_reason: {finish}")
    reason = _FINISH.get(finish or "stop", "stop")
    if reason == "stop" and any(c.get("type") == "toolCall" for c in b.message["content"]):
        reason = "toolUse"  # some compatible servers report "stop" after a tool call
    b.set_stop_reason(cast(Any, reason))


def _set_usage(b: MessageBuilder, usage: Any) -> None:
    prompt = usage.prompt_tokens or 0
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    b.set_usage(prompt - cached, usage.completion_tokens or 0, cached, 0)


register_provider("openai-completions", stream_openai_completions)
