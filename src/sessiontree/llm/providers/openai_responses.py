"""OpenAI Responses wire format (api ``openai-responses``): stateless requests with replayed reasoning items.

Only translates (request out, events in); errors, aborts and costs are handled by ``llm.stream``.
"""

# Signatures follow pi: a reasoning item is kept whole (as JSON) in the thinking block's ``thinkingSignature``,
# a message item id in ``textSignature``, and tool-call ids are ``call_id|item_id``.

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, cast

import openai

from sessiontree.format.pi_json import dumps, loads

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
    payload_hook,
    reasoning_level,
    safe_id,
    stream_response,
    text_of,
)

__all__ = ["build_request", "convert_input", "stream_openai_responses"]


def _normalize_id(raw: str) -> str:
    call_id, sep, item_id = raw.partition("|")
    call_id = safe_id(call_id, 64)
    return f"{call_id}|{safe_id(item_id, 64)}" if sep and item_id else call_id


def _parts(content: Any, images_ok: bool) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content or []:
        if block.get("type") == "text" and block.get("text"):
            parts.append({"type": "input_text", "text": block["text"]})
        elif block.get("type") == "image" and images_ok:
            parts.append({"type": "input_image", "detail": "auto", "image_url": data_url(block)})
    return parts


def convert_input(model: Model, context: Context) -> list[dict[str, Any]]:
    """Model messages (plus system prompt) as Responses ``input`` items."""
    items: list[dict[str, Any]] = []
    if context.system_prompt:
        items.append({"role": "developer" if model.reasoning else "system", "content": context.system_prompt})
    text_counter = 0
    for message in transform_messages(context.messages, model, normalize_tool_call_id=_normalize_id):
        msg = cast(dict[str, Any], message)
        role = msg["role"]
        if role == "user":
            parts = _parts(msg.get("content"), model.supports_images)
            if parts:
                items.append({"role": "user", "content": parts})
        elif role == "assistant":
            same = is_same_model(msg, model)
            for block in msg.get("content") or []:
                kind = block.get("type")
                if kind == "thinking":
                    signature = block.get("thinkingSignature")
                    if same and isinstance(signature, str) and signature.startswith("{"):
                        with contextlib.suppress(ValueError):
                            items.append(loads(signature))
                elif kind == "text" and block.get("text"):
                    text_counter += 1
                    item_id = block.get("textSignature") if same else None
                    items.append({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": block["text"], "annotations": []}],
                        "status": "completed",
                        "id": item_id or f"msg_{text_counter}",
                    })  # fmt: skip
                elif kind == "toolCall":
                    call_id, _, item_id = str(block["id"]).partition("|")
                    item: dict[str, Any] = {"type": "function_call"}
                    # A function_call item id ties it to its reasoning item; only our own can be replayed.
                    if same and item_id:
                        item["id"] = item_id
                    item.update(
                        call_id=call_id, name=block["name"], arguments=dumps(block.get("arguments") or {})
                    )
                    items.append(item)
        elif role == "toolResult":
            content = msg.get("content")
            text = text_of(content)
            images = images_of(content) if model.supports_images else []
            output: str | list[dict[str, Any]]
            if images:
                output = _parts(content, True)
            else:
                output = text or "(no output)"
            call_id = str(msg["toolCallId"]).partition("|")[0]
            items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    return items


def _tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters),
         "strict": False}
        for t in tools
    ]  # fmt: skip


