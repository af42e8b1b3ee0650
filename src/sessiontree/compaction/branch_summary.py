"""Branch summary generation: what an abandoned branch taught, as text for the branch it returns to.

Summarizes collected entries through a ``Summarizer`` (B§8.4 with the design articles' sections); it never
moves the leaf or writes entries (``sessiontree.agent.navigation`` does that).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..llm.convert import convert_to_llm
from ..llm.types import AbortSignal
from .branch_collect import branch_token_budget, prepare_branch_entries
from .file_ops import compute_file_lists, format_file_operations
from .prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    NO_CONTENT_TO_SUMMARIZE,
    SUMMARIZATION_SYSTEM_PROMPT,
    branch_instructions,
    build_summary_prompt,
)
from .serialize import serialize_conversation
from .settings import DEFAULT_BRANCH_SUMMARY_SETTINGS
from .summarizer import BranchSummaryError, Summarizer, SummaryRequest, ask_summary

__all__ = ["BRANCH_SUMMARY_MAX_TOKENS", "BranchSummaryResult", "generate_branch_summary"]

BRANCH_SUMMARY_MAX_TOKENS = 2048
"""Output budget of a branch summary (pi's constant)."""

Entry = dict[str, Any]


@dataclass(slots=True)
class BranchSummaryResult:
    """The summary text (preamble + reply + file lists) and the file lists stored as ``details``."""

    summary: str
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)

    @property
    def details(self) -> dict[str, list[str]]:
        """``{readFiles, modifiedFiles}``: the ``details`` of the branch_summary entry."""
        return {"readFiles": self.read_files, "modifiedFiles": self.modified_files}


async def generate_branch_summary(
    entries: Sequence[Entry],
    summarizer: Summarizer,
    *,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    reserve_tokens: int = DEFAULT_BRANCH_SUMMARY_SETTINGS.reserve_tokens,
    signal: AbortSignal | None = None,
) -> BranchSummaryResult:
    """Summarize abandoned entries (chronological), newest first under ``(context window) - reserve``.

    No messages gives "No content to summarize" and no request. Failures raise ``BranchSummaryError``.
    """
    budget = branch_token_budget(summarizer.context_window, reserve_tokens)
    prepared = prepare_branch_entries(entries, budget)
    if not prepared.messages:
        return BranchSummaryResult(NO_CONTENT_TO_SUMMARIZE)
    conversation = serialize_conversation(convert_to_llm(prepared.messages))
    request = SummaryRequest(
        kind="branch",
        messages=prepared.messages,
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=build_summary_prompt(
            conversation, branch_instructions(custom_instructions, replace_instructions)
        ),
        max_tokens=BRANCH_SUMMARY_MAX_TOKENS,
        custom_instructions=custom_instructions or None,
        signal=signal,
    )
    text = await ask_summary(
        summarizer,
        request,
        BranchSummaryError,
        aborted="Branch summarization aborted",
        failed="Branch summarization failed",
        unknown="Summarization failed",
    )
    read_files, modified_files = compute_file_lists(prepared.file_ops)
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read_files, modified_files)
    return BranchSummaryResult(summary, read_files, modified_files)
