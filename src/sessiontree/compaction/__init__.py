"""Compaction and branch summarization: condense old history into a summary, keep the recent part verbatim,
and summarize abandoned branches.

Public API of the package; the modules hold the pieces (cut points, preparation, prompts, summarizers,
compaction applied to a session). Nothing here talks to a provider except through a ``Summarizer``, and
nothing here moves the leaf: tree navigation lives in ``sessiontree.agent.navigation``.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
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
    from .resolve import MODEL_ENV, resolve_summarizer
    from .serialize import (
        serialize_conversation,
    )
    from .session_ops import (
        CompactableSession,
        CompactionPlan,
        apply_compaction,
        compact_if_needed,
        compact_session,
        plan_compaction,
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
        BranchSummaryError,
        CompactionError,
        LlmSummarizer,
        Summarizer,
        SummaryKind,
        SummaryRequest,
        reply_text,
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
    "BranchPreparation",
    "BranchSummaryError",
    "BranchSummaryResult",
    "BranchSummarySettings",
    "CompactableSession",
    "CompactionError",
    "CompactionPlan",
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
    "apply_compaction",
    "branch_entry_to_message",
    "branch_token_budget",
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
    "plan_compaction",
    "prepare_branch_entries",
    "prepare_compaction",
    "reply_text",
    "resolve_summarizer",
    "serialize_conversation",
    "should_compact",
    "summarize_offline",
]

export_lazily(
    __name__,
    {
        "BranchEntries": ".branch_collect",
        "BranchPreparation": ".branch_collect",
        "EntryLookup": ".branch_collect",
        "branch_entry_to_message": ".branch_collect",
        "branch_token_budget": ".branch_collect",
        "collect_entries_for_branch_summary": ".branch_collect",
        "prepare_branch_entries": ".branch_collect",
        "BRANCH_SUMMARY_MAX_TOKENS": ".branch_summary",
        "BranchSummaryResult": ".branch_summary",
        "generate_branch_summary": ".branch_summary",
        "CutPointResult": ".cut_points",
        "find_cut_point": ".cut_points",
        "find_turn_start_index": ".cut_points",
        "find_valid_cut_points": ".cut_points",
        "is_valid_cut_point": ".cut_points",
        "FileOperations": ".file_ops",
        "compute_file_lists": ".file_ops",
        "extract_file_ops_from_message": ".file_ops",
        "format_file_operations": ".file_ops",
        "OFFLINE_MODEL_ID": ".offline",
        "OfflineSummarizer": ".offline",
        "summarize_offline": ".offline",
        "CompactionPreparation": ".prepare",
        "compute_retained_tail": ".prepare",
        "entry_to_summary_message": ".prepare",
        "prepare_compaction": ".prepare",
        "BRANCH_SUMMARY_PREAMBLE": ".prompts",
        "BRANCH_SUMMARY_PROMPT": ".prompts",
        "NO_CONTENT_TO_SUMMARIZE": ".prompts",
        "NO_PRIOR_HISTORY": ".prompts",
        "SUMMARIZATION_PROMPT": ".prompts",
        "SUMMARIZATION_SYSTEM_PROMPT": ".prompts",
        "TURN_PREFIX_SUMMARIZATION_PROMPT": ".prompts",
        "UPDATE_SUMMARIZATION_PROMPT": ".prompts",
        "MODEL_ENV": ".resolve",
        "resolve_summarizer": ".resolve",
        "serialize_conversation": ".serialize",
        "CompactableSession": ".session_ops",
        "CompactionPlan": ".session_ops",
        "apply_compaction": ".session_ops",
        "compact_if_needed": ".session_ops",
        "compact_session": ".session_ops",
        "plan_compaction": ".session_ops",
        "DEFAULT_BRANCH_SUMMARY_SETTINGS": ".settings",
        "DEFAULT_COMPACTION_SETTINGS": ".settings",
        "BranchSummarySettings": ".settings",
        "CompactionSettings": ".settings",
        "should_compact": ".settings",
        "CompactionResult": ".summarize",
        "compact": ".summarize",
        "generate_summary": ".summarize",
        "generate_turn_prefix_summary": ".summarize",
        "BranchSummaryError": ".summarizer",
        "CompactionError": ".summarizer",
        "LlmSummarizer": ".summarizer",
        "Summarizer": ".summarizer",
        "SummaryKind": ".summarizer",
        "SummaryRequest": ".summarizer",
        "reply_text": ".summarizer",
    },
)
