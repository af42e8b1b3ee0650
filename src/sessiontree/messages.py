"""Message shapes (pi's ``AgentMessage`` union) as TypedDicts with pi's camelCase keys.

Plain dicts at runtime so unknown fields survive; these types only document and check the shapes.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "Message",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "assistant_message",
    "bash_execution_message",
    "branch_summary_message",
    "compaction_summary_message",
    "custom_message",
    "empty_usage",
    "tool_result_message",
    "user_message",
]

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]


class ThinkingContent(TypedDict):
    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[str]
    redacted: NotRequired[bool]


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str
    mimeType: str


class ToolCall(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]
    thoughtSignature: NotRequired[str]


class Cost(TypedDict):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float


class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: NotRequired[int]
    cost: NotRequired[Cost]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[TextContent | ImageContent]
    timestamp: int


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[TextContent | ThinkingContent | ToolCall]
    api: str
    provider: str
    model: str
    responseModel: NotRequired[str]
    responseId: NotRequired[str]
    diagnostics: NotRequired[list[Any]]
    usage: Usage
    stopReason: StopReason
    errorMessage: NotRequired[str]
    timestamp: int


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[TextContent | ImageContent]
    details: NotRequired[Any]
    isError: bool
    timestamp: int


class BashExecutionMessage(TypedDict):
    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: NotRequired[int]
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]
    timestamp: int
    excludeFromContext: NotRequired[bool]


class CustomMessage(TypedDict):
    role: Literal["custom"]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: NotRequired[Any]
    timestamp: int


class BranchSummaryMessage(TypedDict):
    role: Literal["branchSummary"]
    summary: str
    fromId: str
    timestamp: int | None


class CompactionSummaryMessage(TypedDict):
    role: Literal["compactionSummary"]
    summary: str
    tokensBefore: int
    timestamp: int | None


Message = UserMessage | AssistantMessage | ToolResultMessage
"""A model-level message: what ``convert_to_llm`` produces and providers consume."""

AgentMessage = dict[str, Any]
"""A runtime message (any role above, or an app-defined one): a plain dict."""


def empty_usage() -> Usage:
    """An all-zero usage record with a zero cost (pi's shape)."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user_message(content: str | list[Any], timestamp: int) -> dict[str, Any]:
    """A user message in pi's key order."""
    return {"role": "user", "content": content, "timestamp": timestamp}


def assistant_message(
    content: list[Any],
    *,
    api: str,
    provider: str,
    model: str,
    usage: Usage | None = None,
    stop_reason: StopReason = "stop",
    timestamp: int,
    error_message: str | None = None,
    response_id: str | None = None,
) -> dict[str, Any]:
    """An assistant message in pi's key order (optional keys omitted when ``None``)."""
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
    }
    if response_id is not None:
        msg["responseId"] = response_id
    msg["usage"] = usage if usage is not None else empty_usage()
    msg["stopReason"] = stop_reason
    if error_message is not None:
        msg["errorMessage"] = error_message
    msg["timestamp"] = timestamp
    return msg


def tool_result_message(
    tool_call_id: str,
    tool_name: str,
    content: list[Any],
    *,
    is_error: bool,
    timestamp: int,
    details: Any = None,
) -> dict[str, Any]:
    """A tool result message in pi's key order (``details`` omitted when ``None``)."""
    msg: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "content": content,
    }
    if details is not None:
        msg["details"] = details
    msg["isError"] = is_error
    msg["timestamp"] = timestamp
    return msg


def bash_execution_message(
    command: str,
    output: str,
    *,
    exit_code: int | None,
    cancelled: bool = False,
    truncated: bool = False,
    full_output_path: str | None = None,
    timestamp: int,
    exclude_from_context: bool | None = None,
) -> dict[str, Any]:
    """A user-run shell command (pi's ``!cmd``; ``exclude_from_context=True`` for ``!!cmd``), pi's key order.

    ``exitCode`` is omitted when ``None`` (pi omits an undefined exit code), as are the optional keys.
    """
    msg: dict[str, Any] = {"role": "bashExecution", "command": command, "output": output}
    if exit_code is not None:
        msg["exitCode"] = exit_code
    msg["cancelled"] = cancelled
    msg["truncated"] = truncated
    if full_output_path is not None:
        msg["fullOutputPath"] = full_output_path
    msg["timestamp"] = timestamp
    if exclude_from_context is not None:
        msg["excludeFromContext"] = exclude_from_context
    return msg


def custom_message(
    custom_type: str, content: str | list[Any], *, display: bool, timestamp: int, details: Any = None
) -> dict[str, Any]:
    """An extension-injected message that is part of the model context (``details`` never sent)."""
    msg: dict[str, Any] = {
        "role": "custom",
        "customType": custom_type,
        "content": content,
        "display": display,
    }
    if details is not None:
        msg["details"] = details
    msg["timestamp"] = timestamp
    return msg


def branch_summary_message(summary: str, from_id: str, timestamp: int | None) -> dict[str, Any]:
    """The runtime message a ``branch_summary`` entry becomes in a context (never stored as a message)."""
    return {"role": "branchSummary", "summary": summary, "fromId": from_id, "timestamp": timestamp}


def compaction_summary_message(summary: str, tokens_before: float, timestamp: int | None) -> dict[str, Any]:
    """The runtime message a ``compaction`` entry becomes in a context (never stored as a message)."""
    return {
        "role": "compactionSummary",
        "summary": summary,
        "tokensBefore": tokens_before,
        "timestamp": timestamp,
    }
