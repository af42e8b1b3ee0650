"""Messages (pi's ``AgentMessage`` union): their constructors, in pi's key order, and their validation.

Plain dicts at runtime so unknown fields survive. The TypedDicts that document and check the shapes live in
``message_types`` and are re-exported here, imported when one is first used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sessiontree._lazy import export_lazily
from sessiontree.errors import SessionError

if TYPE_CHECKING:
    from sessiontree.format.message_types import (
        AgentMessage,
        AssistantMessage,
        BashExecutionMessage,
        BranchSummaryMessage,
        CompactionSummaryMessage,
        Cost,
        CustomMessage,
        ImageContent,
        Message,
        StopReason,
        TextContent,
        ThinkingContent,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )

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
    "StopReason",
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
    "register_message_role",
    "tool_result_message",
    "user_message",
    "validate_message",
]


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


# -- validation of the message envelope ------------------------------------------------------------------
_CONTENT_STR_OR_BLOCKS = frozenset({"user", "custom", "hookMessage"})  # hookMessage: v2's name for custom
_CONTENT_BLOCKS = frozenset({"assistant", "toolResult"})
_BUILTIN_ROLES = frozenset(
    {*_CONTENT_STR_OR_BLOCKS, *_CONTENT_BLOCKS, "bashExecution", "branchSummary", "compactionSummary"}
)
_custom_roles: set[str] = set()


def register_message_role(role: str) -> None:
    """Allow an app-defined message role in ``append_message`` (its fields are the app's business)."""
    if not isinstance(role, str) or not role:
        raise SessionError("a message role must be a non-empty string", kind="invalid_argument")
    _custom_roles.add(role)


def _invalid(field: str, problem: str) -> SessionError:
    return SessionError(f"invalid message: {field} {problem}", kind="invalid_argument")


def _check_blocks(content: list[Any]) -> None:
    for i, block in enumerate(content):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise _invalid(f"'content[{i}]'", "must be a content block: an object with a string 'type'")


def validate_message(message: Any) -> None:
    """Check a message's envelope before it is stored: an object with a known (or registered) ``role``,
    ``content`` of the role's shape and a numeric ``timestamp``. Raises ``SessionError`` (kind
    ``invalid_argument``) naming the field."""
    if not isinstance(message, Mapping):
        raise SessionError(
            f"invalid message: must be an object (a dict), not {type(message).__name__}",
            kind="invalid_argument",
        )
    role = message.get("role")
    if not isinstance(role, str):
        raise _invalid("'role'", "is missing or not a string")
    if role not in _BUILTIN_ROLES:
        if role in _custom_roles:
            return
        known = ", ".join(sorted(_BUILTIN_ROLES))
        raise _invalid("'role'", f"{role!r} is not a known role ({known}; register_message_role allows more)")
    stamp = message.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp):
        what = "is missing" if "timestamp" not in message else "must be a number"
        raise _invalid("'timestamp'", f"{what} (epoch milliseconds)")
    content = message.get("content")
    if role in _CONTENT_STR_OR_BLOCKS:
        if isinstance(content, list):
            _check_blocks(content)
        elif not isinstance(content, str):
            raise _invalid("'content'", f"of a {role} message must be a string or a list of content blocks")
    elif role in _CONTENT_BLOCKS:
        if not isinstance(content, list):
            raise _invalid("'content'", f"of a {role} message must be a list of content blocks")
        _check_blocks(content)
    elif role == "bashExecution":
        if not isinstance(message.get("command"), str):
            raise _invalid("'command'", "of a bashExecution message must be a string")
    elif not isinstance(message.get("summary"), str):
        raise _invalid("'summary'", f"of a {role} message must be a string")


# Last, once every name defined here exists: the rest of ``__all__`` are the TypedDicts of ``message_types``.
export_lazily(
    __name__, dict.fromkeys([n for n in __all__ if n not in globals()], "sessiontree.format.message_types")
)
