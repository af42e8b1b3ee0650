"""Tree navigation as pi's ``/tree`` does it: move the leaf to an entry, optionally leaving a summary of the
abandoned branch at the new position (``branch_to``), split into a read step, the summary and a write step.

It writes only through the session's own methods (``branch``, ``reset_leaf``, ``branch_with_summary``) and
summarizes only through ``sessiontree.compaction``; it keeps no state. ``plan_navigation`` and
``apply_navigation`` are synchronous so the harness can run them through its storage facade around the
awaited summary; ``branch_to`` composes the three for synchronous callers such as the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sessiontree.format.pi_json import UNDEFINED
from sessiontree.session.manager import SessionManager

from ..compaction.branch_collect import collect_entries_for_branch_summary
from ..compaction.branch_summary import BranchSummaryResult, generate_branch_summary
from ..compaction.offline import OfflineSummarizer
from ..compaction.prompts import NO_CONTENT_TO_SUMMARIZE
from ..compaction.settings import DEFAULT_BRANCH_SUMMARY_SETTINGS, BranchSummarySettings
from ..compaction.summarizer import Summarizer
from ..errors import SessionError, SessionNotFoundError
from ..llm.types import AbortSignal

__all__ = [
    "BranchMove",
    "ForkResult",
    "NavigableSession",
    "NavigationPlan",
    "apply_navigation",
    "branch_to",
    "clone_session",
    "editor_text_of",
    "fork_session",
    "plan_navigation",
    "summarize_abandoned",
]

Entry = dict[str, Any]


class NavigableSession(Protocol):
    """The part of ``SessionManager`` navigation uses."""

    def get_leaf_id(self) -> str | None: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def branch(self, entry_id: str) -> None: ...

    def reset_leaf(self) -> None: ...

    def branch_with_summary(
        self, branch_from_id: str | None, summary: str, details: Any = ..., from_hook: Any = ...
    ) -> str: ...


@dataclass(slots=True)
class BranchMove:
    """What a navigation did: the old and new leaf, the text for the editor, the summary entry if any."""

    old_leaf_id: str | None
    new_leaf_id: str | None
    editor_text: str | None = None
    summary_entry: Entry | None = None
    entries_abandoned: int = 0
    cancelled: bool = False


@dataclass(slots=True)
class NavigationPlan:
    """A navigation read from the session before anything is written (pi's ``TreePreparation``).

    ``entries`` are the abandoned entries (chronological) a summary would cover; ``no_op`` is set when the
    target is the current leaf.
    """

    target_id: str
    old_leaf_id: str | None
    new_leaf_id: str | None
    editor_text: str | None
    entries: list[Entry] = field(default_factory=list)
    common_ancestor_id: str | None = None
    no_op: bool = False


def editor_text_of(content: Any) -> str:
    """The text a user or custom message gives back to the editor: the string, or its text blocks joined."""
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
        return target.get("parentId"), editor_text_of(message.get("content"))
    if kind == "custom_message":
        return target.get("parentId"), editor_text_of(target.get("content"))
    return target.get("id"), None


def plan_navigation(session: NavigableSession, target_id: str) -> NavigationPlan:
    """Where navigating to ``target_id`` puts the leaf and which entries it abandons (raises for an unknown id)."""
    old_leaf = session.get_leaf_id()
    if target_id == old_leaf:
        return NavigationPlan(target_id, old_leaf, old_leaf, None, no_op=True)
    target = session.get_entry(target_id)
    if target is None:
        raise SessionNotFoundError(f"Entry {target_id} not found")
    new_leaf, editor_text = _new_leaf(target)
    collected = collect_entries_for_branch_summary(session, old_leaf, target_id)
    return NavigationPlan(
        target_id, old_leaf, new_leaf, editor_text, collected.entries, collected.common_ancestor_id
    )


async def summarize_abandoned(
    plan: NavigationPlan,
    summarizer: Summarizer | None = None,
    *,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    settings: BranchSummarySettings = DEFAULT_BRANCH_SUMMARY_SETTINGS,
    signal: AbortSignal | None = None,
) -> BranchSummaryResult | None:
    """The branch summary of the plan's abandoned entries (offline unless a summarizer is given), or None when
    there is nothing to summarize. Failures raise ``BranchSummaryError``."""
    if not plan.entries:
        return None
    result = await generate_branch_summary(
        plan.entries,
        summarizer or OfflineSummarizer(),
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        reserve_tokens=settings.reserve_tokens,
        signal=signal,
    )
    return None if result.summary == NO_CONTENT_TO_SUMMARIZE else result


def apply_navigation(
    session: NavigableSession,
    plan: NavigationPlan,
    summary: str | None = None,
    details: Any = UNDEFINED,
    from_hook: Any = UNDEFINED,
) -> BranchMove:
    """Move the leaf as planned; with a summary, attach it as a branch summary at the new position.

    Without a summary nothing is written (pi's format does not record a bare leaf move unless the session
    writes ``leaf`` entries).
    """
    abandoned = len(plan.entries)
    if plan.no_op:
        return BranchMove(plan.old_leaf_id, plan.old_leaf_id)
    summary_entry: Entry | None = None
    if summary:
        entry_id = session.branch_with_summary(plan.new_leaf_id, summary, details, from_hook)
        summary_entry = session.get_entry(entry_id)
    elif plan.new_leaf_id is None:
        session.reset_leaf()
    else:
        session.branch(plan.new_leaf_id)
    return BranchMove(plan.old_leaf_id, plan.new_leaf_id, plan.editor_text, summary_entry, abandoned)


async def branch_to(
    session: NavigableSession,
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
    Nothing is written when there is nothing to summarize or no summary was asked for.
    """
    plan = plan_navigation(session, target_id)
    result: BranchSummaryResult | None = None
    if summarize and not plan.no_op:
        result = await summarize_abandoned(
            plan,
            summarizer,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            settings=settings,
            signal=signal,
        )
    if result is None:
        return apply_navigation(session, plan)
    return apply_navigation(session, plan, result.summary, result.details)


@dataclass(slots=True)
class ForkResult:
    """A fork: the text of the user message it was made before (for the editor) and the new session file."""

    selected_text: str
    session_file: str | None


def fork_session(manager: SessionManager, entry_id: str) -> ForkResult:
    """pi's ``/fork``: continue in a new session holding the path up to (not including) the user message
    ``entry_id``; a fork before the first message is an empty session whose parent is this one."""
    entry = manager.get_entry(entry_id)
    message = entry.get("message") if entry is not None else None
    if entry is None or entry.get("type") != "message" or not isinstance(message, dict):
        raise SessionError("Invalid entry ID for forking", kind="invalid_argument")
    if message.get("role") != "user":
        raise SessionError("Invalid entry ID for forking", kind="invalid_argument")
    text = editor_text_of(message.get("content"))
    parent = entry.get("parentId")
    if isinstance(parent, str):
        return ForkResult(text, manager.create_branched_session(parent))
    return ForkResult(text, manager.new_session(parent_session=manager.get_session_file()))


def clone_session(manager: SessionManager) -> str | None:
    """pi's ``/clone``: continue in a new session holding the current path, leaf included."""
    leaf = manager.get_leaf_id()
    if leaf is None:
        raise SessionError("Nothing to clone yet", kind="invalid_state")
    return manager.create_branched_session(leaf)
