"""Whether a session's last run was interrupted, and what finishing it takes (crash-resumable runs, beyond pi).

A run is interrupted when its context ends in a user message or in tool results with no reply after them,
in an assistant reply whose tool calls lack results, or in an overflow error that was compacted but not
retried. Pure: it reads the context messages and the leaf's entry type; the harness does the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..llm.overflow import is_context_overflow

__all__ = ["INTERRUPTED_TEXT", "Interruption", "find_interruption", "unanswered_tool_calls"]

AgentMessage = dict[str, Any]

INTERRUPTED_TEXT = (
    "The run was interrupted before the result of this {name} call was saved, and the call was not run again "
    "because it is not safe to repeat: its effects, if any, are unknown. Check before relying on them."
)
"""The result persisted for an interrupted tool call that does not declare itself repeatable."""


@dataclass(frozen=True, slots=True)
class Interruption:
    """An interrupted run: ``kind`` says where it stopped; ``missing`` are the tool calls of ``assistant``
    without results (source order); ``drop_last`` asks to leave the context's last message (an overflow
    error reply) out of the next request."""

    kind: Literal["reply", "tool_calls", "retry"]
    assistant: AgentMessage | None = None
    missing: list[dict[str, Any]] = field(default_factory=list)
    drop_last: bool = False


def unanswered_tool_calls(
    messages: Sequence[AgentMessage],
) -> tuple[AgentMessage, list[dict[str, Any]]] | None:
    """The last assistant reply of ``messages`` and its tool calls that no later tool result answers, when
    only tool results follow it and some call is unanswered; else None."""
    index = len(messages) - 1
    answered: set[Any] = set()
    while index >= 0 and messages[index].get("role") == "toolResult":
        answered.add(messages[index].get("toolCallId"))
        index -= 1
    if index < 0 or messages[index].get("role") != "assistant":
        return None
    assistant = messages[index]
    if assistant.get("stopReason") in ("error", "aborted"):
        return None
    calls = [
        b
        for b in assistant.get("content") or []
        if isinstance(b, dict) and b.get("type") == "toolCall" and b.get("id") not in answered
    ]
    return (assistant, calls) if calls else None


def find_interruption(
    messages: Sequence[AgentMessage], leaf_type: str | None, context_window: int = 0
) -> Interruption | None:
    """What is left of the last run at the end of ``messages`` (None: it finished)."""
    if not messages:
        return None
    pending = unanswered_tool_calls(messages)
    if pending is not None:
        return Interruption("tool_calls", pending[0], pending[1])
    last = messages[-1]
    role = last.get("role")
    if role in ("user", "toolResult"):
        return Interruption("reply")
    if (
        role == "assistant"
        and leaf_type == "compaction"
        and last.get("stopReason") == "error"
        and is_context_overflow(last, context_window)
    ):
        return Interruption("retry", drop_last=True)
    return None
