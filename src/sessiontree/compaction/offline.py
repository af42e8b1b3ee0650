"""The offline summarizer: the default when no model is configured. Fills the same sections a model is
asked for, from the messages themselves, within the request's output budget.

Deterministic and local: no model, no network, no clock in the text. It quotes and trims what the
conversation says (requests, tool calls and results, errors, decisions, exact file paths); it never guesses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..ids import now_ms
from ..messages import AssistantMessage, assistant_message, empty_usage
from .offline_digest import Digest, Step, clip, digest_messages, strip_file_blocks
from .prompts import SPLIT_TURN_HEADING
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
_MARKER = re.compile(r"^(?:- \[[ xX]\] |- |\* |\d+\. )")


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

    def add(self, section: str, text: str, priority: int) -> None:
        text = text.strip()
        if text and not any(i.section == section and i.text == text for i in self.items):
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
            if not chosen and section not in _CONTAINERS:
                lines.append("(none)")
            blocks.append("\n".join(lines))
        text = "\n\n".join(blocks)
        if max_chars > 0 and len(text) > max_chars:
            text = text[: max(max_chars - 1, 0)] + "…"
        return text


def _step_text(step: Step) -> str:
    if step.ok is False:
        return f"{step.label} → failed: {step.error}"
    if step.ok and step.result and step.name not in ("read", "ls", "find", "grep", "glob"):
        return f"{step.label} → {step.result}"
    return step.label


def _recency(index: int, total: int, low: int, high: int) -> int:
    return low if total <= 1 else low + (high - low) * index // (total - 1)


def _goals(b: _Builder, d: Digest, section: str, focus: str | None) -> None:
    total = len(d.requests)
    # The first substantial request usually states the task; the last one is where the work stands.
    first = next((i for i, r in enumerate(d.requests) if len(r) >= 20), 0)
    for i, request in enumerate(d.requests):
        essential = i in (first, total - 1)
        b.add(
            section,
            clip(request, 400 if essential else 200),
            100 if essential else _recency(i, total, 35, 66),
        )
    if focus:
        b.add(section, f"Requested focus for this summary: {clip(focus, 300)}", 100)


def _files(b: _Builder, d: Digest, section: str) -> None:
    for path in d.modified_files:
        b.add(section, f"Modified: {path}", 100)
    for path in d.read_files:
        b.add(section, f"Read: {path}", 70)


def _history(b: _Builder, d: Digest, focus: str | None) -> None:
    _goals(b, d, "## Goal", focus)
    for i, constraint in enumerate(d.constraints):
        b.add("## Constraints & Preferences", constraint, _recency(i, len(d.constraints), 45, 60))
    done = [s for s in d.steps if s.ok is not False]
    for i, step in enumerate(done):
        b.add("### Done", _step_text(step), _recency(i, len(done), 25, 58))
    for step in d.steps:
        if step.ok is None and step is d.steps[-1]:
            b.add("### In Progress", f"{step.label} (no result yet)", 90)
    if d.requests and not d.answered_last_request:
        b.add("### In Progress", clip(d.requests[-1], 300), 90)
    if d.unresolved_error:
        b.add("### Blocked", d.last_error, 100)
    for i, decision in enumerate(d.decisions):
        b.add("## Key Decisions", f"**Decision**: {decision}", _recency(i, len(d.decisions), 40, 62))
    for i, error in enumerate(d.errors):
        last = i == len(d.errors) - 1
        b.add("## Key Decisions", f"**Error**: {error}", 100 if last else _recency(i, len(d.errors), 45, 68))
    if d.requests:
        b.add("## Next Steps", f"Continue with the latest request: {clip(d.requests[-1], 300)}", 95)
    if d.unresolved_error:
        b.add("## Next Steps", f"Resolve: {d.last_error}", 92)
    _files(b, d, "## Critical Context")
    for note in d.notes:
        b.add("## Critical Context", note, 75)
    if d.last_error:
        b.add("## Critical Context", f"Last error: {d.last_error}", 100)


def _branch(b: _Builder, d: Digest, focus: str | None) -> None:
    _goals(b, d, "## Goal", focus)
    for i, step in enumerate(d.steps):
        mark = "[ ]" if step.ok is False else "[x]"
        b.add("## Progress", f"{mark} {_step_text(step)}", _recency(i, len(d.steps), 30, 60))
    if d.requests and not d.answered_last_request:
        b.add("## Progress", f"[ ] {clip(d.requests[-1], 300)}", 90)
    for i, error in enumerate(d.errors):
        last = i == len(d.errors) - 1
        b.add("## Key Learnings", f"**Error**: {error}", 100 if last else _recency(i, len(d.errors), 50, 70))
    for i, decision in enumerate(d.decisions):
        b.add("## Key Learnings", decision, _recency(i, len(d.decisions), 40, 65))
    for note in d.notes:
        b.add("## Key Learnings", note, 60)
    _files(b, d, "## Key Learnings")
    if d.unresolved_error:
        reason = f"The last attempt failed and was not resolved on this branch: {d.last_error}"
    elif d.requests:
        reason = f"(unclear) The branch ends after the request: {clip(d.requests[-1], 300)}"
    else:
        reason = "(unclear)"
    b.add("## Why Abandoned", reason, 100)


def _prefix(b: _Builder, d: Digest) -> None:
    if d.requests:
        b.add("## Original Request", clip(d.requests[0], 600), 100)
    for request in d.requests[1:]:
        b.add("## Original Request", clip(request, 240), 60)
    for i, step in enumerate(d.steps):
        b.add("## Early Progress", _step_text(step), _recency(i, len(d.steps), 30, 60))
    for i, decision in enumerate(d.decisions):
        b.add("## Early Progress", decision, _recency(i, len(d.decisions), 40, 62))
    _files(b, d, "## Context for Suffix")
    if d.last_error:
        b.add("## Context for Suffix", f"Last error: {d.last_error}", 100)
    if d.last_assistant_text:
        b.add("## Context for Suffix", f"Last assistant note: {clip(d.last_assistant_text, 300)}", 80)


_HEADING = re.compile(r"^(#{2,3}) (.+)$")


def _previous_sections(summary: str) -> list[tuple[str, str]]:
    """``(heading, item)`` pairs of an earlier summary; text outside known headings goes to Critical Context."""
    body = strip_file_blocks(summary).replace(f"---\n\n{SPLIT_TURN_HEADING}", "")
    pairs: list[tuple[str, str]] = []
    heading = ""
    for raw in body.split("\n"):
        line = raw.strip()
        match = _HEADING.match(line)
        if match:
            heading = f"{match.group(1)} {match.group(2)}"
            continue
        if not line or line == "(none)":
            continue
        item = _MARKER.sub("", line)
        if heading in _HISTORY and heading not in _CONTAINERS:
            pairs.append((heading, item))
        else:
            label = heading.lstrip("# ") if heading else "Earlier summary"
            pairs.append(("## Critical Context", f"{label}: {clip(item, 300)}"))
    return pairs


def _merge_previous(b: _Builder, previous: str) -> None:
    keep = {
        "## Goal": 85,
        "## Constraints & Preferences": 55,
        "### Done": 30,
        "### In Progress": 40,
        "## Key Decisions": 45,
        "## Critical Context": 60,
    }
    for heading, item in _previous_sections(previous):
        if heading in keep:
            b.add(heading, item, keep[heading])


def summarize_offline(
    kind: SummaryKind,
    messages: Sequence[dict[str, Any]],
    *,
    previous_summary: str | None = None,
    focus: str | None = None,
    max_tokens: int = 0,
) -> str:
    """The summary text for ``kind`` (``history``, ``turn_prefix``, ``branch``), at most ``max_tokens`` × 4
    characters (0 = unbounded). A previous summary's items are carried over, the new ones added after them."""
    digest = digest_messages(messages)
    if kind == "branch":
        builder = _Builder(_BRANCH)
        _branch(builder, digest, focus)
    elif kind == "turn_prefix":
        builder = _Builder(_PREFIX)
        _prefix(builder, digest)
    else:
        builder = _Builder(_HISTORY)
        if previous_summary:
            _merge_previous(builder, previous_summary)
        _history(builder, digest, focus)
    return builder.render(max_tokens * 4 if max_tokens > 0 else 0)


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
