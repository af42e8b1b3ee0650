"""When the harness compacts by itself (pi's ``_checkCompaction``, SPEC B§7.8 and B§17.3), and running one
compaction through the session facade with its hook and events.

``check_compaction`` is pure: it reads the last reply, the model and the context and says what to do.
``Compactor`` performs a compaction (manual or automatic) and reports it; it never decides to retry a run
(the harness does, on the decision's ``will_retry``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sessiontree.format.pi_json import UNDEFINED

from ..compaction import (
    CompactionError,
    CompactionResult,
    CompactionSettings,
    Summarizer,
    apply_compaction,
    compact,
    plan_compaction,
    should_compact,
)
from ..llm.overflow import is_context_overflow
from ..llm.tokens import calculate_context_tokens, estimate_context_tokens
from ..llm.types import AbortSignal, Model
from . import events as ev
from .bus import EventBus
from .session import AsyncSession

__all__ = [
    "OVERFLOW_RECOVERY_FAILED",
    "CompactionCheck",
    "Compactor",
    "check_compaction",
    "latest_compaction_ms",
]

AgentMessage = dict[str, Any]
Entry = dict[str, Any]
Reason = Literal["manual", "threshold", "overflow"]

OVERFLOW_RECOVERY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


@dataclass(frozen=True, slots=True)
class CompactionCheck:
    """What to do after a reply: ``compact`` (for ``reason``; ``will_retry`` re-sends the turn) or ``give_up``
    (a second overflow in one prompt)."""

    action: Literal["compact", "give_up"]
    reason: Reason
    will_retry: bool = False


def latest_compaction_ms(messages: Sequence[AgentMessage]) -> int | None:
    """Time of the latest compaction on the path: a context built after one starts with its summary."""
    if messages and messages[0].get("role") == "compactionSummary":
        stamp = messages[0].get("timestamp")
        return stamp if isinstance(stamp, int) else None
    return None


def _older(message: AgentMessage, compacted_at: int | None) -> bool:
    stamp = message.get("timestamp")
    return compacted_at is not None and isinstance(stamp, (int, float)) and stamp <= compacted_at


def _estimated_tokens(messages: Sequence[AgentMessage], compacted_at: int | None) -> int | None:
    """Tokens from the last valid usage plus estimates after it; None without one, or when that usage
    predates the latest compaction (a kept pre-compaction reply whose usage is stale)."""
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is None:
        return None
    if _older(messages[estimate.last_usage_index], compacted_at):
        return None
    return estimate.tokens


def check_compaction(
    message: AgentMessage,
    *,
    model: Model,
    settings: CompactionSettings,
    context_messages: Sequence[AgentMessage],
    overflow_attempted: bool,
    skip_aborted: bool = True,
    fresh: bool = False,
) -> CompactionCheck | None:
    """Whether the reply ``message`` calls for an automatic compaction (None: it does not).

    ``fresh`` marks the reply of the run that just finished: it is never older than the latest compaction,
    whatever the clock says (a compaction and a reply can share a millisecond).
    """
    if not settings.enabled or message.get("role") != "assistant":
        return None
    stop = message.get("stopReason")
    if skip_aborted and stop == "aborted":
        return None
    compacted_at = latest_compaction_ms(context_messages)
    if not fresh and _older(message, compacted_at):
        return None  # a reply from before the latest compaction says nothing about the context now
    window = model.context_window
    same_model = message.get("provider") == model.provider and message.get("model") == model.id
    if same_model and is_context_overflow(message, window):
        if stop == "stop":
            return CompactionCheck("compact", "overflow")  # it fit, barely: compact, no retry
        if overflow_attempted:
            return CompactionCheck("give_up", "overflow")
        return CompactionCheck("compact", "overflow", will_retry=True)
    tokens: int | None
    if stop == "error":
        tokens = _estimated_tokens(context_messages, compacted_at)
    else:
        usage = message.get("usage")
        tokens = calculate_context_tokens(usage) if isinstance(usage, dict) else 0
        if not tokens:
            tokens = _estimated_tokens(context_messages, compacted_at)
    if tokens is None or not should_compact(tokens, window, settings):
        return None
    return CompactionCheck("compact", "threshold")


def _hook_result(provided: dict[str, Any]) -> CompactionResult:
    return CompactionResult(
        summary=str(provided["summary"]),
        first_kept_entry_id=str(provided["firstKeptEntryId"]),
        tokens_before=int(provided.get("tokensBefore", 0)),
        details=provided.get("details") or {},
    )


class Compactor:
    """Runs one compaction: plan on the session's path, the ``session_before_compact`` hook, the summary, the
    entry; then ``session_compact``. Manual and automatic compactions share it."""

    __slots__ = ("bus", "session", "settings", "summarizer")

    def __init__(
        self, session: AsyncSession, bus: EventBus, summarizer: Summarizer, settings: CompactionSettings
    ) -> None:
        self.session = session
        self.bus = bus
        self.summarizer = summarizer
        self.settings = settings

    async def compact(
        self,
        *,
        custom_instructions: str | None = None,
        thinking_level: str | None = None,
        signal: AbortSignal | None = None,
    ) -> Entry:
        """Compact the leaf's branch and return the compaction entry; raises ``CompactionError``."""
        plan = await self.session.run(plan_compaction, self.settings)
        answer = None
        if self.bus.handles("session_before_compact"):
            answer = await self.bus.hook(
                {
                    "type": "session_before_compact",
                    "preparation": plan.preparation,
                    "branchEntries": [plan.path[i] for i in range(len(plan.path))],
                    "customInstructions": custom_instructions,
                    "signal": signal,
                }
            )
        if isinstance(answer, dict) and answer.get("cancel"):
            raise CompactionError("Compaction cancelled", kind="aborted")
        provided = answer.get("compaction") if isinstance(answer, dict) else None
        if isinstance(provided, dict):
            entry = await self.session.run(apply_compaction, _hook_result(provided), from_hook=True)
        else:
            result = await compact(
                plan.preparation,
                self.summarizer,
                custom_instructions=custom_instructions,
                thinking_level=thinking_level if thinking_level is not None else plan.thinking_level,
                signal=signal,
            )
            if signal is not None and signal.aborted:
                raise CompactionError("Compaction cancelled", kind="aborted")
            entry = await self.session.run(apply_compaction, result, from_hook=UNDEFINED)
        await self.bus.emit(
            {"type": "session_compact", "compactionEntry": entry, "fromHook": isinstance(provided, dict)}
        )
        return entry

    async def run_automatic(
        self, check: CompactionCheck, thinking_level: str | None, signal: AbortSignal | None = None
    ) -> Entry | None:
        """An automatic compaction with its events; failures are reported in ``compaction_end``, not raised."""
        if check.action == "give_up":
            await self.bus.emit(ev.compaction_end(check.reason, error_message=OVERFLOW_RECOVERY_FAILED))
            return None
        await self.bus.emit(ev.compaction_start(check.reason))
        try:
            entry = await self.compact(thinking_level=thinking_level, signal=signal)
        except Exception as error:
            kind = getattr(error, "kind", "")
            aborted = kind == "aborted"
            quiet = kind in ("nothing_to_compact", "already_compacted")
            prefix = (
                "Context overflow recovery failed" if check.reason == "overflow" else "Auto-compaction failed"
            )
            message = None if aborted or (quiet and check.reason != "overflow") else f"{prefix}: {error}"
            await self.bus.emit(ev.compaction_end(check.reason, aborted=aborted, error_message=message))
            return None
        await self.bus.emit(ev.compaction_end(check.reason, result=entry, will_retry=check.will_retry))
        return entry
