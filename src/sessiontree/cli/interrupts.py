"""Ctrl+C on the command line: what to say (whether a file opened to write was changed) and model calls that
stop as a cancel.

Holds no command; ``_common`` turns a ``KeyboardInterrupt`` anywhere in a command into ``cancel_message()``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["EXIT_CANCELLED", "cancel_message", "opened_to_write", "run_async"]

T = TypeVar("T")

EXIT_CANCELLED = 130
_WRITING_KEY = "sessiontree.writing"


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def opened_to_write(path: Path) -> None:
    """Remember ``path`` as it is now, for what a Ctrl+C later says about it (kept in the click context, one
    command's worth)."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta.setdefault(_WRITING_KEY, []).append((path, _signature(path)))


def cancel_message() -> str:
    """``cancelled (Ctrl+C)``, and for each file the command opened to write whether it was changed (by size
    and modification time); a command that only reads has nothing more to say."""
    import click

    ctx = click.get_current_context(silent=True)
    writing: list[tuple[Path, tuple[int, int] | None]] = ctx.meta.get(_WRITING_KEY, []) if ctx else []
    told = [
        f"{path} was not changed"
        if _signature(path) == before
        else f"{path} was changed before the cancel (sessiontree check {path} shows it)"
        for path, before in writing
    ]
    return "cancelled (Ctrl+C)" + (f"; {'; '.join(told)}" if told else "")


def run_async(work: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(work)`` where Ctrl+C ends in ``KeyboardInterrupt``. asyncio cancels the task on Ctrl+C and
    says so only when the task ends cancelled, but a provider SDK turns the cancellation into a connection
    error: the command would fail as if the network had, not stop because it was asked to."""
    import asyncio
    import signal
    import threading

    import anyio

    if threading.current_thread() is not threading.main_thread():
        return anyio.run(work)
    running: dict[str, Any] = {}

    async def main() -> T:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        return await work()

    def interrupt(signum: int, frame: Any) -> None:
        task = running.get("task")
        if task is None or task.done() or running.get("interrupted"):  # not started, over, or twice
            raise KeyboardInterrupt
        running["interrupted"] = True
        running["loop"].call_soon_threadsafe(task.cancel)  # as asyncio does, then say what it was

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        result = anyio.run(main)
    except BaseException:
        if running.get("interrupted"):
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if running.get("interrupted"):  # the work ended anyway: still a cancel, and said as one
        raise KeyboardInterrupt
    return result
