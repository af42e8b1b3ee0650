"""Compaction and branch summarization: condense old history into a summary, keep the recent part verbatim,
and leave a summary of abandoned branches behind.

Public API of the package; the modules hold the pieces (cut points, preparation, prompts, summarizers,
session operations). Nothing here talks to a provider except through a ``Summarizer``.
"""

from __future__ import annotations

from .branch_collect import (
    BranchEntries,
    BranchPreparation,
    EntryLookup,
    branch_entry_to_message,
    branch_token_budget,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from .branch_summary import (
    BRANCH_SUMMARY_MAX_TOKENS,
    BranchSummaryResult,
    generate_branch_summary,
)
from .cut_points import (
    CutPointResult,
    find_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    is_valid_cut_point,
)
from .file_ops import (
    FileOperations,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
)
from .offline import (
    OFFLINE_MODEL_ID,
    OfflineSummarizer,
    summarize_offline,
)
from .prepare import (
    CompactionPreparation,
    compute_retained_tail,
    entry_to_summary_message,
    prepare_compaction,
)
from .prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    NO_CONTENT_TO_SUMMARIZE,
    NO_PRIOR_HISTORY,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from .serialize import (
    serialize_conversation,
)
from .session_ops import (
    BranchMove,
    CompactableSession,
    branch_to,
    check_compactable,
    compact_if_needed,
    compact_session,
)
from .settings import (
    DEFAULT_BRANCH_SUMMARY_SETTINGS,
    DEFAULT_COMPACTION_SETTINGS,
    BranchSummarySettings,
    CompactionSettings,
    should_compact,
)
from .summarize import (
    CompactionResult,
    compact,
    generate_summary,
    generate_turn_prefix_summary,
)
from .summarizer import (
    MODEL_ENV,
    BranchSummaryError,
    CompactionError,
    LlmSummarizer,
    Summarizer,
    SummaryKind,
    SummaryRequest,
    reply_text,
    resolve_summarizer,
)

__all__ = [
    "BRANCH_SUMMARY_MAX_TOKENS",
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PROMPT",
    "DEFAULT_BRANCH_SUMMARY_SETTINGS",
    "DEFAULT_COMPACTION_SETTINGS",
    "MODEL_ENV",
    "NO_CONTENT_TO_SUMMARIZE",
    "NO_PRIOR_HISTORY",
    "OFFLINE_MODEL_ID",
    "SUMMARIZATION_PROMPT",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TURN_PREFIX_SUMMARIZATION_PROMPT",
    "UPDATE_SUMMARIZATION_PROMPT",
    "BranchEntries",
    "BranchMove",
    "BranchPreparation",
    "BranchSummaryError",
    "BranchSummaryResult",
    "BranchSummarySettings",
    "CompactableSession",
    "CompactionError",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CutPointResult",
    "EntryLookup",
    "FileOperations",
    "LlmSummarizer",
    "OfflineSummarizer",
    "Summarizer",
    "SummaryKind",
    "SummaryRequest",
    "branch_entry_to_message",
    "branch_to",
    "branch_token_budget",
    "check_compactable",
    "collect_entries_for_branch_summary",
    "compact",
    "compact_if_needed",
    "compact_session",
    "compute_file_lists",
    "compute_retained_tail",
    "entry_to_summary_message",
    "extract_file_ops_from_message",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "format_file_operations",
    "generate_branch_summary",
    "generate_summary",
    "generate_turn_prefix_summary",
    "is_valid_cut_point",
    "prepare_branch_entries",
    "prepare_compaction",
    "reply_text",
    "resolve_summarizer",
    "serialize_conversation",
    "should_compact",
    "summarize_offline",
]
