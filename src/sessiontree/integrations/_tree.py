"""The tree operations both framework adapters share, at a cursor (a leaf id): what the branch holds, append,
move the leaf (and remember where), the user turns, branch to a turn, compact, take back the last item.

Works through the ``SessionManager`` public API and the compaction package only; it knows no framework's
item shape (each adapter passes a ``Codec``). Nothing here deletes or rewrites an entry.

Every operation runs under the session's lock (``_lock``), which holds across threads and event loops, and
reads the leaf inside its own transaction; the async ones do their blocking work in worker threads.

A leaf move that writes no entry of its own (``pop_item``, ``clear_session``, ``branch_to_turn`` without a
summary) appends a ``custom`` entry (``customType`` ``sessiontree.move``) at the new position: pi's format
records the leaf only as "the last entry", so without it a re-opened session would be back at the old leaf.
pi keeps custom entries and never sends them to a model.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

from sessiontree._bulk import bulk_allocation
from sessiontree.format.pi_json import UNDEFINED
from sessiontree.session.manager import SessionManager
from sessiontree.tree.context import path_ids, path_types

from ..compaction import (
    DEFAULT_BRANCH_SUMMARY_SETTINGS,
    DEFAULT_COMPACTION_SETTINGS,
    NO_CONTENT_TO_SUMMARIZE,
    BranchSummarySettings,
    CompactionError,
    CompactionSettings,
    OfflineSummarizer,
    Summarizer,
    apply_compaction,
    collect_entries_for_branch_summary,
    generate_branch_summary,
    plan_compaction,
    should_compact,
)
from ..compaction import compact as summarize_compaction
from ..compaction.summarizer import LlmSummarizer
from ..errors import SessionError, SessionNotFoundError
from ..llm.tokens import estimate_context_tokens, estimate_tokens
from ..llm.types import Model
from ._blocks import Mismatch
from ._branch import Branch, branch_sources
from ._lock import SessionLock, in_worker, session_lock
from ._open import _open_manager
from ._records import Record, Source, check_storable, copy_json

__all__ = [
    "MOVE_CUSTOM_TYPE",
    "AdapterCodec",
    "Branch",
    "Codec",
    "Opener",
    "TreeAdapter",
    "TreeCore",
    "resolve_summarizer",
    "turn_text",
]

logger = logging.getLogger(__name__)

Entry = dict[str, Any]
T = TypeVar("T")
R = TypeVar("R")
A = TypeVar("A", bound="TreeAdapter[Any]")

MOVE_CUSTOM_TYPE = "sessiontree.move"
"""``customType`` of the entry that records a leaf move (``data``: ``{"op": ...}``)."""


def resolve_summarizer(summarizer: Summarizer | Model | None) -> Summarizer:
    """The summarizer to use: the offline one by default, a ``Model`` through the model layer."""
    if summarizer is None:
        return OfflineSummarizer()
    if isinstance(summarizer, Model):
        return LlmSummarizer(summarizer)
    return summarizer


def turn_text(message: dict[str, Any]) -> str:
    """The text of a user message (text blocks joined, as pi puts it back in the editor)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b["text"]
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


class Codec(Protocol[T]):
    """What an adapter tells the tree: which custom entries hold its items, and how sources map to items."""

    custom_types: frozenset[str]

    def items_of(self, source: Source) -> list[T]:
        """The framework items a source stands for (may be empty)."""
        ...

    def rebuild(self, source: Source, items: Sequence[T], cursor: str | None) -> list[Record]:
        """Records for what is left of a message source when its last item is taken back."""
        ...


class AdapterCodec(Generic[T, A]):
    """A ``Codec`` for an adapter: verbatim items of custom entries, stored messages through the adapter's
    mapping, and the plain reading (reported) when a message's residual does not fit it."""

    custom_types: frozenset[str] = frozenset()

    def __init__(self, adapter: A) -> None:
        self.adapter = weakref.proxy(adapter)

    def items_of(self, source: Source) -> list[T]:
        if source.kind == "custom":
            return self.verbatim(copy_json(source.payload.get("data")))
        try:
            return self.restore(source.payload)
        except Mismatch as error:
            self.adapter._read_plainly(source, error)
            return self.plain(source.payload)

    def verbatim(self, data: Any) -> list[T]:
        """The item a custom entry holds (``data`` is a copy)."""
        raise NotImplementedError

    def restore(self, message: dict[str, Any]) -> list[T]:
        """The items a stored message stands for (raises ``Mismatch``); nothing shared with ``message``."""
        raise NotImplementedError

    def plain(self, message: dict[str, Any]) -> list[T]:
        """The items of a message read as a plain pi message."""
        raise NotImplementedError

    def rebuild(self, source: Source, items: Sequence[T], cursor: str | None) -> list[Record]:
        raise NotImplementedError


