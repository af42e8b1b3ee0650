"""The offline summarizer: the default when no model is configured. Fills the same sections a model is
asked for, from the messages themselves, within the request's output budget.

Deterministic and local: no model, no network, no clock in the text. It quotes and trims what the
conversation says (requests, tool calls and results, errors, decisions, exact file paths); it never guesses.
Earlier summaries (the previous compaction summary, and compaction or branch summaries among the messages)
are read back into their sections and merged item by item (``offline_merge``), never pasted whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree.format.ids import now_ms
from sessiontree.format.messages import AssistantMessage, assistant_message, empty_usage

from .offline_digest import Digest, Step, clip, digest_messages, sentences
from .offline_merge import FileTracker, Slot, merge_abandoned, merge_earlier
from .summarizer import SummaryKind, SummaryRequest

__all__ = ["OFFLINE_MODEL_ID", "OfflineSummarizer", "summarize_offline"]

OFFLINE_MODEL_ID = "offline-summarizer"
_BULLETS = {"### Done": "- [x] ", "### In Progress": "- [ ] ", "## Next Steps": "{n}. "}
_HISTORY = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]
_BRANCH = ["## Goal", "## Progress", "## Key Learnings", "## Why Abandoned"]
_PREFIX = ["## Original Request", "## Early Progress", "## Context for Suffix"]
_CONTAINERS = {"## Progress"}
_BOLD_LABEL = re.compile(r"^\*\*[^*]+\*\*:")
_QUIET_TOOLS = frozenset({"read", "ls", "find", "grep", "glob", "edit", "write"})


@dataclass(slots=True)
class _Item:
    section: str
    text: str
    priority: int
    order: int


class _Builder:
    """Collects items per section and renders as many as fit, most important first, in reading order."""

    def __init__(self, sections: list[str]) -> None:
        self.sections = sections
        self.items: list[_Item] = []
        self._seen: set[tuple[str, str]] = set()

    def add(self, section: str, text: str, priority: int) -> None:
        """Add an item unless the section already has it (compared without case, spacing or a final dot)."""
        text = text.strip()
        key = (section, " ".join(text.casefold().split()).rstrip("."))
        if text and key not in self._seen:
            self._seen.add(key)
            self.items.append(_Item(section, text, priority, len(self.items)))

    def _line(self, section: str, text: str, n: int) -> str:
        bullet = _BULLETS.get(section, "- ")
        return bullet.format(n=n) + text

    def render(self, max_chars: int) -> str:
        # Headings, "(none)" placeholders and one "(N more not shown)" line per section are always affordable.
        skeleton = sum(len(s) + 2 for s in self.sections) + 40 * len(self.sections)
        budget = max_chars - skeleton if max_chars > 0 else None
        kept: set[int] = set()
        used = 0
        for item in sorted(self.items, key=lambda i: (-i.priority, -i.order)):
            cost = len(item.text) + 8
            if budget is None or used + cost <= budget:
                kept.add(item.order)
                used += cost
        blocks: list[str] = []
        for section in self.sections:
            lines = [section]
            chosen = [i for i in self.items if i.section == section and i.order in kept]
            dropped = sum(1 for i in self.items if i.section == section and i.order not in kept)
            for n, item in enumerate(chosen, 1):
                lines.append(self._line(section, item.text, n))
            if dropped:
                lines.append(f"- ({dropped} more not shown)")
            if not chosen and not (section in _CONTAINERS and "### Done" in self.sections):
                lines.append("(none)")
            blocks.append("\n".join(lines))
        text = "\n\n".join(blocks)
        if max_chars > 0 and len(text) > max_chars:
            text = text[: max(max_chars - 1, 0)] + "…"
        return text


_SLOTS: dict[str, dict[Slot, tuple[str, str]]] = {
    "history": {
        "goal": ("## Goal", ""),
        "constraint": ("## Constraints & Preferences", ""),
        "done": ("### Done", ""),
        "open": ("### In Progress", ""),
        "blocked": ("### Blocked", ""),
        "decision": ("## Key Decisions", "**Decision**: "),
        "error": ("## Key Decisions", "**Error**: "),
        "learning": ("## Key Decisions", "**Learning**: "),
        "abandoned": ("## Key Decisions", "**Abandoned approach**: "),
        "next": ("## Next Steps", ""),
        "context": ("## Critical Context", ""),
    },
    "branch": {
        "goal": ("## Goal", ""),
        "done": ("## Progress", "[x] "),
        "open": ("## Progress", "[ ] "),
        "blocked": ("## Key Learnings", "**Error**: "),
        "decision": ("## Key Learnings", ""),
        "error": ("## Key Learnings", "**Error**: "),
        "learning": ("## Key Learnings", ""),
        "abandoned": ("## Key Learnings", "**Abandoned approach**: "),
        "context": ("## Key Learnings", ""),
    },
    "turn_prefix": {
        "goal": ("## Original Request", ""),
        "done": ("## Early Progress", ""),
        "open": ("## Early Progress", ""),
        "blocked": ("## Early Progress", "**Error**: "),
        "decision": ("## Early Progress", "**Decision**: "),
        "error": ("## Early Progress", "**Error**: "),
        "learning": ("## Context for Suffix", "**Learning**: "),
        "abandoned": ("## Context for Suffix", "**Abandoned approach**: "),
        "context": ("## Context for Suffix", ""),
    },
}
_PROBLEM_WORDS = re.compile(
    r"\b(fail\w*|error\w*|broke|breaks|broken|wrong|does(?:n't| not) work|can(?:'t|not)|unable|regress\w*|"
    r"dead end|not possible|impossible|too slow|too complex)\b",
    re.IGNORECASE,
)


class _Summary(_Builder):
    """A builder that also knows the summary kind: items go to slots, files to a tracker."""

    def __init__(self, kind: str) -> None:
        super().__init__({"branch": _BRANCH, "turn_prefix": _PREFIX}.get(kind, _HISTORY))
        self.slots = _SLOTS.get(kind, _SLOTS["history"])
        self.files = FileTracker()

    def put(self, slot: Slot, text: str, priority: int) -> None:
        """Add ``text`` to the section of ``slot`` with its label; an item with a bold label keeps its own."""
        target = self.slots.get(slot)
        text = text.strip()
        if target is None or not text:
            return
        section, label = target
        if label.startswith("**") and _BOLD_LABEL.match(text):
            label = ""
        self.add(section, label + text, priority)

    def track(self, d: Digest) -> None:
        for path in d.modified_files:
            self.files.add(path, modified=True)
        for path in d.read_files:
            self.files.add(path, modified=False)

    def put_files(self) -> None:
        for text, priority in self.files.lines():
            self.put("context", text, priority)


def _step_text(step: Step) -> str:
    if step.ok is False:
        return step.failure
    if step.ok and step.result and step.name not in _QUIET_TOOLS:
        return f"{step.label} → {step.result}"
    return step.label


def _recency(index: int, total: int, low: int, high: int) -> int:
    return low if total <= 1 else low + (high - low) * index // (total - 1)


def _summaries(s: _Summary, d: Digest, previous: str | None, branch: bool) -> None:
    """Earlier summaries first (they tell what came before): the previous one, then those among the messages."""
    if previous:
        merge_earlier(previous, s.put, s.files, d, branch=branch)
    for embedded in d.summaries:
        if embedded.origin == "branch":
            merge_abandoned(embedded.text, s.put, s.files)
        else:
            merge_earlier(embedded.text, s.put, s.files, d, branch=branch)


def _goals(s: _Summary, d: Digest, focus: str | None) -> None:
    total = len(d.requests)
    # The first substantial request usually states the task; the last one is where the work stands.
    first = next((i for i, r in enumerate(d.requests) if len(r) >= 20), 0)
    for i, request in enumerate(d.requests):
        essential = i in (first, total - 1)
        s.put(
            "goal", clip(request, 400 if essential else 200), 100 if essential else _recency(i, total, 35, 66)
        )
    if focus:
        s.put("goal", f"Requested focus for this summary: {clip(focus, 300)}", 100)


def _work(s: _Summary, d: Digest, *, last_error_elsewhere: bool) -> None:
    """Steps, errors and decisions, in the slots of the summary kind; the last error is left out when the
    caller states it in a section of its own."""
    for i, step in enumerate(d.steps):
        if step.ok is not False:
            low, high = (15, 40) if step.lookup else (30, 60)
            s.put("done", _step_text(step), _recency(i, len(d.steps), low, high))
    for i, error in enumerate(d.errors):
        last = i == len(d.errors) - 1
        if not (last and last_error_elsewhere):
            s.put("error", error, 100 if last else _recency(i, len(d.errors), 45, 68))
    for i, decision in enumerate(d.decisions):
        s.put("decision", decision, _recency(i, len(d.decisions), 40, 65))
    for note in d.notes:
        s.put("context", note, 60)


def _history(s: _Summary, d: Digest, focus: str | None) -> None:
    _goals(s, d, focus)
    for i, constraint in enumerate(d.constraints):
        s.put("constraint", constraint, _recency(i, len(d.constraints), 45, 60))
    _work(s, d, last_error_elsewhere=d.unresolved_error)
    if d.steps and d.steps[-1].ok is None:
        s.put("open", f"{d.steps[-1].label} (no result yet)", 90)
    if d.requests and not d.answered_last_request:
        s.put("open", clip(d.requests[-1], 300), 90)
    if d.unresolved_error:
        s.put("blocked", d.last_error, 100)
        s.put("next", "Resolve the blocking error (see Blocked)", 92)
    if d.requests:
        s.put("next", f"Continue with the latest request: {clip(d.requests[-1], 300)}", 95)
    if d.last_assistant_text and not _said_already(d.last_assistant_text, d.decisions):
        s.put("context", f"Last assistant note: {clip(d.last_assistant_text, 300)}", 70)


def _said_already(note: str, decisions: list[str]) -> bool:
    """True when every sentence of ``note`` is already one of the decisions."""
    return all(clip(sentence, 240) in decisions for sentence in sentences(note))


def _why_abandoned(d: Digest) -> str:
    """Why the branch was left, from what it shows last; "(unclear)" when nothing says so."""
    note = clip(d.last_assistant_text, 300)
    if d.unresolved_error:
        return f"The last attempt failed and was not resolved on this branch: {d.last_error}"
    if note and _PROBLEM_WORDS.search(note):
        return f"It ran into a problem: {note}"
    if d.requests and not d.answered_last_request:
        last = f" Last assistant note: {note}" if note else ""
        request = clip(d.requests[-1], 240).rstrip(".")
        return f"(unclear) Left unfinished; the open request was: {request}.{last}"
    if note:
        return f"(unclear) The branch's last request had been answered: {note}"
    return "(unclear)"


def _branch(s: _Summary, d: Digest, focus: str | None) -> None:
    _goals(s, d, focus)
    _work(s, d, last_error_elsewhere=d.unresolved_error)  # Why Abandoned states it then
    if d.requests and not d.answered_last_request:
        s.put("open", clip(d.requests[-1], 300), 90)
    s.add("## Why Abandoned", _why_abandoned(d), 100)


def _prefix(s: _Summary, d: Digest) -> None:
    if d.requests:
        s.put("goal", clip(d.requests[0], 600), 100)
    for request in d.requests[1:]:
        s.put("goal", clip(request, 240), 60)
    _work(s, d, last_error_elsewhere=bool(d.last_error))
    if d.last_error:
        s.put("context", f"Last error: {d.last_error}", 100)
    if d.last_assistant_text:
        s.put("context", f"Last assistant note: {clip(d.last_assistant_text, 300)}", 80)


def summarize_offline(
    kind: SummaryKind,
    messages: Sequence[dict[str, Any]],
    *,
    previous_summary: str | None = None,
    focus: str | None = None,
    max_tokens: int = 0,
) -> str:
    """The summary text for ``kind`` (``history``, ``turn_prefix``, ``branch``), at most ``max_tokens`` × 4
    characters (0 = unbounded).

    Items of earlier summaries come first, each in the section it belongs to (a previous summary's Original
    Request is a goal, an abandoned branch becomes a short learning), then the new messages' items; the same
    item is never listed twice in a section.
    """
    digest = digest_messages(messages)
    summary = _Summary(kind)
    _summaries(summary, digest, previous_summary if kind == "history" else None, kind == "branch")
    summary.track(digest)
    if kind == "branch":
        _branch(summary, digest, focus)
    elif kind == "turn_prefix":
        _prefix(summary, digest)
    else:
        _history(summary, digest, focus)
    summary.put_files()
    return summary.render(max_tokens * 4 if max_tokens > 0 else 0)


def _effective_budget(max_tokens: int, target_tokens: int) -> int:
    if max_tokens > 0 and target_tokens > 0:
        return min(max_tokens, target_tokens)
    return max(max_tokens, target_tokens, 0)


class OfflineSummarizer:
    """A ``Summarizer`` that needs no model: same request, same sections, computed locally.

    Replies like a model would (an assistant message, ``provider`` ``sessiontree``, zero usage), so it fits
    wherever a model-backed summarizer does; an already aborted request gets an ``aborted`` reply.
    """

    name = "offline summarizer"
    max_output_tokens = 0
    supports_reasoning = False
    context_window: int | None = None

    def __init__(self, *, target_tokens: int = 4096, clock: Callable[[], int] = now_ms) -> None:
        """``target_tokens`` keeps summaries concise when the request's budget is larger (0 = use it all)."""
        self.target_tokens = target_tokens
        self._clock = clock

    async def summarize(self, request: SummaryRequest) -> AssistantMessage:
        meta: dict[str, Any] = {"api": "offline", "provider": "sessiontree", "model": OFFLINE_MODEL_ID}
        if request.signal is not None and request.signal.aborted:
            reply = assistant_message(
                [],
                **meta,
                usage=empty_usage(),
                stop_reason="aborted",
                timestamp=self._clock(),
                error_message=request.signal.reason or "Request was aborted",
            )
        else:
            text = summarize_offline(
                request.kind,
                request.messages,
                previous_summary=request.previous_summary,
                focus=request.custom_instructions,
                max_tokens=_effective_budget(request.max_tokens, self.target_tokens),
            )
            content = [{"type": "text", "text": text}]
            reply = assistant_message(content, **meta, usage=empty_usage(), timestamp=self._clock())
        return reply  # type: ignore[return-value]
