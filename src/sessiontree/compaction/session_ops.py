"""Compaction and branch summaries applied to a session: prepare on its path, summarize, append the entry.

The only part of the package that writes, and only through the session's own append methods; it holds no
summarization logic of its own (``prepare``, ``summarize``, ``branch_summary`` do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..context import get_session_context_settings
from ..errors import SessionNotFoundError
from ..llm.tokens import estimate_context_tokens
from ..llm.types import AbortSignal
from .branch_collect import collect_entries_for_branch_summary
from .branch_summary import generate_branch_summary
from .offline import OfflineSummarizer
from .prepare import CompactionPreparation, prepare_compaction
from .prompts import NO_CONTENT_TO_SUMMARIZE
from .settings import (
    DEFAULT_BRANCH_SUMMARY_SETTINGS,
    DEFAULT_COMPACTION_SETTINGS,
    BranchSummarySettings,
    CompactionSettings,
    should_compact,
)
from .summarize import compact
from .summarizer import CompactionError, Summarizer

__all__ = [
    "BranchMove",
    "CompactableSession",
    "branch_to",
    "check_compactable",
    "compact_if_needed",
    "compact_session",
]

Entry = dict[str, Any]


class CompactableSession(Protocol):
    """The part of ``SessionManager`` these operations use."""

    def get_leaf_id(self) -> str | None: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def get_branch(self, from_id: str | None = None) -> list[Entry]: ...

    def branch(self, entry_id: str) -> None: ...

    def reset_leaf(self) -> None: ...

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

    def branch_with_summary(
        self, branch_from_id: str | None, summary: str, details: Any = ..., from_hook: Any = ...
    ) -> str: ...


def _path(session: CompactableSession, leaf_id: str | None) -> Sequence[Entry]:
    view = getattr(session, "get_path_view", None)
    if callable(view):
        return view(leaf_id)  # type: ignore[no-any-return]
    return session.get_branch(leaf_id)


def _prepare(
    session: CompactableSession, leaf_id: str | None, settings: CompactionSettings
) -> tuple[Sequence[Entry], CompactionPreparation]:
    if leaf_id is not None and session.get_entry(leaf_id) is None:
        raise SessionNotFoundError(f"Entry {leaf_id} not found")
    path = _path(session, leaf_id)
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
    return path, preparation


def check_compactable(
    session: CompactableSession,
    *,
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    leaf_id: str | None = None,
) -> CompactionPreparation:
    """What ``compact_session`` would summarize, without summarizing or writing (a read-only session will
    do); raises the ``CompactionError`` that ``compact_session`` would raise before its model call."""
    return _prepare(session, leaf_id, settings)[1]


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
    path, preparation = _prepare(session, leaf_id, settings)
    level = (
        thinking_level if thinking_level is not None else get_session_context_settings(path).thinking_level
    )
    result = await compact(
        preparation,
        summarizer or OfflineSummarizer(),
        custom_instructions=custom_instructions,
        thinking_level=level if isinstance(level, str) else None,
        signal=signal,
    )
    if signal is not None and signal.aborted:
        raise CompactionError("Compaction cancelled", kind="aborted")
    if leaf_id is not None and leaf_id != session.get_leaf_id():
        session.branch(leaf_id)
    entry_id = session.append_compaction(
        result.summary,
        result.first_kept_entry_id,
        result.tokens_before,
        result.details,
        retained_tail=result.retained_tail,
    )
    entry = session.get_entry(entry_id)
    assert entry is not None
    return entry


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


@dataclass(slots=True)
class BranchMove:
    """What ``branch_to`` did: the old and new leaf, the text for the editor, the summary entry if any."""

    old_leaf_id: str | None
    new_leaf_id: str | None
    editor_text: str | None = None
    summary_entry: Entry | None = None
    entries_abandoned: int = 0


def _editor_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [
        b.get("text", "")
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "".join(parts)


def _new_leaf(target: Entry) -> tuple[str | None, str | None]:
    """Where the leaf goes for a target: before a user or custom message (its text returns to the editor),
    else onto the target itself."""
    kind = target.get("type")
    message = target.get("message")
    if kind == "message" and isinstance(message, dict) and message.get("role") == "user":
        return target.get("parentId"), _editor_text(message.get("content"))
    if kind == "custom_message":
        return target.get("parentId"), _editor_text(target.get("content"))
    return target.get("id"), None


async def branch_to(
    session: CompactableSession,
    target_id: str,
    *,
    summarize: bool = False,
    summarizer: Summarizer | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    settings: BranchSummarySettings = DEFAULT_BRANCH_SUMMARY_SETTINGS,
    signal: AbortSignal | None = None,
) -> BranchMove:
    """Move to ``target_id`` as pi's tree navigation does, optionally leaving a summary of the abandoned work.

    Selecting a user (or custom) message puts the leaf on its parent and returns its text for re-editing.
    With ``summarize``, the entries from the old leaf back to the common ancestor are summarized (offline
    unless a summarizer is given) and attached at the new position; ``fromId`` records the abandoned leaf.
    Nothing is written when there is nothing to summarize or no summary was asked for (pi's format does not
    record a bare leaf move).
    """
    old_leaf = session.get_leaf_id()
    if target_id == old_leaf:
        return BranchMove(old_leaf, old_leaf)
    target = session.get_entry(target_id)
    if target is None:
        raise SessionNotFoundError(f"Entry {target_id} not found")
    new_leaf, editor_text = _new_leaf(target)
    collected = collect_entries_for_branch_summary(session, old_leaf, target_id)
    summary_entry: Entry | None = None
    if summarize and collected.entries:
        result = await generate_branch_summary(
            collected.entries,
            summarizer or OfflineSummarizer(),
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            reserve_tokens=settings.reserve_tokens,
            signal=signal,
        )
        if result.summary != NO_CONTENT_TO_SUMMARIZE:
            entry_id = session.branch_with_summary(new_leaf, result.summary, result.details)
            summary_entry = session.get_entry(entry_id)
    if summary_entry is None:
        if new_leaf is None:
            session.reset_leaf()
        else:
            session.branch(new_leaf)
    return BranchMove(old_leaf, new_leaf, editor_text, summary_entry, len(collected.entries))