def build_request(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body sent to ``POST /responses``."""
    body: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(model, context),
        "stream": True,
        "store": False,
        "max_output_tokens": max_tokens(model, options),
    }
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = _tools(context.tools)
    level = reasoning_level(model, options)
    if level is not None and level != "off":
        body["reasoning"] = {"effort": level, "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    if options.session_id:
        body["prompt_cache_key"] = options.session_id
    if options.extra_body:
        body.update(options.extra_body)
    return cast(dict[str, Any], clean_strings(body))


async def stream_openai_responses(
    model: Model, context: Context, options: StreamOptions, b: MessageBuilder
) -> AsyncGenerator[StreamEvent, None]:
    """Send the request and translate the event stream."""
    body = build_request(model, context, options)
    body = await payload_hook(options, body)
    client = openai.AsyncOpenAI(**client_kwargs(model, options))
    extra = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}

    def create() -> Any:
        return client.responses.create(
            model=body["model"], input=body["input"], stream=True, extra_body=extra
        )

    async with contextlib.aclosing(stream_response(b, client, create, _translate)) as events:
        async for event in events:
            yield event


def _dump(item: Any) -> dict[str, Any]:
    return cast(dict[str, Any], item.model_dump(mode="json", exclude_none=True))


async def _translate(b: MessageBuilder, response: Any) -> AsyncIterator[StreamEvent]:
    open_items: dict[str, tuple[str, int]] = {}  # item id -> (kind, content index)
    saw_summary_part = False
    ended = False  # response.completed / incomplete / failed came
    async for event in b.iterate(response):
        kind = event.type
        if kind == "response.created":
            b.set_response_id(event.response.id)
        elif kind == "response.output_item.added":
            item = event.item
            if item.type == "reasoning":
                index, ev = b.thinking_start()
                open_items[item.id] = ("thinking", index)
                saw_summary_part = False
                yield ev
            elif item.type == "message":
                index, ev = b.text_start()
                open_items[item.id] = ("text", index)
                yield ev
            elif item.type == "function_call":
                index, ev = b.toolcall_start(f"{item.call_id}|{item.id}", item.name)
                open_items[item.id] = ("toolCall", index)
                yield ev
        elif kind == "response.reasoning_summary_part.added":
            slot = open_items.get(event.item_id)
            if slot is not None and saw_summary_part:
                yield b.thinking_delta(slot[1], "\n\n")
            saw_summary_part = True
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            slot = open_items.get(event.item_id)
            if slot is not None:
                yield b.thinking_delta(slot[1], event.delta)
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            slot = open_items.get(event.item_id)
            if slot is not None:
                yield b.text_delta(slot[1], event.delta)
        elif kind == "response.function_call_arguments.delta":
            slot = open_items.get(event.item_id)
            if slot is not None:
                yield b.toolcall_delta(slot[1], event.delta)
        elif kind == "response.output_item.done":
            item = event.item
            slot = open_items.pop(item.id, None)
            if slot is None:
                continue
            index = slot[1]
            if slot[0] == "thinking":
                block = b.block(index)
                if not block["thinking"]:
                    block["thinking"] = "\n\n".join(s.text for s in item.summary or [])
                block["thinkingSignature"] = dumps(_dump(item))
                yield b.thinking_end(index)
            elif slot[0] == "text":
                b.block(index)["textSignature"] = item.id
                yield b.text_end(index)
            else:
                arguments = loads(item.arguments) if item.arguments else {}
                yield b.toolcall_end(index, arguments if isinstance(arguments, dict) else {})
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            ended = True
            result = event.response
            b.set_response_id(result.id)
            if result.usage is not None:
                # Compatible servers may leave the details out.
                details = getattr(result.usage, "input_tokens_details", None)
                cached = getattr(details, "cached_tokens", 0) or 0
                b.set_usage(result.usage.input_tokens - cached, result.usage.output_tokens, cached, 0)
            if kind == "response.failed":
                error = result.error
                raise RuntimeError(error.message if error is not None else "Response failed")
            if kind == "response.incomplete":
                b.set_stop_reason("length")
            elif any(c.get("type") == "toolCall" for c in b.message["content"]):
                b.set_stop_reason("toolUse")
            else:
                b.set_stop_reason("stop")
        elif kind == "error":
            raise RuntimeError(getattr(event, "message", None) or "Response stream error")
    if not ended:
        raise NoResponseError("no response.completed event came")


register_provider("openai-responses", stream_openai_responses)
