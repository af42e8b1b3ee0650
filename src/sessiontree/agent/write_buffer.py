"""Pending session writes: what callers write while a run is in progress, applied after the run's own
messages so parent links stay causal (the seeds' write buffer, pi's ``pendingSessionWrites``).

Strictly FIFO; a write leaves the queue only after it succeeded, so a failure keeps the rest queued. A flush
is one call through the session facade, inside ``SessionManager.transaction()``: one database transaction
in the SQL stores, where a failure writes none of the flush and keeps all of it queued. It decides nothing about
when to flush (the harness flushes at ``turn_end``, ``prepare_next_turn``, ``agent_end`` and on failure).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sessiontree.session.manager import SessionManager

from .session import AsyncSession

__all__ = ["WRITE_KINDS", "PendingWrite", "WriteBuffer"]

_APPLY: dict[str, Callable[..., str]] = {
    "message": SessionManager.append_message,
    "model_change": SessionManager.append_model_change,
    "thinking_level_change": SessionManager.append_thinking_level_change,
    "active_tools_change": SessionManager.append_active_tools_change,
    "custom": SessionManager.append_custom_entry,
    "custom_message": SessionManager.append_custom_message_entry,
    "label": SessionManager.append_label_change,
    "session_info": SessionManager.append_session_info,
}
WRITE_KINDS = tuple(_APPLY)
"""pi's queue types: one per entry a caller can write."""


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """One buffered write: the entry type it appends and the append method's arguments."""

    kind: str
    args: tuple[Any, ...]

    def __post_init__(self) -> None:
        if self.kind not in _APPLY:
            raise ValueError(f"unknown pending write {self.kind!r}")

    def apply(self, manager: SessionManager) -> str:
        """Append the entry; returns its id."""
        return _APPLY[self.kind](manager, *self.args)


class WriteBuffer:
    """The FIFO of pending writes."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: deque[PendingWrite] = deque()

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def pending(self) -> tuple[PendingWrite, ...]:
        """The queued writes, oldest first (a copy)."""
        return tuple(self._queue)

    def push(self, kind: str, *args: Any) -> PendingWrite:
        """Queue a write."""
        write = PendingWrite(kind, args)
        self._queue.append(write)
        return write

    def clear(self) -> None:
        """Drop every queued write (``shutdown``)."""
        self._queue.clear()

    def apply_all(self, manager: SessionManager) -> int:
        """Apply every queued write in order inside one ``transaction()``; returns how many were written.

        Where the store's transactions are atomic (SQL), the writes leave the queue together once the
        transaction committed (a failure wrote none of them); elsewhere each leaves once it was written.
        """
        atomic = manager.index.atomic
        applied = 0
        with manager.transaction():
            for write in list(self._queue) if atomic else ():
                write.apply(manager)
                applied += 1
            while not atomic and self._queue:
                self._queue[0].apply(manager)
                self._queue.popleft()  # only once the write succeeded
                applied += 1
        if atomic:
            for _ in range(applied):
                self._queue.popleft()
        return applied

    async def flush(
        self, session: AsyncSession, then: Callable[[SessionManager], object] | None = None
    ) -> int:
        """Apply every queued write in order, as one facade call; returns how many were written. ``then``
        (the harness's context cache advancing) runs in the same call once the writes succeeded."""
        if not self._queue:
            return 0
        if then is None:
            return await session.run(self.apply_all)
        return await session.run(self._apply_all_then, then)

    def _apply_all_then(self, manager: SessionManager, then: Callable[[SessionManager], object]) -> int:
        applied = self.apply_all(manager)
        then(manager)
        return applied
