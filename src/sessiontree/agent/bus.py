"""The harness's event bus: subscribers see every event, hook handlers answer named events, and events posted
from synchronous calls are delivered at the next await point.

Listeners and handlers may be sync or async; each is awaited in turn, in subscription order. A listener or
handler that raises becomes ``HarnessError(kind="hook")``. The bus knows no event types and no session.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from .types import HarnessError

__all__ = ["EventBus", "Posted", "hook_error"]

Event = dict[str, Any]
Listener = Callable[[Event], Any]


def hook_error(error: BaseException, kind: str = "hook") -> HarnessError:
    """``error`` as a ``HarnessError`` (kept as is when it already is one)."""
    if isinstance(error, HarnessError):
        return error
    return HarnessError(str(error) or type(error).__name__, kind=kind, cause=error)


class Posted:
    """Returned by harness calls that are synchronous but announce an event: awaiting it delivers the event
    now; not awaiting it is fine too (the event goes out at the harness's next await point)."""

    __slots__ = ("_bus",)

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus

    def __await__(self) -> Generator[Any, None, None]:
        return self._bus.deliver_posted().__await__()


class EventBus:
    """Subscribers (``subscribe``) get every event; handlers (``on``) answer one event type."""

    __slots__ = ("_handlers", "_listeners", "_posted")

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._handlers: dict[str, list[Listener]] = {}
        self._posted: deque[Event] = deque()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns the function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on(self, event_type: str, handler: Listener) -> Callable[[], None]:
        """Let ``handler(event)`` answer events of ``event_type``; returns the function that removes it."""
        handlers = self._handlers.setdefault(event_type, [])
        handlers.append(handler)
        return lambda: handlers.remove(handler) if handler in handlers else None

    def handles(self, event_type: str) -> bool:
        """Whether any handler answers ``event_type``."""
        return bool(self._handlers.get(event_type))

    async def _call(self, fn: Listener, event: Event) -> Any:
        try:
            result = fn(event)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            raise hook_error(exc) from exc
        return result

    async def _deliver(self, event: Event) -> None:
        for listener in list(self._listeners):
            await self._call(listener, event)

    async def emit(self, event: Event) -> None:
        """Deliver posted events, then ``event``, to every subscriber in order."""
        await self.deliver_posted()
        await self._deliver(event)

    def post(self, event: Event) -> Posted:
        """Queue ``event`` for delivery at the next ``emit`` or ``deliver_posted``."""
        self._posted.append(event)
        return Posted(self)

    async def deliver_posted(self) -> None:
        """Deliver every posted event, oldest first."""
        while self._posted:
            await self._deliver(self._posted.popleft())

    async def hook(self, event: Event) -> Any:
        """Ask the handlers of ``event["type"]``: the last result that is not ``None`` wins."""
        answer = None
        for handler in list(self._handlers.get(event["type"], ())):
            result = await self._call(handler, event)
            if result is not None:
                answer = result
        return answer

    async def chain(self, event: Event, key: str, apply: Callable[[Any, Any], Any]) -> Any:
        """Handlers of ``event["type"]`` in turn, each seeing the value so far under ``key``; a result's
        ``key`` entry is folded in with ``apply(value, patch)``. Returns the final value."""
        value = event[key]
        for handler in list(self._handlers.get(event["type"], ())):
            result = await self._call(handler, {**event, key: value})
            if isinstance(result, dict) and key in result:
                value = apply(value, result[key])
        return value