def context_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """pi's context estimate, or the sum of per-message estimates when no reply reports usage."""
    estimate = estimate_context_tokens(messages)
    if estimate.usage_tokens == 0:
        return sum(estimate_tokens(m) for m in messages)
    return estimate.tokens


Opener = Callable[[], SessionManager]
"""Opens an adapter's session on its first use (in a worker thread for the async methods)."""


class TreeCore(Generic[T]):
    """One session's tree operations for an adapter; every method takes the cursor it works at.

    Built on an open ``SessionManager`` (its lock is shared by every adapter on it) or on an ``Opener``.
    """

    def __init__(
        self,
        manager: SessionManager | Opener,
        codec: Codec[T],
        *,
        summarizer: Summarizer | Model | None = None,
        compaction_settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
        branch_summary_settings: BranchSummarySettings = DEFAULT_BRANCH_SUMMARY_SETTINGS,
    ) -> None:
        self.codec = codec
        self.summarizer = resolve_summarizer(summarizer)
        self.compaction_settings = compaction_settings
        self.branch_summary_settings = branch_summary_settings
        self.closed = False
        self._opening = threading.Lock()
        if isinstance(manager, SessionManager):
            self._manager: SessionManager | None = manager
            self._opener: Opener | None = None
            self.lock = session_lock(manager)
        else:
            self._manager, self._opener = None, manager
            self.lock = SessionLock()  # the manager will be this adapter's own

    @property
    def manager(self) -> SessionManager:
        """The session's manager (opened now when the adapter was built on an ``Opener``)."""
        manager = self._manager
        if manager is None:
            with self._opening:
                self.check_open()
                if self._manager is None:
                    assert self._opener is not None
                    self._manager = self._opener()
                manager = self._manager
        return manager

    def close(self) -> None:
        """Close the manager (if it was opened); every later call raises."""
        with self._opening:
            self.closed = True
            if self._manager is not None:
                self._manager.close()

    # ------------------------------------------------------------------ running
    def check_open(self) -> None:
        """Raise ``SessionError`` (kind ``invalid_state``) once the adapter is closed."""
        if self.closed:
            manager = self._manager
            where = "the session"
            if manager is not None:
                where = manager.get_session_file() or f"session {manager.get_session_id()}"
            raise SessionError(f"{where}: the session is closed", kind="invalid_state")

    def transact(self, fn: Callable[[], R]) -> R:
        """``fn()`` as one transaction of the session, in this thread (the caller holds ``lock``)."""
        self.check_open()
        with self.manager.transaction():
            return fn()

    def run_now(self, fn: Callable[[], R]) -> R:
        """``fn()`` as one transaction under the session's lock, in this thread (for synchronous callers)."""
        with self.lock.hold():
            return self.transact(fn)

    async def in_worker(self, fn: Callable[[], R]) -> R:
        """``fn()`` as one transaction in a worker thread (the caller holds ``lock``)."""
        return await in_worker(lambda: self.transact(fn))

    async def run(self, fn: Callable[[], R]) -> R:
        """``fn()`` as one transaction under the session's lock, in a worker thread: the running loop never
        waits on the disk, SQLite or the network, and ``fn`` reads the leaf inside the transaction."""
        async with self.lock.held():
            return await self.in_worker(fn)

    # ------------------------------------------------------------------ reading
    def path(self, cursor: str | None) -> Sequence[Entry]:
        """Root-first entries up to ``cursor`` (empty at the root)."""
        return [] if cursor is None else self.manager.get_path_view(cursor)

    def branch(self, cursor: str | None) -> Branch:
        return branch_sources(self.path(cursor), self.codec.custom_types)

    def items(self, cursor: str | None, limit: int | None = None) -> list[T]:
        """The framework items at ``cursor``, oldest first; the latest ``limit`` when given (made with the
        collector paused and filed as old objects, as ``SessionManager.get_branch`` does)."""
        with bulk_allocation():
            return self._items(cursor, limit)

    def _items(self, cursor: str | None, limit: int | None) -> list[T]:
        sources = self.branch(cursor).sources
        if limit is None:
            out: list[T] = []
            for source in sources:
                out.extend(self.codec.items_of(source))
            return out
        if limit <= 0:
            return []
        chunks: list[list[T]] = []
        count = 0
        for source in reversed(sources):
            chunk = self.codec.items_of(source)
            if chunk:
                chunks.append(chunk)
                count += len(chunk)
                if count >= limit:
                    break
        flat = [item for chunk in reversed(chunks) for item in chunk]
        return flat[-limit:]

    def context_tokens(self, cursor: str | None) -> int:
        """Estimated tokens of the model context at ``cursor``."""
        if cursor is None:
            return 0
        return context_tokens(self.manager.build_session_context(cursor).messages)

    def turns(self, cursor: str | None) -> list[tuple[str, str]]:
        """``(entry_id, text)`` of every user message on the branch, oldest first."""
        path = self.path(cursor)
        types = path_types(path)
        ids = path_ids(path)
        out: list[tuple[str, str]] = []
        for i, kind in enumerate(types):
            if kind != "message":
                continue
            message = path[i].get("message")
            if isinstance(message, dict) and message.get("role") == "user":
                out.append((ids[i], turn_text(message)))
        return out

    def tool_name(self, cursor: str | None, call_id: str) -> str | None:
        """The name of the tool call ``call_id`` on the branch (latest first), or None."""
        path = self.path(cursor)
        types = path_types(path)
        for i in range(len(types) - 1, -1, -1):
            if types[i] != "message":
                continue
            message = path[i].get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("id") == call_id:
                    name = block.get("name")
                    return name if isinstance(name, str) else None
        return None

    # ------------------------------------------------------------------ writing (inside ``run``)
    def goto(self, cursor: str | None) -> None:
        """Put the manager's leaf on ``cursor`` (no entry is written)."""
        if self.manager.get_leaf_id() == cursor:
            return
        if cursor is None:
            self.manager.reset_leaf()
        else:
            self.manager.branch(cursor)

    def append(self, cursor: str | None, records: Sequence[Record]) -> list[str]:
        """Append ``records`` after ``cursor``; returns the new entry ids (the last one is the new cursor).
        Nothing is written when any of them cannot be stored (``TypeError``)."""
        check_storable(records)
        self.goto(cursor)
        ids: list[str] = []
        for record in records:
            if record.message is not None:
                ids.append(self.manager.append_message(record.message))
            else:
                ids.append(self.manager.append_custom_entry(str(record.custom_type), record.data))
        return ids

    def move(self, cursor: str | None, target: str | None, op: str) -> str | None:
        """Move from ``cursor`` to ``target`` and record the move; returns the new cursor."""
        if target == cursor:
            return cursor
        self.goto(target)
        return self.manager.append_custom_entry(MOVE_CUSTOM_TYPE, {"op": op})

    def pop(self, cursor: str | None) -> tuple[str | None, T | None]:
        """Take back the last item at ``cursor``: ``(new cursor, item)``; ``(cursor, None)`` when empty.

        The leaf moves to before the entry holding the item; the other items of that entry are appended
        again there. An item from the kept part of the latest compaction moves the compaction too: it is
        appended again after what stays, so the branch keeps its summary.
        """
        branch = self.branch(cursor)
        for index in range(len(branch.sources) - 1, -1, -1):
            source = branch.sources[index]
            items = self.codec.items_of(source)
            if items:
                break
        else:
            return cursor, None
        popped, rest = items[-1], items[:-1]
        compaction = branch.compaction
        if source.kind == "summary":
            return self.move(cursor, None, "pop_item"), popped
        if source.entry_id is None:
            # a retainedTail message: the compaction is appended again beside itself with the shorter tail
            assert compaction is not None
            tail = [s.payload for s in branch.sources[:index] if s.kept]
            tail.extend(r.message for r in self.codec.rebuild(source, rest, cursor) if r.message is not None)
            self.goto(compaction.get("parentId"))
            return self._append_compaction(compaction, compaction.get("firstKeptEntryId"), tail), popped
        entry = self.manager.get_entry(source.entry_id)
        assert entry is not None
        parent = entry.get("parentId")
        new_cursor: str | None = parent
        written = self.append(parent, self.codec.rebuild(source, rest, cursor)) if rest else []
        if written:
            new_cursor = written[-1]
        if source.kept and compaction is not None:
            first_kept = compaction.get("firstKeptEntryId")
            if first_kept == source.entry_id and written:
                first_kept = written[0]
            self.goto(new_cursor)
            return self._append_compaction(compaction, first_kept, None), popped
        if not written:
            new_cursor = self.move(cursor, parent, "pop_item")
        return new_cursor, popped

    def _append_compaction(self, compaction: Entry, first_kept: Any, tail: list[Any] | None) -> str:
        return self.manager.append_compaction(
            str(compaction.get("summary", "")),
            first_kept if isinstance(first_kept, str) else None,
            compaction.get("tokensBefore", 0),
            compaction.get("details", UNDEFINED),
            retained_tail=tail,
        )

    # ------------------------------------------------------------------ branching and compaction (lock held)
    def user_turn(self, entry_id: str) -> Entry:
        """The user-message entry ``entry_id``; raises for unknown ids and other entries."""
        entry = self.manager.get_entry(entry_id)
        if entry is None:
            raise SessionNotFoundError(f"Entry {entry_id} not found")
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "user":
            raise SessionError(f"Entry {entry_id} is not a user turn", kind="invalid_argument")
        return entry

    async def branch_to_turn(
        self, cursor: str | None, entry_id: str, summarize: bool
    ) -> tuple[str | None, str]:
        """Move to just before the user turn ``entry_id`` (pi's ``/tree`` on a user message).

        With ``summarize``, the abandoned entries are summarized and the summary is attached there (a
        ``branch_summary`` entry). Returns the new cursor and the turn's text. The caller holds ``lock``
        (the summary is written on the loop, the rest in worker threads).
        """
        entry = await self.in_worker(lambda: self.user_turn(entry_id))
        target = entry.get("parentId")
        text = turn_text(entry["message"])
        if summarize:
            collected = await self.in_worker(
                lambda: collect_entries_for_branch_summary(self.manager, cursor, entry_id)
            )
            if collected.entries:
                result = await generate_branch_summary(
                    collected.entries,
                    self.summarizer,
                    reserve_tokens=self.branch_summary_settings.reserve_tokens,
                )
                if result.summary != NO_CONTENT_TO_SUMMARIZE:

                    def attach() -> str:
                        self.goto(cursor)  # fromId records the abandoned leaf
                        return self.manager.branch_with_summary(target, result.summary, result.details)

                    return await self.in_worker(attach), text
        return await self.in_worker(lambda: self.move(cursor, target, "branch_to_turn")), text

    async def compact(self, cursor: str | None) -> Entry:
        """Compact the branch at ``cursor`` (raises ``CompactionError`` when there is nothing to compact).

        The caller holds ``lock``: the plan and the entry are made in worker threads, the summary on the loop.
        """
        if cursor is None:
            raise CompactionError("Nothing to compact (session too small)", kind="nothing_to_compact")
        settings = self.compaction_settings
        plan = await self.in_worker(lambda: plan_compaction(self.manager, settings, leaf_id=cursor))
        result = await summarize_compaction(
            plan.preparation, self.summarizer, thinking_level=plan.thinking_level
        )
        return await self.in_worker(lambda: apply_compaction(self.manager, result, leaf_id=cursor))

    async def compact_if_needed(self, cursor: str | None, context_window: int, force: bool) -> Entry | None:
        """Compact when forced or when the context leaves less than ``reserve_tokens`` of the window;
        None when not needed or nothing can be compacted. The caller holds ``lock``."""
        if not force:
            if not self.compaction_settings.enabled:
                return None
            tokens = await self.in_worker(lambda: self.context_tokens(cursor))
            if not should_compact(tokens, context_window, self.compaction_settings):
                return None
        try:
            return await self.compact(cursor)
        except CompactionError as error:
            if error.kind in ("nothing_to_compact", "already_compacted"):
                logger.debug("no compaction: %s", error)
                return None
            raise


