"""A progress bar for long reads: listings with many session files (a first listing, a stale cache), copies.

Draws on stderr and only on a terminal, so scripts and pipes see nothing; it never changes what is listed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["MIN_FILES", "listing_progress"]

MIN_FILES = 40
"""Fewer files than this to read are quick enough to need no bar."""


@contextmanager
def listing_progress(
    stream: Any = None, *, label: str = "reading sessions", minimum: int = MIN_FILES
) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback that shows a transient bar once ``total`` reaches ``minimum``."""
    target = stream if stream is not None else sys.stderr
    state: dict[str, Any] = {}
    interactive = bool(getattr(target, "isatty", None) and target.isatty())

    def update(done: int, total: int) -> None:
        if not interactive or total < minimum:
            return
        bar = state.get("bar")
        if bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            bar = Progress(
                TextColumn(label),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(file=target, highlight=False, emoji=False),
                transient=True,
            )
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("read", total=total)
        bar.update(state["task"], completed=done, total=total)

    try:
        yield update
    finally:
        bar = state.get("bar")
        if bar is not None:
            bar.stop()
