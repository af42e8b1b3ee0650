"""The harness's message queues: steering (polled after each turn), follow-ups (when the run would stop) and
next-turn messages (sent before the next prompt's user message).

Holds the lists and the drain rules only; the harness emits ``queue_update`` around every change.
"""

from __future__ import annotations

from typing import Any

from .events import queue_update
from .types import QueueMode

__all__ = ["MessageQueues"]

AgentMessage = dict[str, Any]


class MessageQueues:
    """Steer, follow-up and next-turn queues with pi's drain modes (``one-at-a-time`` or ``all``)."""

    __slots__ = ("follow_up", "follow_up_mode", "next_turn", "steer", "steering_mode")

    def __init__(
        self, steering_mode: QueueMode = "one-at-a-time", follow_up_mode: QueueMode = "one-at-a-time"
    ) -> None:
        self.steer: list[AgentMessage] = []
        self.follow_up: list[AgentMessage] = []
        self.next_turn: list[AgentMessage] = []
        self.steering_mode: QueueMode = steering_mode
        self.follow_up_mode: QueueMode = follow_up_mode

    def event(self) -> dict[str, Any]:
        """The ``queue_update`` event for the queues as they are now (copies)."""
        return queue_update(list(self.steer), list(self.follow_up), list(self.next_turn))

    @staticmethod
    def take(queue: list[AgentMessage], mode: QueueMode) -> list[AgentMessage]:
        """Remove and return what one poll delivers: everything (``all``) or the oldest message."""
        taken = queue[:] if mode == "all" else queue[:1]
        del queue[: len(taken)]
        return taken

    @staticmethod
    def put_back(queue: list[AgentMessage], messages: list[AgentMessage]) -> None:
        """Undo a ``take`` (when announcing it failed)."""
        queue[:0] = messages

    def clear_interactive(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        """Empty the steer and follow-up queues (``abort``); next-turn messages stay. Returns what was cleared."""
        cleared = (self.steer[:], self.follow_up[:])
        self.steer.clear()
        self.follow_up.clear()
        return cleared

    def clear(self) -> None:
        """Empty every queue (``shutdown``)."""
        self.steer.clear()
        self.follow_up.clear()
        self.next_turn.clear()
