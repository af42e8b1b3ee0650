"""Agent and harness events as plain dicts with ``"type"`` and pi's camelCase payload keys.

Constructors only: who emits an event and who listens is the loop's and the bus's business.
"""

from __future__ import annotations

from typing import Any

from ..llm.types import StreamEvent
from .types import ToolResult

__all__ = [
    "agent_end",
    "agent_start",
    "assistant_message_event",
    "auto_retry_end",
    "auto_retry_start",
    "compaction_end",
    "compaction_start",
    "message_end",
    "message_start",
    "message_update",
    "queue_update",
    "save_point",
    "tool_execution_end",
    "tool_execution_start",
    "tool_execution_update",
    "turn_end",
    "turn_start",
]

Event = dict[str, Any]
Message = dict[str, Any]


def agent_start() -> Event:
    return {"type": "agent_start"}


def agent_end(messages: list[Message]) -> Event:
    """Every message the run added (prompts included)."""
    return {"type": "agent_end", "messages": messages}


def turn_start() -> Event:
    return {"type": "turn_start"}


def turn_end(message: Message, tool_results: list[Message]) -> Event:
    return {"type": "turn_end", "message": message, "toolResults": tool_results}


def message_start(message: Message) -> Event:
    return {"type": "message_start", "message": message}


def message_update(message: Message, event: StreamEvent) -> Event:
    return {
        "type": "message_update",
        "message": message,
        "assistantMessageEvent": assistant_message_event(event),
    }


def message_end(message: Message) -> Event:
    return {"type": "message_end", "message": message}


def assistant_message_event(event: StreamEvent) -> dict[str, Any]:
    """A stream event in pi's ``AssistantMessageEvent`` shape (``contentIndex``, ``delta``, ``toolCall``...)."""
    out: dict[str, Any] = {"type": event.type}
    if event.content_index is not None:
        out["contentIndex"] = event.content_index
    if event.delta is not None:
        out["delta"] = event.delta
    if event.content is not None:
        out["content"] = event.content
    if event.tool_call is not None:
        out["toolCall"] = event.tool_call
    if event.reason is not None:
        out["reason"] = event.reason
    if event.message is not None:
        out["message"] = event.message
    out["partial"] = event.partial
    return out


def tool_execution_start(tool_call_id: str, tool_name: str, args: Any) -> Event:
    return {"type": "tool_execution_start", "toolCallId": tool_call_id, "toolName": tool_name, "args": args}


def tool_execution_update(tool_call_id: str, tool_name: str, args: Any, partial: ToolResult) -> Event:
    return {
        "type": "tool_execution_update",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "args": args,
        "partialResult": partial.to_dict(),
    }


def tool_execution_end(tool_call_id: str, tool_name: str, result: ToolResult, is_error: bool) -> Event:
    return {
        "type": "tool_execution_end",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "result": result.to_dict(),
        "isError": is_error,
    }


def queue_update(steer: list[Message], follow_up: list[Message], next_turn: list[Message]) -> Event:
    return {"type": "queue_update", "steer": steer, "followUp": follow_up, "nextTurn": next_turn}


def save_point(had_pending_mutations: bool) -> Event:
    return {"type": "save_point", "hadPendingMutations": had_pending_mutations}


def auto_retry_start(attempt: int, max_attempts: int, delay_ms: int, error_message: str) -> Event:
    """pi's ``auto_retry_start``: attempt ``attempt`` of ``max_attempts`` is sent after ``delay_ms``."""
    return {
        "type": "auto_retry_start",
        "attempt": attempt,
        "maxAttempts": max_attempts,
        "delayMs": delay_ms,
        "errorMessage": error_message,
    }


def auto_retry_end(success: bool, attempt: int, final_error: str | None = None) -> Event:
    """pi's ``auto_retry_end``: the retries are over (``finalError`` when they did not help)."""
    event: Event = {"type": "auto_retry_end", "success": success, "attempt": attempt}
    if final_error is not None:
        event["finalError"] = final_error
    return event


def compaction_start(reason: str) -> Event:
    return {"type": "compaction_start", "reason": reason}


def compaction_end(
    reason: str,
    *,
    result: Any = None,
    aborted: bool = False,
    will_retry: bool = False,
    error_message: str | None = None,
) -> Event:
    """pi's ``compaction_end``: ``result`` is the compaction entry when one was written."""
    event: Event = {
        "type": "compaction_end",
        "reason": reason,
        "result": result,
        "aborted": aborted,
        "willRetry": will_retry,
    }
    if error_message is not None:
        event["errorMessage"] = error_message
    return event
