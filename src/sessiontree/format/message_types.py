"""The message shapes (pi's ``AgentMessage`` union) as TypedDicts, with pi's camelCase keys.

Types only: messages are plain dicts at runtime, so unknown fields survive. ``messages`` re-exports every
name here and imports this module when one is first used: creating TypedDicts compiles each annotation,
more work at import than the rest of ``messages`` (a session opened to read its context never needs them).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

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
