"""How the adapters run their work: one lock per session that holds across threads and event loops, and
blocking work in a worker thread whose outcome is known before a cancellation goes on.

``SessionLock`` is taken by coroutines without blocking their loop (``async with lock.held()``) and by
synchronous code in any thread (``with lock.hold()``); it is handed to waiters in arrival order. The SDKs'
own sessions work the same way (the Agents SDK's ``SQLiteSession`` and LangChain's base class do their
blocking work with ``asyncio.to_thread`` / ``run_in_executor``).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TypeVar

__all__ = ["SessionLock", "in_worker", "session_lock"]

R = TypeVar("R")


class _Waiter:
    """One acquirer waiting its turn: a thread (``event``) or a task of a loop (``future``)."""

    __slots__ = ("event", "future", "granted", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] | None = loop.create_future() if loop is not None else None
        self.event = threading.Event() if loop is None else None
        self.granted = False

    def grant(self) -> bool:
        """Hand the lock over (called with the lock's state guard held); False when the waiter is gone."""
        if self.event is not None:
            self.granted = True
            self.event.set()
            return True
        assert self.loop is not None and self.future is not None
        future = self.future
        if future.done():  # its task was cancelled; it removes itself under the guard
            return False
        try:
            self.loop.call_soon_threadsafe(_wake, future)
        except RuntimeError:  # its loop is closed
            return False
        self.granted = True
        return True


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class SessionLock:
    """A lock that holds across threads and event loops (not re-entrant)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held = False
        self._holder: int | None = None  # the thread that took it (a loop's thread for a coroutine)
        self._waiters: deque[_Waiter] = deque()

    def _take_or_queue(self, loop: asyncio.AbstractEventLoop | None) -> _Waiter | None:
        with self._guard:
            if not self._held:
                self._held = True
                self._holder = threading.get_ident()
                return None
            if loop is None and self._holder == threading.get_ident():
                raise RuntimeError(
                    "the session is in use by a coroutine of this thread's event loop: "
                    "call the async method (a-prefixed) instead of the synchronous one"
                )
            waiter = _Waiter(loop)
            self._waiters.append(waiter)
            return waiter

    def acquire(self) -> None:
        """Wait in this thread until the lock is ours."""
        waiter = self._take_or_queue(None)
        if waiter is not None:
            assert waiter.event is not None
            waiter.event.wait()
            self._holder = threading.get_ident()

    async def acquire_async(self) -> None:
        """Wait without blocking the running loop until the lock is ours."""
        waiter = self._take_or_queue(asyncio.get_running_loop())
        if waiter is None:
            return
        assert waiter.future is not None
        try:
            await waiter.future
        except asyncio.CancelledError:
            with self._guard:
                granted = waiter.granted
                if not granted and waiter in self._waiters:
                    self._waiters.remove(waiter)
            if granted:  # handed over just as the task was cancelled: pass it on
                self.release()
            raise
        self._holder = threading.get_ident()

    def release(self) -> None:
        """Hand the lock to the next waiter, or free it."""
        with self._guard:
            if not self._held:
                raise RuntimeError("release of a SessionLock that is not held")
            while self._waiters:
                if self._waiters.popleft().grant():
                    self._holder = None
                    return
            self._held = False
            self._holder = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for a block of synchronous code."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold the lock for a block of a coroutine."""
        await self.acquire_async()
        try:
            yield
        finally:
            self.release()


_locks: weakref.WeakKeyDictionary[object, SessionLock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def session_lock(owner: object) -> SessionLock:
    """The one lock of ``owner`` (a session manager), shared by every adapter built on it."""
    with _locks_guard:
        lock = _locks.get(owner)
        if lock is None:
            lock = _locks[owner] = SessionLock()
        return lock


async def in_worker(fn: Callable[[], R]) -> R:
    """``fn()`` in a worker thread. A cancelled caller still waits for the thread to finish, so the work is
    either done or failed when the cancellation goes on (the Agents SDK's sessions do the same)."""
    task = asyncio.ensure_future(asyncio.to_thread(fn))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            cancelled = cancelled or error
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: a failure behind a cancellation is not reported as unhandled
        raise cancelled
    return task.result()
