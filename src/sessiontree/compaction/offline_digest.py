"""What the offline summarizer knows about a conversation: requests, steps, errors, decisions and files,
pulled from runtime messages by fixed rules.

Pure extraction: deterministic, no model, no network, no I/O; it never invents text, it only quotes and trims.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._json import dumps
from .file_ops import FileOperations, compute_file_lists, extract_file_ops_from_message

__all__ = [
    "Digest",
    "Step",
    "clip",
    "digest_messages",
    "file_blocks",
    "first_line",
    "message_text",
    "strip_file_blocks",
]

AgentMessage = dict[str, Any]

_PRIMARY_ARGS = ("path", "file_path", "command", "pattern", "query", "url", "file", "name")
_ERROR_WORDS = re.compile(
    r"error|exception|failed|failure|not found|no such|denied|invalid|cannot|can't|unable|traceback|panic",
    re.IGNORECASE,
)
_DECISION_WORDS = re.compile(
    r"\b(decided|decide to|instead|rather than|switch(?:ed)? to|the fix|root cause|because|so that|"
    r"the problem is|the issue is|turns out|in order to|we need to|must be)\b",
    re.IGNORECASE,
)
_LOOKUP_TOOLS = frozenset({"read", "ls", "find", "grep", "glob"})
_CONSTRAINT_WORDS = re.compile(
    r"\b(must|must not|don't|do not|never|always|prefer|without|only|avoid|keep|should not|shouldn't)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def clip(text: str, limit: int) -> str:
    """Collapse whitespace and cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def first_line(text: str) -> str:
    """The first non-empty line."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _error_line(text: str) -> str:
    """The line that states the error: the first one with an error word, else the first line."""
    for line in text.splitlines():
        if _ERROR_WORDS.search(line):
            return line.strip()
    return first_line(text)


def message_text(message: Mapping[str, Any]) -> str:
    """Text of a user/custom/toolResult message: string content or text blocks joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
    return "\n".join(parts)


def _call_label(block: Mapping[str, Any]) -> str:
    name = str(block.get("name", "tool"))
    arguments = block.get("arguments")
    if not isinstance(arguments, Mapping) or not arguments:
        return f"{name}()"
    key = next((k for k in _PRIMARY_ARGS if k in arguments), next(iter(arguments)))
    value = arguments[key]
    shown = value if isinstance(value, str) else dumps(value)
    return f"{name} {key}={clip(str(shown), 160)}"


@dataclass(slots=True)
class Step:
    """One action: a tool call (with its result when seen) or a user-run shell command."""

    label: str
    name: str = ""
    ok: bool | None = None
    result: str = ""
    error: str = ""


@dataclass(slots=True)
class Digest:
    """Everything the offline summaries are built from, in conversation order."""

    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    file_ops: FileOperations = field(default_factory=FileOperations)
    last_assistant_text: str = ""
    answered_last_request: bool = False
    unresolved_error: bool = False
    """True when the latest error was not followed by a successful step."""

    @property
    def read_files(self) -> list[str]:
        return compute_file_lists(self.file_ops)[0]

    @property
    def modified_files(self) -> list[str]:
        return compute_file_lists(self.file_ops)[1]

    @property
    def last_error(self) -> str:
        return self.errors[-1] if self.errors else ""


def _add_unique(items: list[str], value: str) -> None:
    if value and value not in items:
        items.append(value)


def _user(digest: Digest, text: str) -> None:
    stripped = text.strip()
    if not stripped or (stripped.startswith("/") and len(stripped.split()) == 1):
        return  # empty, or a bare UI command such as "/model": not a request
    digest.requests.append(text.strip())
    digest.answered_last_request = False
    for sentence in _SENTENCE.split(text):
        if _CONSTRAINT_WORDS.search(sentence) and len(sentence.strip()) > 3:
            _add_unique(digest.constraints, clip(sentence, 240))


