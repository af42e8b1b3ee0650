"""``AsyncSession``: the one door through which the harness reads and writes its session.

Every call is awaited. For local stores (JSONL files, memory) the call runs inline: they are fast and never
wait on a network. For remote stores (``store.remote``, the SQL back ends) it runs in a worker thread, so the
event loop is never blocked. It adds no logic of its own: each method forwards to ``SessionManager``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

from sessiontree.format.pi_json import UNDEFINED
from sessiontree.session.manager import SessionManager
from sessiontree.tree.context import SessionContext

__all__ = ["AsyncSession"]

T = TypeVar("T")
Entry = dict[str, Any]


class AsyncSession:
    """Awaitable access to a ``SessionManager`` (inline when local, in a worker thread when remote)."""

    __slots__ = ("manager",)

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    @property
    def remote(self) -> bool:
        """Whether the current store's calls can wait on a network."""
        return bool(self.manager.store.remote)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(manager, *args, **kwargs)``, off the event loop when the store is remote."""
        if self.manager.store.remote:
            return await anyio.to_thread.run_sync(partial(fn, self.manager, *args, **kwargs))
        return fn(self.manager, *args, **kwargs)

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
