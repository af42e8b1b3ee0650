"""``TreeChatMessageHistory``: LangChain's ``BaseChatMessageHistory`` over a sessiontree session (a pi file).

The history is the branch at the leaf: ``add_messages`` appends there, ``messages`` reads it (after the
latest compaction: its summary, then the kept messages), ``clear`` only moves the leaf to the root, so
nothing is ever deleted. Message mapping lives in ``mapping``, tree operations in ``.._tree``.

Every method, synchronous or async, reads the leaf inside its own transaction under the session's lock
(held across threads and event loops); the async ones do their store work in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage, messages_from_dict
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "sessiontree.integrations.langchain needs langchain-core: pip install 'sessiontree[langchain]'"
    ) from exc

from sessiontree.session.manager import SessionManager

from ...compaction import (
    DEFAULT_BRANCH_SUMMARY_SETTINGS,
    DEFAULT_COMPACTION_SETTINGS,
    BranchSummarySettings,
    CompactionSettings,
    Summarizer,
)
from ...llm.types import Model
from .._records import Record, Source, copy_json
from .._tree import AdapterCodec, Opener, TreeAdapter
from .mapping import MESSAGE_CUSTOM_TYPE, default_message, message_of, message_to_record

__all__ = ["TreeChatMessageHistory"]


T = TypeVar("T")


class _Codec(AdapterCodec[BaseMessage, "TreeChatMessageHistory"]):
    """LangChain messages for the tree operations."""

    custom_types = frozenset({MESSAGE_CUSTOM_TYPE})

    def verbatim(self, data: Any) -> list[BaseMessage]:
        return list(messages_from_dict([data]))

    def restore(self, message: dict[str, Any]) -> list[BaseMessage]:
        restored = message_of(copy_json(message))
        return [] if restored is None else [restored]

    def plain(self, message: dict[str, Any]) -> list[BaseMessage]:
        restored = default_message(copy_json(message))
        return [] if restored is None else [restored]

    def rebuild(self, source: Source, items: Sequence[BaseMessage], cursor: str | None) -> list[Record]:
        clock = self.adapter.manager.clock
        return [message_to_record(m, timestamp=clock()) for m in items]


def _wait(coroutine: Coroutine[Any, Any, T], twin: str) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise RuntimeError(f"called inside an event loop: use {twin}()")


class TreeChatMessageHistory(TreeAdapter[BaseMessage], BaseChatMessageHistory):
    """A LangChain chat history kept as a sessiontree tree (e.g. for ``RunnableWithMessageHistory``).

    Build it on a ``SessionManager``, on a function that opens one (called on first use, in a worker thread
    for the async methods; ``session_id`` then names the session it opens), or with
    ``TreeChatMessageHistory.open(target, session_id=None)`` (a ``.jsonl`` file, created when missing; a
    directory of sessions; a database store URL; ``"memory:"``); for ``RunnableWithMessageHistory``,
    ``get_session_history(store)`` gives one per session id. ``summarizer``
    (a ``Summarizer`` or a ``sessiontree.llm.Model``; offline by default) writes compactions and branch
    summaries; ``compaction_settings`` say how much recent history a compaction keeps.
    """

    def __init__(
        self,
        manager: SessionManager | Opener,
        *,
        session_id: str | None = None,
        summarizer: Summarizer | Model | None = None,
        compaction_settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
        branch_summary_settings: BranchSummarySettings = DEFAULT_BRANCH_SUMMARY_SETTINGS,
    ) -> None:
        TreeAdapter.__init__(
            self,
            manager,
            _Codec(self),
            session_id,
            summarizer=summarizer,
            compaction_settings=compaction_settings,
            branch_summary_settings=branch_summary_settings,
        )

    # ------------------------------------------------------------------ BaseChatMessageHistory
    # Every call reads the leaf inside its transaction, under the session's lock (held across threads and
    # event loops); the async ones do their work in a worker thread.
    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The messages at the leaf, oldest first (after a compaction: its summary, then the kept ones)."""
        core = self._core
        return core.run_now(lambda: core.items(self.manager.get_leaf_id()))

    async def aget_messages(self) -> list[BaseMessage]:
        core = self._core
        return await core.run(lambda: core.items(self.manager.get_leaf_id()))

    def _append(self, messages: Sequence[BaseMessage]) -> None:
        cursor = self.manager.get_leaf_id()
        core = self._core
        names: dict[str, str] = {}  # calls made in this batch, before they are on the branch

        def tool_name(call_id: str) -> str | None:
            return names.get(call_id) or core.tool_name(cursor, call_id)

        records: list[Record] = []
        for message in messages:
            for call in getattr(message, "tool_calls", None) or []:
                if isinstance(call.get("id"), str) and isinstance(call.get("name"), str):
                    names[call["id"]] = call["name"]
            records.append(message_to_record(message, timestamp=self.manager.clock(), tool_name=tool_name))
        core.append(cursor, records)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` at the leaf, one pi message (or custom entry) each."""
        if messages:
            self._core.run_now(lambda: self._append(messages))
        else:
            self._core.check_open()

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            await self._core.run(lambda: self._append(messages))
        else:
            self._core.check_open()

    def _clear(self) -> None:
        self._core.move(self.manager.get_leaf_id(), None, "clear")

    def clear(self) -> None:
        """Move the leaf to the root: the history reads as empty, every message stays in the tree."""
        self._core.run_now(self._clear)

    async def aclear(self) -> None:
        await self._core.run(self._clear)

    # ------------------------------------------------------------------ the tree
    def list_turns(self) -> list[tuple[str, str]]:
        """The human turns on the current branch, oldest first, as ``(entry_id, text)``."""
        core = self._core
        return core.run_now(lambda: core.turns(self.manager.get_leaf_id()))

    async def alist_turns(self) -> list[tuple[str, str]]:
        """``list_turns`` for async code."""
        core = self._core
        return await core.run(lambda: core.turns(self.manager.get_leaf_id()))

    async def abranch_to_turn(self, entry_id: str, summarize: bool = False) -> str:
        """Move the leaf to just before the human turn ``entry_id`` (kept in the tree), optionally leaving a
        summary of the abandoned work; returns the turn's text."""
        core = self._core
        async with core.lock.held():
            cursor = await core.in_worker(self.manager.get_leaf_id)
            _, text = await core.branch_to_turn(cursor, entry_id, summarize)
        return text

    def branch_to_turn(self, entry_id: str, summarize: bool = False) -> str:
        """``abranch_to_turn`` for synchronous code (outside an event loop)."""
        return _wait(self.abranch_to_turn(entry_id, summarize), "abranch_to_turn")

    async def acompact(self) -> dict[str, Any]:
        """Compact the history now; returns the compaction entry (``CompactionError`` when nothing to do)."""
        core = self._core
        async with core.lock.held():
            cursor = await core.in_worker(self.manager.get_leaf_id)
            return await core.compact(cursor)

    def compact(self) -> dict[str, Any]:
        """``acompact`` for synchronous code (outside an event loop)."""
        return _wait(self.acompact(), "acompact")