class TreeAdapter(Generic[T]):
    """What the framework adapters share: a manager, the tree operations over it, opening, closing.

    ``options`` are ``TreeCore``'s (summarizer and settings); the adapters spell them out.
    """

    session_id: str | None

    def __init__(
        self, manager: SessionManager | Opener, codec: Codec[T], session_id: str | None = None, **options: Any
    ) -> None:
        self._core: TreeCore[T] = TreeCore(manager, codec, **options)
        self.session_id = manager.get_session_id() if isinstance(manager, SessionManager) else session_id

    @property
    def manager(self) -> SessionManager:
        """The session's ``SessionManager``."""
        return self._core.manager

    def _read_plainly(self, source: Source, error: Exception) -> None:
        """Say that a stored message's residual did not fit (it is read as a plain pi message)."""
        where = self.manager.get_session_file() or "<memory>"
        logger.warning("%s: entry %s: %s; read as a plain pi message", where, source.entry_id, error)

    @classmethod
    def open(
        cls, path_or_store_url: str | os.PathLike[str], session_id: str | None = None, **options: Any
    ) -> Self:
        """One on a ``.jsonl`` file (created when missing), a directory of sessions (``session_id`` in it,
        or a new one) or ``"memory:"``; ``options`` as for the constructor."""
        return cls(_open_manager(path_or_store_url, session_id), **options)

    def close(self) -> None:
        """Release the session (its file's writer lock, its database connection); every later call raises
        ``SessionError`` (kind ``invalid_state``)."""
        self._core.close()
