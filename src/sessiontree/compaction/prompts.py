"""The English texts of summary requests: system prompt, instructions, wrappers and fixed strings.

Constants and the small functions that assemble a request's text; no model calls, no message handling.
The compaction texts are pi's (SPEC B§7.6); the branch-summary instructions ask for the sections of the
design articles (SPEC A2).
"""

from __future__ import annotations

__all__ = [
    "ADDITIONAL_FOCUS_PREFIX",
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PROMPT",
    "NO_CONTENT_TO_SUMMARIZE",
    "NO_PRIOR_HISTORY",
    "SPLIT_TURN_HEADING",
    "SUMMARIZATION_PROMPT",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TURN_PREFIX_SUMMARIZATION_PROMPT",
    "UPDATE_SUMMARIZATION_PROMPT",
    "branch_instructions",
    "build_summary_prompt",
    "history_instructions",
    "merge_split_turn",
]

SUMMARIZATION_SYSTEM_PROMPT = (
    "You are a context summarization assistant. Your task is to read a conversation between a user and an "
    "AI coding assistant, then produce a structured summary following the exact format specified.\n\n"
    "Do NOT continue the conversation. Do NOT respond to any questions in the conversation. "
    "ONLY output the structured summary."
)

SUMMARIZATION_PROMPT = """The messages above are a conversation to summarize. Create a structured context \
checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by the user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

UPDATE_SUMMARIZATION_PROMPT = """The messages above are NEW conversation messages to incorporate into the \
existing summary provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

TURN_PREFIX_SUMMARIZATION_PROMPT = """This is the PREFIX of a turn that was too large to keep. The SUFFIX \
(recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix."""

BRANCH_SUMMARY_PROMPT = """Create a structured summary of this conversation branch. The user abandoned it \
and went back to an earlier point; the summary tells the continuing conversation what this exploration \
found, for reference.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Progress
- [x] [What was done in this branch]
- [ ] [What was started but not finished]

## Key Learnings
- [Facts discovered, approaches that worked or failed, errors met and their causes]

## Why Abandoned
[Why this branch was left: a dead end, a failed approach, a change of plan. Say "(unclear)" if the \
conversation does not show it.]

Keep each section concise. Preserve exact file paths, function names, and error messages. The files read \
and modified in this branch are listed after your summary automatically."""

BRANCH_SUMMARY_PREAMBLE = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"

NO_PRIOR_HISTORY = "No prior history."
SPLIT_TURN_HEADING = "**Turn Context (split turn):**"
ADDITIONAL_FOCUS_PREFIX = "Additional focus: "
NO_CONTENT_TO_SUMMARIZE = "No content to summarize"


def history_instructions(previous_summary: str | None, custom_instructions: str | None) -> str:
    """The initial or the iterative-update instructions, with the custom focus appended when given."""
    base = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        base = f"{base}\n\n{ADDITIONAL_FOCUS_PREFIX}{custom_instructions}"
    return base


def branch_instructions(custom_instructions: str | None, replace_instructions: bool) -> str:
    """Branch-summary instructions: custom text replaces them, or is appended as additional focus."""
    if custom_instructions and replace_instructions:
        return custom_instructions
    if custom_instructions:
        return f"{BRANCH_SUMMARY_PROMPT}\n\n{ADDITIONAL_FOCUS_PREFIX}{custom_instructions}"
    return BRANCH_SUMMARY_PROMPT


def build_summary_prompt(conversation: str, instructions: str, previous_summary: str | None = None) -> str:
    """The user text of a summary request: ``<conversation>``, optional ``<previous-summary>``, instructions."""
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + instructions


def merge_split_turn(history_summary: str, turn_prefix_summary: str) -> str:
    """One summary from the history part and the split turn's prefix part."""
    return f"{history_summary}\n\n---\n\n{SPLIT_TURN_HEADING}\n\n{turn_prefix_summary}"
