"""``TreeSession``: the OpenAI Agents SDK's ``Session`` protocol over a sessiontree session (a pi file).

The session is the branch at the leaf: ``add_items`` appends there, ``get_items`` reads it (after the
latest compaction: its summary, then the kept items), ``pop_item`` and ``clear_session`` only move the
leaf, so nothing is ever deleted. Item mapping lives in ``mapping``, tree operations in ``.._tree``.

One session may be used from several threads and event loops at once: each call reads the leaf inside its
own transaction under the session's lock, and does its store work in a worker thread (``.._lock``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

try:
    from agents.memory import SessionSettings
    from agents.memory.session import OpenAIResponsesCompactionArgs
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
    from agents.run_context import RunContextWrapper
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "sessiontree.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'sessiontree[openai-agents]'"
    ) from exc

from sessiontree.format.messages import Usage
from sessiontree.session.manager import SessionManager

from ...compaction import (
    DEFAULT_BRANCH_SUMMARY_SETTINGS,
    DEFAULT_COMPACTION_SETTINGS,
    BranchSummarySettings,
    CompactionSettings,
    Summarizer,
)
from ...errors import SessionNotFoundError
from ...llm.types import Model
from .._records import Record, Source, copy_json
from .._tree import AdapterCodec, TreeAdapter
from .mapping import (
    API,
    ITEM_CUSTOM_TYPE,
    PROVIDER,
    Item,
    default_items,
    items_to_records,
    message_items,
)

__all__ = ["DEFAULT_CONTEXT_WINDOW", "TreeSession"]


DEFAULT_CONTEXT_WINDOW = 128_000
"""The window automatic compaction assumes when none is configured (pi's fallback)."""

RunBranch = Callable[[RunContextWrapper[Any]], str | None]
R = TypeVar("R")


class _Codec(AdapterCodec[Item, "TreeSession"]):
    """Items of the Responses API for the tree operations."""

    custom_types = frozenset({ITEM_CUSTOM_TYPE})

    def verbatim(self, data: Any) -> list[Item]:
        return [cast(Item, data)]

    def restore(self, message: dict[str, Any]) -> list[Item]:
        return message_items(message)

    def plain(self, message: dict[str, Any]) -> list[Item]:
        return default_items(message)

    def rebuild(self, source: Source, items: Sequence[Item], cursor: str | None) -> list[Record]:
        template = source.payload
        session = self.adapter
        return items_to_records(
            items,
            timestamp=template.get("timestamp") or session.manager.clock(),
            model=str(template.get("model", session.model)),
            usage=template.get("usage"),
            tool_name=lambda call_id: session._core.tool_name(cursor, call_id),
            provider=str(template.get("provider", PROVIDER)),
            api=str(template.get("api", API)),
        )


def _reply_usage(wrapper: RunContextWrapper[Any] | None) -> Usage | None:
    """pi's usage for the reply being stored: the run's latest request, when the SDK measured one."""
    entries = getattr(getattr(wrapper, "usage", None), "request_usage_entries", None)
    if not entries:
        return None
    last = entries[-1]
    cached = int(getattr(last.input_tokens_details, "cached_tokens", 0) or 0)
    written = int(getattr(last.input_tokens_details, "cache_write_tokens", 0) or 0)
    return {
        "input": max(int(last.input_tokens) - cached - written, 0),
        "output": int(last.output_tokens),
        "cacheRead": cached,
        "cacheWrite": written,
        "totalTokens": int(last.total_tokens),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


class TreeSession(TreeAdapter[Item]):
    """An Agents SDK session kept as a sessiontree tree (``Runner.run(agent, input, session=...)``).

    Build it on a ``SessionManager`` or with ``TreeSession.open(target, session_id=None)`` (a ``.jsonl``
    file, created when missing; a directory of sessions; ``"memory:"``). Options: ``session_settings``
    (the SDK's ``SessionSettings`` or a dict of them, for the default ``limit``); ``model``, the model name recorded on stored replies;
    ``summarizer`` for compaction and branch summaries (a ``Summarizer`` or a ``sessiontree.llm.Model``;
    offline by default); ``compaction_settings`` and ``context_window`` for the automatic compaction the
    Runner asks for after each turn; ``branch_for_run``, a function of the run context giving the entry
    a run continues from (``None``: the session's leaf), so runs can work on different branches at once.
    """

    session_settings: SessionSettings

    def __init__(
        self,
        manager: SessionManager,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        model: str = "unknown",
        summarizer: Summarizer | Model | None = None,
        compaction_settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
        branch_summary_settings: BranchSummarySettings = DEFAULT_BRANCH_SUMMARY_SETTINGS,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        branch_for_run: RunBranch | None = None,
    ) -> None:
        super().__init__(
            manager,
            _Codec(self),
            summarizer=summarizer,
            compaction_settings=compaction_settings,
            branch_summary_settings=branch_summary_settings,
        )
        self.session_settings = (
            SessionSettings() if session_settings is None else coerce_session_settings(session_settings)
        )
        self.model = model
        self.context_window = context_window
        self.branch_for_run = branch_for_run
        self._runs: dict[int, tuple[weakref.ref[RunContextWrapper[Any]], str | None]] = {}

    # ------------------------------------------------------------------ cursors
    def _start(self, wrapper: RunContextWrapper[Any] | None) -> str | None:
        """Where a run that has no position yet starts (``branch_for_run``, called on the caller's loop)."""
        if wrapper is None or self.branch_for_run is None:
            return None
        known = self._runs.get(id(wrapper))
        if known is not None and known[0]() is wrapper:
            return None
        return self.branch_for_run(wrapper)

    def _cursor(self, wrapper: RunContextWrapper[Any] | None, start: str | None) -> str | None:
        """Where a call works: the run's own position when runs choose their branch, else the leaf. Called
        inside the call's transaction, so no other writer moves it meanwhile."""
        if wrapper is None or self.branch_for_run is None:
            return self.manager.get_leaf_id()
        key = id(wrapper)
        known = self._runs.get(key)
        if known is not None and known[0]() is wrapper:
            return known[1]
        if start is not None and self.manager.get_entry(start) is None:
            raise SessionNotFoundError(f"Entry {start} not found")
        cursor = self.manager.get_leaf_id() if start is None else start
        runs = self._runs
        self._runs[key] = (weakref.ref(wrapper, lambda _ref: runs.pop(key, None)), cursor)
        return cursor

    def _advance(self, wrapper: RunContextWrapper[Any] | None, cursor: str | None) -> None:
        known = self._runs.get(id(wrapper)) if wrapper is not None else None
        if known is not None and known[0]() is wrapper:
            self._runs[id(wrapper)] = (known[0], cursor)

    async def _at_cursor(self, wrapper: RunContextWrapper[Any] | None, step: Callable[[str | None], R]) -> R:
        """``step(cursor)`` as one transaction under the session's lock, in a worker thread."""
        start = self._start(wrapper)
        return await self._core.run(lambda: step(self._cursor(wrapper, start)))

    # ------------------------------------------------------------------ the Session protocol
    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[Any]:
        """The items at the leaf, oldest first (the latest ``limit`` of them); after a compaction, its
        summary (a user message) and the kept items come first."""
        limit = resolve_session_limit(limit, self.session_settings)
        return await self._at_cursor(wrapper, lambda cursor: self._core.items(cursor, limit))

    async def add_items(self, items: list[Any], *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Append ``items`` at the leaf (one pi message per user item or tool result, one per reply)."""
        if not items:
            self._core.check_open()
            return
        batch = copy_json(list(items))
        usage = _reply_usage(wrapper)
        core = self._core

        def write(cursor: str | None) -> None:
            records = items_to_records(
                batch,
                timestamp=self.manager.clock(),
                model=self.model,
                usage=usage,
                tool_name=lambda call_id: core.tool_name(cursor, call_id),
            )
            self._advance(wrapper, core.append(cursor, records)[-1])

        await self._at_cursor(wrapper, write)

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> Any | None:
        """Move the leaf back past the latest item and return it (its entry stays in the tree)."""

        def pop(cursor: str | None) -> Any | None:
            new_cursor, item = self._core.pop(cursor)
            self._advance(wrapper, new_cursor)
            return item

        return await self._at_cursor(wrapper, pop)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Move the leaf to the root: the session reads as empty, the history stays in the tree."""

        def clear(cursor: str | None) -> None:
            self._advance(wrapper, self._core.move(cursor, None, "clear_session"))

        await self._at_cursor(wrapper, clear)

    async def run_compaction(
        self,
        args: OpenAIResponsesCompactionArgs | None = None,
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """The SDK's compaction hook: sessiontree's compaction, appended as a compaction entry.

        Called with no arguments or ``force``: compact now. As the Runner calls it after each turn: only when
        the context leaves less than ``reserve_tokens`` of ``context_window``. The items it replaces stay in
        the tree; the next ``get_items`` gives the summary and the kept items. Other writers wait while the
        summary is written.
        """
        force = args is None or bool(args.get("force"))
        core = self._core
        start = self._start(wrapper)
        async with core.lock.held():
            cursor = await core.in_worker(lambda: self._cursor(wrapper, start))
            entry = await core.compact_if_needed(cursor, self.context_window, force)
            if entry is not None:
                self._advance(wrapper, str(entry["id"]))

    # ------------------------------------------------------------------ the tree
    async def list_turns(self, *, wrapper: RunContextWrapper[Any] | None = None) -> list[tuple[str, str]]:
        """The user turns on the current branch, oldest first, as ``(entry_id, text)``."""
        return await self._at_cursor(wrapper, self._core.turns)

    async def branch_to_turn(
        self, entry_id: str, summarize: bool = False, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> str:
        """Move the leaf to just before the user turn ``entry_id``: the next run continues without it and
        everything after it (kept in the tree). With ``summarize``, a summary of the abandoned work is left
        there for the model. Returns the turn's text."""
        core = self._core
        start = self._start(wrapper)
        async with core.lock.held():
            cursor = await core.in_worker(lambda: self._cursor(wrapper, start))
            new_cursor, text = await core.branch_to_turn(cursor, entry_id, summarize)
            self._advance(wrapper, new_cursor)
        return text

    async def compact(self, *, wrapper: RunContextWrapper[Any] | None = None) -> dict[str, Any]:
        """Compact the branch now; returns the compaction entry (``CompactionError`` when nothing to do)."""
        core = self._core
        start = self._start(wrapper)
        async with core.lock.held():
            cursor = await core.in_worker(lambda: self._cursor(wrapper, start))
            entry = await core.compact(cursor)
            self._advance(wrapper, str(entry["id"]))
        return entry
