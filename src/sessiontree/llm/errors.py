"""Turns exceptions from the SDKs (and anything else) into the ``errorMessage`` text pi stores.

Worded like pi's JavaScript SDKs so pi's overflow/retry patterns match; it never raises, never imports an SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontree.format.pi_json import dumps

__all__ = ["describe_error", "provider_error_message"]


def provider_error_message(body: Any) -> str | None:
    """The human-readable message inside an error body (``error.message``, ``message``, or the text)."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            inner = error.get("message")
            if isinstance(inner, str) and inner:
                return inner
        if isinstance(error, str) and error:
            return error
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return _whole_body(body)


def _whole_body(body: Any) -> str | None:
    if isinstance(body, Mapping):
        try:
            return dumps(body) if body else None
        except TypeError:
            return str(body)
    if isinstance(body, str) and body.strip():
        return body.strip()
    return None


def describe_error(exc: BaseException) -> str:
    """``"<status> <message>"`` for HTTP errors, ``"<status> status code (no body)"`` without a body, else
    the exception's own message.

    As in the JavaScript SDKs: OpenAI errors carry ``error.message``; Anthropic errors carry the whole JSON
    body (``{"type":"error","error":{...}}``), which is what pi stores and what its patterns expect.
    """
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    if type(exc).__module__.split(".", 1)[0] == "anthropic":
        detail = _whole_body(body)
    else:
        detail = provider_error_message(body)
    if isinstance(status, int) and status >= 400:
        return f"{status} {detail}" if detail else f"{status} status code (no body)"
    if detail:
        return detail
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(exc) or type(exc).__name__
