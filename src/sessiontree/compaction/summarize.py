"""Summary generation for compaction: the history summary, the split-turn prefix summary, and ``compact``.

Turns a ``CompactionPreparation`` into a ``CompactionResult`` through a ``Summarizer``; it never reads or
writes a session (``session_ops`` does that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..llm.convert import convert_to_llm
from ..llm.types import AbortSignal, ThinkingLevel
from .file_ops import compute_file_lists, format_file_operations
from .prepare import CompactionPreparation
from .prompts import (
    NO_PRIOR_HISTORY,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    build_summary_prompt,
    history_instructions,
    merge_split_turn,
)
from .serialize import serialize_conversation
from .summarizer import CompactionError, Summarizer, SummaryRequest, ask_summary

__all__ = [
    "CompactionResult",
    "compact",
    "generate_summary",
    "generate_turn_prefix_summary",
    "output_budget",
    "reasoning_for",
]

AgentMessage = dict[str, Any]

_THINKING_LEVELS = ("minimal", "low", "medium", "high", "xhigh")


@dataclass(slots=True)
class CompactionResult:
    """What a compaction entry stores: summary, first kept entry, tokens before, details, retained tail."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, list[str]] = field(default_factory=dict)
    retained_tail: list[AgentMessage] = field(default_factory=list)


def output_budget(reserve_tokens: int, share: float, model_max_tokens: int) -> int:
    """``floor(share × reserve_tokens)``, capped by the model's output limit when it has one."""
    budget = math.floor(share * reserve_tokens)
    return min(budget, model_max_tokens) if model_max_tokens > 0 else budget


def reasoning_for(summarizer: Summarizer, thinking_level: str | None) -> ThinkingLevel | None:
    """The session's thinking level, passed on only to reasoning models and only when it is not ``off``."""
    if not summarizer.supports_reasoning or thinking_level not in _THINKING_LEVELS:
        return None
    return thinking_level  # type: ignore[return-value]


def _conversation(messages: Sequence[AgentMessage]) -> str:
    return serialize_conversation(convert_to_llm(messages))


async def _ask(summarizer: Summarizer, request: SummaryRequest, failure_prefix: str) -> str:
    return await ask_summary(
        summarizer,
        request,
        CompactionError,
        aborted="Summarization aborted",
        failed=failure_prefix,
        unknown="Unknown error",
    )


async def generate_summary(
    messages: Sequence[AgentMessage],
    summarizer: Summarizer,
    reserve_tokens: int,
    *,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
    thinking_level: str | None = None,
    signal: AbortSignal | None = None,
) -> str:
    """Summarize history: the initial prompt, or the update prompt when a previous summary exists."""
    request = SummaryRequest(
        kind="history",
        messages=list(messages),
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=build_summary_prompt(
            _conversation(messages),
            history_instructions(previous_summary, custom_instructions),
            previous_summary,
        ),
        max_tokens=output_budget(reserve_tokens, 0.8, summarizer.max_output_tokens),
        previous_summary=previous_summary or None,
        custom_instructions=custom_instructions or None,
        reasoning=reasoning_for(summarizer, thinking_level),
        signal=signal,
    )
    return await _ask(summarizer, request, "Summarization failed")


async def generate_turn_prefix_summary(
    messages: Sequence[AgentMessage],
    summarizer: Summarizer,
    reserve_tokens: int,
    *,
    thinking_level: str | None = None,
    signal: AbortSignal | None = None,
) -> str:
    """Summarize the early part of a turn whose recent part is kept (no previous summary, no focus)."""
    request = SummaryRequest(
        kind="turn_prefix",
        messages=list(messages),
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=build_summary_prompt(_conversation(messages), TURN_PREFIX_SUMMARIZATION_PROMPT),
        max_tokens=output_budget(reserve_tokens, 0.5, summarizer.max_output_tokens),
        reasoning=reasoning_for(summarizer, thinking_level),
        signal=signal,
    )
    return await _ask(summarizer, request, "Turn prefix summarization failed")


def _first_error(group: BaseExceptionGroup[Any]) -> BaseException:
    """The first failure inside a task group's exception group (as ``Promise.all`` reports it)."""
    for error in group.exceptions:
        assert isinstance(error, BaseException)
        if isinstance(error, BaseExceptionGroup):
            return _first_error(error)
        return error
    return group


async def compact(
    preparation: CompactionPreparation,
    summarizer: Summarizer,
    *,
    custom_instructions: str | None = None,
    thinking_level: str | None = None,
    signal: AbortSignal | None = None,
) -> CompactionResult:
    """Produce the compaction summary for a preparation (pi's ``compact``).

    A split turn with a prefix runs the history and prefix requests concurrently and joins them; the file
    lists are appended. Unlike pi, a preparation with nothing to summarize is refused ("Nothing to compact")
    rather than turned into an empty summary. Failures raise ``CompactionError``.
    """
    if not preparation.first_kept_entry_id:
        raise CompactionError(
            "First kept entry has no id - session may need migration", kind="invalid_session"
        )
    if not preparation.has_content:
        raise CompactionError("Nothing to compact (session too small)", kind="nothing_to_compact")
    reserve = preparation.settings.reserve_tokens

    async def history() -> str:
        if not preparation.messages_to_summarize:
            return NO_PRIOR_HISTORY  # only reachable for a split turn: has_content holds otherwise
        return await generate_summary(
            preparation.messages_to_summarize,
            summarizer,
            reserve,
            custom_instructions=custom_instructions,
            previous_summary=preparation.previous_summary,
            thinking_level=thinking_level,
            signal=signal,
        )

    if preparation.is_split_turn and preparation.turn_prefix_messages:
        results: dict[str, str] = {}

        async def run(key: str, fn: Any) -> None:
            results[key] = await fn()

        async def prefix() -> str:
            return await generate_turn_prefix_summary(
                preparation.turn_prefix_messages,
                summarizer,
                reserve,
                thinking_level=thinking_level,
                signal=signal,
            )

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(run, "history", history)
                group.start_soon(run, "prefix", prefix)
        except BaseExceptionGroup as failure:
            raise _first_error(failure) from None
        summary = merge_split_turn(results["history"], results["prefix"])
    else:
        summary = await history()

    read_files, modified_files = compute_file_lists(preparation.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return CompactionResult(
        summary=summary,
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
        retained_tail=list(preparation.retained_tail),
    )
