"""What every coding tool shares: JSON-schema building, text results, and running file work off the event
loop with abort checks.

No tool logic here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

from ...llm.types import AbortSignal
from ..types import ToolResult

__all__ = ["ABORTED", "check_abort", "in_thread", "object_schema", "text_result"]

T = TypeVar("T")
ABORTED = "Operation aborted"


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A JSON-schema object with these properties; no others are allowed."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def text_result(text: str, details: Any = None) -> ToolResult:
    """A result with one text block."""
    return ToolResult([{"type": "text", "text": text}], details)


def check_abort(signal: AbortSignal | None) -> None:
    """Raise the aborted error when ``signal`` fired."""
    if signal is not None and signal.aborted:
        raise RuntimeError(ABORTED)


async def in_thread(
    fn: Callable[..., T], *args: Any, signal: AbortSignal | None = None, mutates: bool = False
) -> T:
    """``fn(*args)`` in a worker thread (file work never blocks the event loop), checking the abort signal
    before, and after unless the work changed files (then its result must be reported as it is)."""
    check_abort(signal)
    result = await anyio.to_thread.run_sync(partial(fn, *args))
    if not mutates:
        check_abort(signal)
    return result
