"""The phase guard every harness operation goes through: one operation at a time, an abort signal for it,
and the way back to idle (buffered writes flushed, ``settled`` announced after a run, waiters woken); and
the rule that turns a subsystem's error into the ``HarnessError`` the harness raises.

Holds no operation itself: ``harness.py`` runs prompts, ``tree_ops.py`` reshapes the session.
"""

from __future__ import annotations

from typing import Any

import anyio

from ..compaction.summarizer import BranchSummaryError, CompactionError
from ..errors import SessionError
from ..llm.types import AbortSignal
from .bus import hook_error
from .run import RunParts, flush_writes
from .types import HarnessError

__all__ = ["PhaseGuard", "normalize_error"]


def normalize_error(error: BaseException, fallback: str) -> HarnessError:
    """``error`` as a ``HarnessError``: subsystem errors keep their family (pi's wrapping), others the
    ``fallback`` kind; the original stays as ``cause``."""
    if isinstance(error, HarnessError):
        return error
    for family, kind in (
        (BranchSummaryError, "branch_summary"),
        (CompactionError, "compaction"),
        (SessionError, "session"),
    ):
        if isinstance(error, family):
            return HarnessError(str(error), kind=kind, cause=error)
    return hook_error(error, fallback)


class PhaseGuard:
    """The harness's phase bookkeeping over its ``RunParts`` (set by the subclass's constructor)."""

    _parts: RunParts
    _done: anyio.Event | None = None
    _shut_down: bool = False

    def _begin(self, phase: Any) -> None:
        if self._shut_down:
            raise HarnessError("AgentHarness was shut down", kind="invalid_state")
        if self._parts.phase != "idle":
            raise HarnessError("AgentHarness is busy", kind="busy")
        self._parts.phase = phase
        self._parts.signal = AbortSignal()
        self._done = anyio.Event()

    async def _end(self, *, run: bool = False) -> None:
        """Back to idle: flush what is still buffered; a run also announces ``settled``."""
        parts = self._parts
        try:
            await flush_writes(parts)
        finally:
            parts.phase, parts.signal = "idle", None
            done, self._done = self._done, None
            try:
                if run:
                    await parts.bus.emit({"type": "settled", "nextTurnCount": len(parts.queues.next_turn)})
            finally:
                if done is not None:
                    done.set()
