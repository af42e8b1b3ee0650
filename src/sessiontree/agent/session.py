"""``AsyncSession``: the one door through which the harness reads and writes its session.

Every call is awaited. For local stores (JSONL files, memory) the call runs inline: they are fast and never
wait on a network. For remote stores (``store.remote``, the SQL back ends) it runs in a worker thread, so the
event loop is never blocked: on asyncio the session's own thread (one call at a time, in the order they were
made, cheaper to hand over to than anyio's pool), elsewhere anyio's. It adds no logic of its own: each method
forwards to ``SessionManager``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from sessiontree.format.pi_json import UNDEFINED
from sessiontree.session.manager import SessionManager
from sessiontree.tree.context import SessionContext

__all__ = ["AsyncSession"]

T = TypeVar("T")
Entry = dict[str, Any]
IDLE_S = 10.0
"""A session's worker thread ends after this long without a call (the next call starts another)."""
_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[[], Any]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():  # the caller was cancelled by asyncio itself; nobody waits for the answer
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Worker:
    """The thread that runs one session's calls, one at a time and in the order they were made."""

    __slots__ = ("_jobs", "_lock", "_running")

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False

    def submit(self, job: _Job) -> None:
        with self._lock:
            self._jobs.put(job)
            if not self._running:
                self._running = True
                threading.Thread(target=self._main, name="sessiontree-session", daemon=True).start()

    def _main(self) -> None:
        while True:
            try:
                loop, future, context, call = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._running = False
                        return
                continue
            try:
                answer: tuple[Any, BaseException | None] = (context.run(call), None)
            except BaseException as exc:  # handed to the caller, as anyio's worker threads do
                answer = (None, exc)
            with contextlib.suppress(RuntimeError):  # the caller's event loop is closed: nobody is waiting
                loop.call_soon_threadsafe(_settle, future, *answer)
            del loop, future, context, call, answer


class AsyncSession:
    """Awaitable access to a ``SessionManager`` (inline when local, in a worker thread when remote)."""

    __slots__ = ("_worker", "manager")

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self._worker = _Worker()

    @property
    def remote(self) -> bool:
        """Whether the current store's calls can wait on a network."""
        return bool(self.manager.store.remote)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(manager, *args, **kwargs)``, off the event loop when the store is remote."""
        if self.manager.store.remote:
            return await self._in_worker(partial(fn, self.manager, *args, **kwargs))
        return fn(self.manager, *args, **kwargs)

    async def _in_worker(self, call: Callable[[], T]) -> T:
        """``call()`` in the session's thread; like ``anyio.to_thread.run_sync``, a cancellation waits until
        the call returned (the session's state never changes behind the caller's back)."""
        loop = _asyncio_loop()
        if loop is None:  # not asyncio (trio): anyio's worker threads
            return await anyio.to_thread.run_sync(call)
        await anyio.lowlevel.checkpoint_if_cancelled()  # as anyio's: a cancelled caller makes no call
        future: asyncio.Future[T] = loop.create_future()
        self._worker.submit((loop, future, contextvars.copy_context(), call))
        with anyio.CancelScope(shield=True):
            answer = await future
        return answer

    def run_now(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(manager, ...)`` right away, for synchronous callers; only for local stores (a remote store's
        call could block the event loop, so it raises ``RuntimeError`` there)."""
        if self.manager.store.remote:
            raise RuntimeError("a remote store is only called through run()")
        return fn(self.manager, *args, **kwargs)

    # -- reads -----------------------------------------------------------------------------------------
    async def leaf_id(self) -> str | None:
        """The leaf: the manager's own attribute, never a call to the store (no worker thread)."""
        return self.manager.get_leaf_id()

    async def entry(self, entry_id: str) -> Entry | None:
        return await self.run(SessionManager.get_entry, entry_id)

    async def branch(self, from_id: str | None = None) -> list[Entry]:
        return await self.run(SessionManager.get_branch, from_id)

    async def context(self) -> SessionContext:
        """A full rebuild of the context at the leaf (the turn snapshot extends a cached one instead)."""
        return await self.run(SessionManager.build_session_context)

    async def session_id(self) -> str:
        """The session id, from the header the index holds in memory (no worker thread)."""
        return self.manager.get_session_id()

    # -- writes ----------------------------------------------------------------------------------------
    async def append_message(self, message: dict[str, Any]) -> str:
        return await self.run(SessionManager.append_message, message)

    async def append_model_change(self, provider: str, model_id: str) -> str:
        return await self.run(SessionManager.append_model_change, provider, model_id)

    async def append_thinking_level_change(self, level: str) -> str:
        return await self.run(SessionManager.append_thinking_level_change, level)

    async def append_active_tools_change(self, names: list[str]) -> str:
        return await self.run(SessionManager.append_active_tools_change, names)

    async def append_custom_entry(self, custom_type: str, data: Any = UNDEFINED) -> str:
        return await self.run(SessionManager.append_custom_entry, custom_type, data)

    async def sync(self) -> None:
        """Make every write durable now (a save point); nothing to do, and no call, for a store whose commits are
        as durable as they get (the SQL back ends)."""
        if not self.manager.store.durable_on_commit:
            await self.run(SessionManager.sync)
