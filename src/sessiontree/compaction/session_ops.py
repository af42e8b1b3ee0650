"""Compaction applied to a session: prepare on its path, summarize, append the compaction entry.

The only part of the package that writes, and only through the session's own append methods; it holds no
summarization logic of its own (``prepare`` and ``summarize`` do). ``compact_session`` and
``compact_if_needed`` stay in this package because they only summarize and append one entry; moving the
leaf and attaching branch summaries (tree navigation) belongs to ``sessiontree.agent.navigation``.
Both steps that touch the session (``plan_compaction``, ``apply_compaction``) are plain synchronous calls, so
an async runtime can run them through its own storage facade around the awaited summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sessiontree.format.pi_json import UNDEFINED
from sessiontree.tree.context import get_session_context_settings

from ..errors import SessionNotFoundError
from ..llm.tokens import estimate_context_tokens
from ..llm.types import AbortSignal
from .offline import OfflineSummarizer
from .prepare import CompactionPreparation, prepare_compaction
from .settings import DEFAULT_COMPACTION_SETTINGS, CompactionSettings, should_compact
from .summarize import CompactionResult, compact
from .summarizer import CompactionError, Summarizer

__all__ = [
    "CompactableSession",
    "CompactionPlan",
    "apply_compaction",
    "compact_if_needed",
    "compact_session",
    "plan_compaction",
    "session_path",
]

Entry = dict[str, Any]


class CompactableSession(Protocol):
    """The part of ``SessionManager`` these operations use."""

    def get_leaf_id(self) -> str | None: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def get_branch(self, from_id: str | None = None) -> list[Entry]: ...

    def branch(self, entry_id: str) -> None: ...

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: float,
        details: Any = ...,
        from_hook: Any = ...,
        *,
        retained_tail: Any = ...,
    ) -> str: ...


def session_path(session: CompactableSession, leaf_id: str | None = None) -> Sequence[Entry]:
    """The root-first path to ``leaf_id`` (default: the leaf), lazy when the session offers a path view."""
    view = getattr(session, "get_path_view", None)
    if callable(view):
        return view(leaf_id)  # type: ignore[no-any-return]
    return session.get_branch(leaf_id)


@dataclass(slots=True)
class CompactionPlan:
    """A compaction ready to summarize: its preparation, the path it was made on, the thinking level there."""

    preparation: CompactionPreparation
    path: Sequence[Entry]
    thinking_level: str | None
    leaf_id: str | None = None


def plan_compaction(
    session: CompactableSession,
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    *,
    leaf_id: str | None = None,
) -> CompactionPlan:
    """Prepare a compaction of the branch ending at ``leaf_id`` (default: the leaf); nothing is written.

    Raises ``CompactionError`` (``already_compacted``, ``nothing_to_compact``, ``invalid_session``) and
    ``SessionNotFoundError`` for an unknown ``leaf_id``.
    """
    if leaf_id is not None and session.get_entry(leaf_id) is None:
        raise SessionNotFoundError(f"Entry {leaf_id} not found")
    path = session_path(session, leaf_id)
    if len(path) == 0:
        raise CompactionError("Nothing to compact (session too small)", kind="nothing_to_compact")
    if path[len(path) - 1].get("type") == "compaction":
        raise CompactionError("Already compacted", kind="already_compacted")
    preparation = prepare_compaction(path, settings)
    if preparation is None:
        raise CompactionError(
            "First kept entry has no id - session may need migration", kind="invalid_session"
        )
    if not preparation.has_content:
        raise CompactionError("Nothing to compact (session too small)", kind="nothing_to_compact")
    level = get_session_context_settings(path).thinking_level
    return CompactionPlan(preparation, path, level if isinstance(level, str) else None, leaf_id)


def apply_compaction(
    session: CompactableSession,
    result: CompactionResult,
    *,
    leaf_id: str | None = None,
    from_hook: Any = UNDEFINED,
    retained_tail: Any = None,
) -> Entry:
    """Append ``result`` as a compaction entry at ``leaf_id`` (default: the leaf) and return it as stored.

    ``retained_tail`` defaults to the result's kept messages; ``None`` in both lets the session compute it.
    """
    if leaf_id is not None and leaf_id != session.get_leaf_id():
        session.branch(leaf_id)
    tail = retained_tail if retained_tail is not None else (result.retained_tail or None)
    entry_id = session.append_compaction(
        result.summary,
        result.first_kept_entry_id,
        result.tokens_before,
        result.details,
        from_hook,
        retained_tail=tail,
    )
    entry = session.get_entry(entry_id)
    assert entry is not None
    return entry


async def compact_session(
    session: CompactableSession,
    summarizer: Summarizer | None = None,
    *,
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    leaf_id: str | None = None,
    custom_instructions: str | None = None,
    thinking_level: str | None = None,
    signal: AbortSignal | None = None,
) -> Entry:
    """Compact the branch ending at ``leaf_id`` (default: the leaf) and append the compaction entry there.

    Without a summarizer the offline summarizer writes the summary. The thinking level defaults to the
    branch's. The entry carries ``firstKeptEntryId`` and ``retainedTail``; it is returned as stored.
    Raises ``CompactionError`` (``already_compacted``, ``nothing_to_compact``, ``summarization_failed``,
    ``aborted``, ``invalid_session``) and leaves the session untouched when it does.
    """
    plan = plan_compaction(session, settings, leaf_id=leaf_id)
    result = await compact(
        plan.preparation,
        summarizer or OfflineSummarizer(),
        custom_instructions=custom_instructions,
        thinking_level=thinking_level if thinking_level is not None else plan.thinking_level,
        signal=signal,
    )
    if signal is not None and signal.aborted:
        raise CompactionError("Compaction cancelled", kind="aborted")
    return apply_compaction(session, result, leaf_id=leaf_id)


async def compact_if_needed(
    session: CompactableSession,
    summarizer: Summarizer | None = None,
    *,
    context_window: int,
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    context_tokens: int | None = None,
    thinking_level: str | None = None,
    signal: AbortSignal | None = None,
) -> Entry | None:
    """For an agent runtime after a reply: compact when the context no longer leaves ``reserve_tokens``.

    ``context_tokens`` defaults to the estimate of the rebuilt context (last usage + trailing estimates).
    Returns the compaction entry, or None when compaction is off, not needed, or there is nothing to compact.
    """
    if not settings.enabled:
        return None
    if context_tokens is None:
        build = getattr(session, "build_session_context", None)
        if not callable(build):
            raise TypeError("session has no build_session_context(); pass context_tokens")
        context_tokens = estimate_context_tokens(build().messages).tokens
    if not should_compact(context_tokens, context_window, settings):
        return None
    try:
        return await compact_session(
            session, summarizer, settings=settings, thinking_level=thinking_level, signal=signal
        )
    except CompactionError as error:
        if error.kind in ("nothing_to_compact", "already_compacted"):
            return None
        raise
