"""is_context_overflow: pi's patterns and exclusions, silent overflow and length-stop overflow."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.llm.overflow import is_context_overflow


def error(message: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": message,
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}  # fmt: skip


@pytest.mark.parametrize(
    "message",
    [
        '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}',
        '413 {"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
        "400 Input is too long for requested model.",
        "400 Your input exceeds the context window of this model.",
        "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 130517 tokens.",
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
        "Please reduce the length of the messages or completion.",
        "400 the request exceeds the available context size, try increasing it",
        "Requested token count exceeds the model's maximum context length of 131,072 tokens",
        "input (5000 tokens) is longer than the model's context length (4096 tokens)",
        "Request exceeds the limit of 32768 tokens",
        "Trying to keep the first 5000 tokens when context the overflows. Greater than the context length",
        "context window exceeds limit",
        "exceeded model token limit: 262144 (requested: 300000)",
        "This model's context is too large for model with 8192 maximum context length",
        "model_context_window_exceeded",
        "Prompt too long; exceeded max context length by 500 tokens",
        "context_length_exceeded",
        "Too many tokens in the request",
        "token limit exceeded",
        "400 status code (no body)",
        "413 (no body)",
    ],
)
def test_overflow_messages(message: str) -> None:
    assert is_context_overflow(error(message))


@pytest.mark.parametrize(
    "message",
    [
        "Throttling error: Too many tokens, please wait before trying again.",
        "Service unavailable: The service is temporarily unable to handle too many tokens",
        "429 Rate limit reached for gpt-4o: too many tokens per minute",
        "Too many requests: token limit exceeded for this minute",
        "500 Internal server error",
        "Connection error.",
    ],
)
def test_not_overflow(message: str) -> None:
    assert not is_context_overflow(error(message))


def test_overflow_text_only_counts_for_errors() -> None:
    message = error("prompt is too long")
    message["stopReason"] = "stop"
    assert not is_context_overflow(message)


def test_silent_overflow() -> None:
    message = {
        "stopReason": "stop",
        "usage": {"input": 150_000, "output": 10, "cacheRead": 60_000, "cacheWrite": 0},
    }
    assert is_context_overflow(message, 200_000)
    assert not is_context_overflow(message, 0)
    assert not is_context_overflow(message, 210_000)


def test_length_stop_overflow() -> None:
    message = {
        "stopReason": "length",
        "usage": {"input": 99_000, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    assert is_context_overflow(message, 100_000)
    assert not is_context_overflow({**message, "usage": {**message["usage"], "output": 1}}, 100_000)
    assert not is_context_overflow({**message, "usage": {**message["usage"], "input": 98_000}}, 100_000)
