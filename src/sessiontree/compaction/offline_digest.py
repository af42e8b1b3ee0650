"""What the offline summarizer knows about a conversation: requests, steps, errors, decisions, files and the
earlier summaries met on the way, pulled from runtime messages by fixed rules.

Pure extraction: deterministic, no model, no network, no I/O; it never invents text, it only quotes and trims
(exact paths, commands and error lines are kept as written). Earlier summaries are captured whole, not
parsed: ``offline_merge`` reads their sections.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sessiontree.format.pi_json import dumps

from ..llm.convert import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
)
from .file_ops import FileOperations, compute_file_lists, extract_file_ops_from_message
from .prompts import BRANCH_SUMMARY_PREAMBLE

__all__ = [
    "Digest",
    "EmbeddedSummary",
    "Step",
    "clip",
    "digest_messages",
    "file_blocks",
    "first_line",
    "message_text",
    "sentences",
    "strip_file_blocks",
    "unwrap_summary",
]

AgentMessage = dict[str, Any]
SummaryOrigin = Literal["branch", "compaction"]

_PATH_ARGS = ("path", "file_path", "file", "filename")
_PRIMARY_ARGS = ("path", "file_path", "command", "pattern", "query", "url", "file", "name")
_LOOKUP_TOOLS = frozenset({"read", "ls", "find", "grep", "glob"})
_FILE_TOOLS = frozenset({"read", "edit", "write"})
_ERROR_WORDS = re.compile(
    r"error|exception|failed|failure|not found|no such|denied|invalid|cannot|can't|unable|traceback|panic",
    re.IGNORECASE,
)
_DECISION_WORDS = re.compile(
    r"\b(decided|decide to|instead|rather than|switch(?:ed)? to|the fix|root cause|because|so that|"
    r"the problem is|the issue is|turns out|in order to|we need to|must be|found it|the bug|the cause|"
    r"caused by|options?:)",
    re.IGNORECASE,
)
_CONSTRAINT_WORDS = re.compile(
    r"\b(must|must not|don't|do not|never|always|prefer|without|only|avoid|keep|should not|shouldn't)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_NOISE_LINE = re.compile(r"^(?:Command exited with code -?\d+|\(no output\)|\[\d+ more lines?.*\])$")
# pi's wrapper of a branch summary turned into a user message (sessiontree writes BRANCH_SUMMARY_PREFIX).
_PI_BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:"


def clip(text: str, limit: int) -> str:
    """Collapse whitespace and cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def sentences(text: str) -> list[str]:
    """The sentences and lines of ``text``, stripped, empty ones left out."""
    return [part.strip() for part in _SENTENCE.split(text) if part and part.strip()]


