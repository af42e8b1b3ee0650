"""``SyncHarness``: the async ``AgentHarness`` for synchronous code, on an event loop in a background thread.

A thin runner: every method forwards to the harness on that loop and waits; listeners run there too. It
adds no behaviour.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal

from .harness import AbortResult, AgentHarness

__all__ = ["SyncHarness"]


class SyncHarness:
    """``with SyncHarness(AgentHarness(...)) as agent: agent.prompt("...")`` (or ``close()`` when done)."""

    def __init__(self, harness: AgentHarness) -> None:
        self.harness = harness
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()

    def __enter__(self) -> SyncHarness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the background loop (the harness is shut down first)."""
        try:
            self._portal.call(self.harness.shutdown)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (sync or async) on the harness's loop and return its result."""
        return self._portal.call(fn, *args)

    def prompt(self, text: str) -> dict[str, Any]:
        return self._portal.call(self.harness.prompt, text)  # type: ignore[no-any-return]

    def resume(self) -> dict[str, Any] | None:
        return self._portal.call(self.harness.resume)  # type: ignore[no-any-return]

    def compact(self, focus: str | None = None) -> dict[str, Any]:
        return self._portal.call(self.harness.compact, focus)  # type: ignore[no-any-return]

    def navigate_tree(self, target_id: str, summarize: bool = False, focus: str | None = None) -> Any:
        return self._portal.call(self.harness.navigate_tree, target_id, summarize, focus)

    def abort(self) -> AbortResult:
        return self._portal.call(self.harness.abort)  # type: ignore[no-any-return]

    def steer(self, text: str) -> None:
        self._portal.call(self.harness.steer, text)

    def follow_up(self, text: str) -> None:
        self._portal.call(self.harness.follow_up, text)

    def next_turn(self, text: str) -> None:
        self._portal.call(self.harness.next_turn, text)
