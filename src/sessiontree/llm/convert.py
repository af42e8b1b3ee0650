"""Runtime messages (AgentMessage) to model messages (Message): pi's ``convertToLlm`` plus the context hook.

Pure and order-preserving; it never talks to a provider and never normalizes for a wire format (transform.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from sessiontree.format.messages import AgentMessage, Message
from sessiontree.format.pi_json import js_number

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "TransformContext",
    "bash_execution_to_text",
    "branch_summary_text",
    "compaction_summary_text",
    "convert_message",
    "convert_to_llm",
    "prepare_llm_messages",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"

# sessiontree's own wrapper (SPEC A2): the tag the design articles name, with one sentence telling the model
# that the abandoned branch is reference material, not the state it is working in.
BRANCH_SUMMARY_PREFIX = (
    "<branch_exploration_summary>\n"
    "This is a summary of a parallel exploration that was abandoned; it is for reference only and does "
    "not describe the current state.\n\n"
)
BRANCH_SUMMARY_SUFFIX = "\n</branch_exploration_summary>"

TransformContext = Callable[[list[AgentMessage]], list[AgentMessage] | Awaitable[list[AgentMessage]]]
"""A hook that rewrites the runtime messages before conversion (pi's ``transformContext``)."""


def compaction_summary_text(summary: Any) -> str:
    """The user-message text a compaction summary becomes (a summary that is not a string as JS prints it)."""
    return COMPACTION_SUMMARY_PREFIX + _js_str(summary) + COMPACTION_SUMMARY_SUFFIX


def branch_summary_text(summary: Any) -> str:
    """The user-message text a branch summary becomes (sessiontree's ``<branch_exploration_summary>``)."""
    return BRANCH_SUMMARY_PREFIX + _js_str(summary) + BRANCH_SUMMARY_SUFFIX


_MAX_JOIN_DEPTH = 64


def _js_str(value: Any, depth: int = 0) -> str:
    """JavaScript's ``String(value)``: what string concatenation and template literals make of a value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if value is None:
        return "null"
    if isinstance(value, list):  # Array.prototype.join: null and undefined items are empty
        if depth >= _MAX_JOIN_DEPTH:  # JavaScript would overflow its stack; we abbreviate
            return "…"
        return ",".join("" if item is None else _js_str(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def bash_execution_to_text(message: AgentMessage) -> str:
    """The exact text pi sends for a user-run shell command (SPEC B§6)."""
    command = message.get("command", "")
    output = message.get("output", "")
    text = f"Ran `{_js_str(command)}`\n"
    if output:
        text += f"```\n{_js_str(output)}\n```"
    else:
        text += "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0 and exit_code is not False:
        text += f"\n\nCommand exited with code {_js_str(exit_code)}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {_js_str(message['fullOutputPath'])}]"
    return text


def _user(content: Any, timestamp: Any) -> Message:
    return cast(Message, {"role": "user", "content": content, "timestamp": timestamp})


_AS_IS = ("user", "assistant", "toolResult")
"""The roles a model takes as they are (a tuple: a damaged entry's role can be an unhashable object)."""


def convert_message(message: AgentMessage) -> Message | None:
    """Convert one runtime message; ``None`` when it is not part of the model context."""
    if not isinstance(message, dict):  # a damaged entry's message: nothing a model could be sent
        return None
    role = message.get("role")
    if role in _AS_IS:
        return cast(Message, message)
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user([{"type": "text", "text": bash_execution_to_text(message)}], message.get("timestamp"))
    if role == "custom":
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return _user(content, message.get("timestamp"))
    if role == "branchSummary":
        text = branch_summary_text(message.get("summary", ""))
        return _user([{"type": "text", "text": text}], message.get("timestamp"))
    if role == "compactionSummary":
        text = compaction_summary_text(message.get("summary", ""))
        return _user([{"type": "text", "text": text}], message.get("timestamp"))
    return None


def convert_to_llm(
    messages: Sequence[AgentMessage],
    *,
    transform_context: Callable[[list[AgentMessage]], list[AgentMessage]] | None = None,
) -> list[Message]:
    """Turn runtime messages into model messages, after the optional synchronous ``transform_context``."""
    source = list(messages)
    if transform_context is not None:
        source = transform_context(source)
    out: list[Any] = []  # (Message items: a cast per item would cost as much as the rest of the loop)
    append = out.append
    for message in source:
        # the common case inline (a harness converts its whole context at every request): a plain dict of a
        # role models take as it is, which ``convert_message`` would return unchanged
        if type(message) is dict and message.get("role") in _AS_IS:
            append(message)
            continue
        converted = convert_message(message)
        if converted is not None:
            append(converted)
    return cast(list[Message], out)


async def prepare_llm_messages(
    messages: Sequence[AgentMessage],
    *,
    transform_context: TransformContext | None = None,
    convert: Callable[[Sequence[AgentMessage]], list[Message]] = convert_to_llm,
) -> list[Message]:
    """pi's order at every model call: ``transform_context`` (sync or async) first, then ``convert``."""
    source = list(messages)
    if transform_context is not None:
        result = transform_context(source)
        source = await result if inspect.isawaitable(result) else result
    return convert(source)