def first_line(text: str) -> str:
    """The first non-empty line."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _outcome_line(text: str) -> str:
    """The line that says how a command ended: the last meaningful one (``12 passed in 0.39s``)."""
    for line in reversed(text.splitlines()):
        stripped = line.strip()
        if stripped and not _NOISE_LINE.match(stripped):
            return stripped
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


def unwrap_summary(text: str) -> tuple[SummaryOrigin, str] | None:
    """``(origin, summary)`` when a user text is a summary in one of the known wrappers, else None.

    Recognizes sessiontree's ``<branch_exploration_summary>``, pi's branch-summary and compaction wrappers
    and the bare branch-summary preamble, so a summary that reached the messages as user text is not taken
    for a request.
    """
    stripped = text.strip()
    wrappers: list[tuple[SummaryOrigin, str, str]] = [
        ("branch", BRANCH_SUMMARY_PREFIX.strip(), BRANCH_SUMMARY_SUFFIX.strip()),
        ("branch", "<branch_exploration_summary>", BRANCH_SUMMARY_SUFFIX.strip()),
        ("branch", _PI_BRANCH_PREFIX, "</summary>"),
        ("compaction", COMPACTION_SUMMARY_PREFIX.strip(), COMPACTION_SUMMARY_SUFFIX.strip()),
    ]
    for origin, prefix, suffix in wrappers:
        if stripped.startswith(prefix):
            body = stripped[len(prefix) :]
            if body.endswith(suffix):
                body = body[: -len(suffix)]
            return origin, body.strip()
    if stripped.startswith(BRANCH_SUMMARY_PREAMBLE.split("\n")[0]):
        return "branch", stripped
    return None


def _code(text: str) -> str:
    """``text`` as inline code, clipped (double backticks when it contains one)."""
    shown = clip(text, 160)
    return f"`` {shown} ``" if "`" in shown else f"`{shown}`"


def _argument(arguments: Mapping[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


@dataclass(slots=True)
class Step:
    """One action: a tool call (with its result when seen) or a user-run shell command.

    ``label`` says what was done in plain words (``Ran `pytest -q```, ``Edited src/app.py``); ``subject`` is
    how a failure of it is named (``Editing src/app.py``).
    """

    label: str
    name: str = ""
    ok: bool | None = None
    result: str = ""
    error: str = ""
    subject: str = ""

    @property
    def lookup(self) -> bool:
        """True for steps that only look around (read, list, search)."""
        return self.name in _LOOKUP_TOOLS

    @property
    def failure(self) -> str:
        """The failure as one line: ``Editing src/app.py failed: <exact error line>``."""
        return f"{self.subject or self.label} failed: {self.error}"


def _step_for_call(block: Mapping[str, Any]) -> Step:
    raw_name = str(block.get("name", "tool"))
    name = raw_name.lower()
    arguments = block.get("arguments")
    args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
    path = _argument(args, _PATH_ARGS)
    if name == "bash" and _argument(args, ("command",)):
        command = _code(_argument(args, ("command",)))
        return Step(f"Ran {command}", name, subject=command)
    if name in _FILE_TOOLS and path:
        verb, doing = {
            "read": ("Read", "Reading"),
            "edit": ("Edited", "Editing"),
            "write": ("Wrote", "Writing"),
        }[name]
        return Step(f"{verb} {path}", name, subject=f"{doing} {path}")
    if name == "ls":
        return Step(f"Listed {path or '.'}", name, subject=f"Listing {path or '.'}")
    if name in ("grep", "find", "glob") and _argument(args, ("pattern",)):
        pattern = _code(_argument(args, ("pattern",)))
        where = f" in {path}" if path else ""
        what = "Searched for" if name == "grep" else "Looked for files matching"
        return Step(f"{what} {pattern}{where}", name, subject=f"Searching for {pattern}{where}")
    if not args:
        return Step(f"Called {raw_name}", name, subject=f"`{raw_name}`")
    key = next((k for k in _PRIMARY_ARGS if k in args), next(iter(args)))
    value = args[key]
    shown = clip(value if isinstance(value, str) else dumps(value), 160)
    return Step(f"Called {raw_name} with {key}={shown}", name, subject=f"`{raw_name}` ({key}={shown})")


@dataclass(slots=True)
class EmbeddedSummary:
    """A compaction or branch summary met among the messages (``origin`` says which), as written."""

    origin: SummaryOrigin
    text: str


@dataclass(slots=True)
class Digest:
    """Everything the offline summaries are built from, in conversation order."""

    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summaries: list[EmbeddedSummary] = field(default_factory=list)
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

    @property
    def acted(self) -> bool:
        """True when some step other than looking around succeeded (work moved on)."""
        return any(step.ok and not step.lookup for step in self.steps)


def _add_unique(items: list[str], value: str) -> None:
    if value and value not in items:
        items.append(value)


def _user(digest: Digest, text: str) -> None:
    stripped = text.strip()
    if not stripped or (stripped.startswith("/") and len(stripped.split()) == 1):
        return  # empty, or a bare UI command such as "/model": not a request
    wrapped = unwrap_summary(stripped)
    if wrapped is not None:
        digest.summaries.append(EmbeddedSummary(*wrapped))
        return
    digest.requests.append(stripped)
    digest.answered_last_request = False
    for sentence in sentences(text):
        if _CONSTRAINT_WORDS.search(sentence) and len(sentence) > 3:
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
            step = _step_for_call(block)
            digest.steps.append(step)
            if isinstance(block.get("id"), str):
                pending[block["id"]] = step
    text = "\n".join(t for t in texts if t.strip())
    calls = any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in message.get("content") or [])
    # A request counts as answered by a final reply: text, no further tool calls, no error.
    digest.answered_last_request = bool(text.strip()) and not calls and message.get("stopReason") != "error"
    if text.strip():
        digest.last_assistant_text = text.strip()
        for sentence in sentences(text):
            if _DECISION_WORDS.search(sentence) and len(sentence) > 12:
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
        name = str(message.get("toolName", "tool"))
        step = Step(f"{name} (result)", name.lower(), subject=f"`{name}`")
        digest.steps.append(step)
    if message.get("isError"):
        step.ok = False
        step.error = clip(_error_line(text), 300) or "error without a message"
        _error(digest, step.failure)
    else:
        step.ok = True
        step.result = clip(_outcome_line(text) if step.name == "bash" else first_line(text), 140)
        if not step.lookup:  # looking around does not resolve a failure; acting might
            digest.unresolved_error = False


def _bash(digest: Digest, message: Mapping[str, Any]) -> None:
    command = _code(str(message.get("command", "")))
    output = str(message.get("output", ""))
    code = message.get("exitCode")
    failed = bool(message.get("cancelled")) or (isinstance(code, (int, float)) and code != 0)
    step = Step(
        f"User ran {command}",
        "bash",
        ok=not failed,
        result=clip(_outcome_line(output), 140),
        subject=f"User command {command}",
    )
    digest.steps.append(step)
    if failed:
        step.error = clip(_error_line(output), 300) or (
            "cancelled" if message.get("cancelled") else f"exit {code}"
        )
        _error(digest, step.failure)
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
            summary = str(message.get("summary") or "")
            if summary.strip():
                origin: SummaryOrigin = "branch" if role == "branchSummary" else "compaction"
                digest.summaries.append(EmbeddedSummary(origin, summary))
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
        target.extend(line.strip() for line in body.split("\n") if line.strip())
    return read, modified