def _assistant(digest: Digest, message: Mapping[str, Any], pending: dict[str, Step]) -> None:
    extract_file_ops_from_message(message, digest.file_ops)
    texts: list[str] = []
    for block in message.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "toolCall":
            step = Step(_call_label(block), str(block.get("name", "")))
            digest.steps.append(step)
            if isinstance(block.get("id"), str):
                pending[block["id"]] = step
    text = "\n".join(t for t in texts if t.strip())
    calls = any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in message.get("content") or [])
    # A request counts as answered by a final reply: text, no further tool calls, no error.
    digest.answered_last_request = bool(text.strip()) and not calls and message.get("stopReason") != "error"
    if text.strip():
        digest.last_assistant_text = text.strip()
        for sentence in _SENTENCE.split(text):
            if _DECISION_WORDS.search(sentence) and len(sentence.strip()) > 12:
                _add_unique(digest.decisions, clip(sentence, 240))
    if message.get("stopReason") == "error":
        _error(digest, f"Model error: {message.get('errorMessage') or 'Unknown error'}")


def _error(digest: Digest, text: str) -> None:
    digest.errors.append(text)
    digest.unresolved_error = True


def _tool_result(digest: Digest, message: Mapping[str, Any], pending: dict[str, Step]) -> None:
    text = message_text(message)
    step = pending.pop(str(message.get("toolCallId")), None)
    if step is None:
        step = Step(f"{message.get('toolName', 'tool')} (result)", str(message.get("toolName", "")))
        digest.steps.append(step)
    if message.get("isError"):
        step.ok = False
        step.error = clip(_error_line(text), 300) or "error without a message"
        _error(digest, f"{step.label}: {step.error}")
    else:
        step.ok = True
        step.result = clip(first_line(text), 140)
        if step.name not in _LOOKUP_TOOLS:  # looking around does not resolve a failure; acting might
            digest.unresolved_error = False


def _bash(digest: Digest, message: Mapping[str, Any]) -> None:
    command = str(message.get("command", ""))
    output = str(message.get("output", ""))
    code = message.get("exitCode")
    failed = bool(message.get("cancelled")) or (isinstance(code, (int, float)) and code != 0)
    step = Step(f"$ {clip(command, 160)}", "bash", ok=not failed, result=clip(first_line(output), 140))
    digest.steps.append(step)
    if failed:
        step.error = clip(_error_line(output), 300) or (
            "cancelled" if message.get("cancelled") else f"exit {code}"
        )
        _error(digest, f"{step.label}: {step.error}")
    else:
        digest.unresolved_error = False


def digest_messages(messages: Sequence[Mapping[str, Any]]) -> Digest:
    """Read runtime messages (any role) into a ``Digest``."""
    digest = Digest()
    pending: dict[str, Step] = {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            _user(digest, message_text(message))
        elif role == "assistant":
            _assistant(digest, message, pending)
        elif role == "toolResult":
            _tool_result(digest, message, pending)
        elif role == "bashExecution":
            if not message.get("excludeFromContext"):
                _bash(digest, message)
        elif role == "custom":
            text = message_text(message)
            if text.strip():
                _add_unique(digest.notes, f"{message.get('customType', 'note')}: {clip(text, 240)}")
        elif role in ("branchSummary", "compactionSummary"):
            summary = str(message.get("summary", ""))
            label = "Abandoned branch" if role == "branchSummary" else "Earlier summary"
            if summary.strip():
                _add_unique(digest.notes, f"{label}: {clip(strip_file_blocks(summary), 400)}")
    return digest


_FILE_BLOCK = re.compile(r"<(read-files|modified-files)>\n(.*?)\n</\1>", re.DOTALL)


def strip_file_blocks(summary: str) -> str:
    return _FILE_BLOCK.sub("", summary).strip()


def file_blocks(summary: str) -> tuple[list[str], list[str]]:
    """The paths listed in a summary's ``<read-files>`` and ``<modified-files>`` blocks."""
    read: list[str] = []
    modified: list[str] = []
    for kind, body in _FILE_BLOCK.findall(summary):
        target = read if kind == "read-files" else modified
        target.extend(line for line in body.split("\n") if line)
    return read, modified
