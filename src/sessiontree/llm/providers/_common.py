"""Helpers the wire formats share: keys and base URLs, clean JSON strings, content flattening, ids, closing.

No wire format lives here; ``stream_response`` runs a provider's own create call and translator.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from sessiontree.format.messages import Message

from ..models import DEFAULT_BASE_URLS, ENV_API_KEYS, get_env_api_key
from ..types import Model, StreamEvent, StreamOptions, ThinkingLevel

if TYPE_CHECKING:
    from ..stream import MessageBuilder

__all__ = [
    "DEFAULT_MAX_TOKENS_CAP",
    "NO_RESPONSE",
    "MissingApiKeyError",
    "NoResponseError",
    "aclose_quietly",
    "base_url",
    "clean_strings",
    "client_kwargs",
    "data_url",
    "max_tokens",
    "payload_hook",
    "reasoning_level",
    "request_headers",
    "resolve_api_key",
    "safe_id",
    "stream_response",
    "text_of",
]

DEFAULT_MAX_TOKENS_CAP = 32_000
"""Without an explicit ``max_tokens``, ask for ``min(model.max_tokens, 32000)`` (pi's default)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


NO_RESPONSE = "the stream ended without a response"
"""The error reply for a stream that closed before the provider said how the reply ended (a server that
speaks another API, or a connection cut short): never an empty reply that looks like a finished one."""


class NoResponseError(Exception):
    """The stream ended without the provider's closing event (see ``NO_RESPONSE``)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(NO_RESPONSE + (f" ({detail})" if detail else ""))


class MissingApiKeyError(Exception):
    """No key was given and none is set in the provider's environment variable."""


def resolve_api_key(model: Model, options: StreamOptions) -> str:
    """The key to send: explicit option, else the provider's env variable; local servers get a dummy."""
    key = options.api_key or get_env_api_key(model.provider)
    if key:
        return key
    if model.provider in ENV_API_KEYS:
        names = " or ".join(ENV_API_KEYS[model.provider])
        raise MissingApiKeyError(f"No API key for provider {model.provider}: set {names}")
    return "not-needed"  # OpenAI-compatible local servers ignore it, the SDK insists on one


def client_kwargs(model: Model, options: StreamOptions) -> dict[str, Any]:
    """Constructor arguments shared by the OpenAI and Anthropic clients."""
    kwargs: dict[str, Any] = {
        "api_key": resolve_api_key(model, options),
        "base_url": base_url(model, options),
        "default_headers": request_headers(model, options) or None,
        "max_retries": options.max_retries,
    }
    if options.timeout is not None:
        kwargs["timeout"] = options.timeout
    return kwargs


def base_url(model: Model, options: StreamOptions) -> str | None:
    """Where to send the request: option, model, then the provider's default."""
    return options.base_url or model.base_url or DEFAULT_BASE_URLS.get(model.provider)


def request_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    """Model headers overlaid with per-request headers."""
    return {**dict(model.headers), **dict(options.headers or {})}


def max_tokens(model: Model, options: StreamOptions) -> int:
    """The output-token limit to request."""
    return options.max_tokens or min(model.max_tokens, DEFAULT_MAX_TOKENS_CAP)


def reasoning_level(model: Model, options: StreamOptions) -> ThinkingLevel | None:
    """The requested thinking level, or None when the model cannot reason or none was asked for."""
    if not model.reasoning or options.reasoning is None:
        return None
    return options.reasoning


def clean_strings(value: Any) -> Any:
    """Drop lone UTF-16 surrogates from every string (stored messages may hold them; HTTP bodies cannot)."""
    if isinstance(value, str):
        return _clean(value)
    if not isinstance(value, dict | list):
        return value
    # Iterative (a stored value can be nested a thousand deep): copy each container, then fill it in.
    root: Any = {} if isinstance(value, dict) else []
    work: list[tuple[Any, Any]] = [(value, root)]
    while work:
        source, copy = work.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            if isinstance(item, str):
                item = _clean(item)
            elif isinstance(item, dict | list):
                child: Any = {} if isinstance(item, dict) else []
                work.append((item, child))
                item = child
            if isinstance(copy, dict):
                copy[_clean(key) if isinstance(key, str) else key] = item
            else:
                copy.append(item)
    return root


def _clean(text: str) -> str:
    return _SURROGATE.sub("", text) if not text.isascii() and _SURROGATE.search(text) else text


def data_url(block: Mapping[str, Any]) -> str:
    """An image block as a ``data:`` URL."""
    return f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"


def text_of(content: Any, separator: str = "\n") -> str:
    """The text blocks of a content list (or the string itself), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def images_of(content: Any) -> list[dict[str, Any]]:
    """The image blocks of a content list."""
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "image"]


def safe_id(raw: str, limit: int) -> str:
    """A tool-call id made of ``[A-Za-z0-9_-]`` and at most ``limit`` long; stable for the same input."""
    cleaned = _UNSAFE_ID.sub("_", raw) or "call"
    if len(cleaned) <= limit and cleaned == raw:
        return raw
    if len(cleaned) > limit:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        cleaned = cleaned[: limit - 13] + "_" + digest
    return cleaned


def new_call_id() -> str:
    """A fresh tool-call id for servers that send none."""
    import secrets

    return "call_" + secrets.token_hex(12)


async def aclose_quietly(close: Callable[[], Awaitable[Any]]) -> None:
    """Close a response or client even while the surrounding task is being cancelled."""
    # Closing a broken connection must not mask the real outcome.
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
        await close()


async def stream_response(
    b: MessageBuilder,
    client: Any,
    create: Callable[[], Awaitable[Any]],
    translate: Callable[[MessageBuilder, Any], AsyncIterator[StreamEvent]],
) -> AsyncGenerator[StreamEvent, None]:
    """Open the streamed response with ``create`` and yield ``translate``'s events; the response and then
    ``client`` are closed however the stream ends."""
    try:
        response: Any = await b.call(create)
        try:
            async for event in translate(b, response):
                yield event
        finally:
            await aclose_quietly(response.close)
    finally:
        await aclose_quietly(client.close)


async def payload_hook(options: StreamOptions, body: dict[str, Any]) -> dict[str, Any]:
    """The body to send: ``options.on_payload``'s replacement (sync or awaited) when it returns one."""
    if options.on_payload is None:
        return body
    result = options.on_payload(body)
    if inspect.isawaitable(result):
        result = await result
    return result if isinstance(result, dict) else body


def last_user_index(messages: list[Message] | list[dict[str, Any]]) -> int:
    """Index of the last message with role ``user`` (-1 when none)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return -1
