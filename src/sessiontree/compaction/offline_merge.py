"""Earlier summaries read back into items, so the offline summarizer can merge them into a new summary.

Parses the layouts sessiontree and pi write: the history layout (``## Goal`` … ``## Critical Context``), the
turn-prefix layout (``## Original Request`` / ``## Early Progress`` / ``## Context for Suffix``), the
split-turn joiner, branch summaries (``## Goal`` / ``## Progress`` / ``## Key Learnings`` /
``## Why Abandoned``) with their preamble or wrappers, and the ``<read-files>`` / ``<modified-files>``
blocks. Each item is routed to a slot (goal, done, decision, …) of the summary being built, and each path to
the file tracking.

Pure text work, deterministic: no model, no I/O. It drops placeholders ("(none)", "No prior history."),
list markers and wrappers, but never rewords an item beyond a short label.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..llm.convert import BRANCH_SUMMARY_PREFIX
from .offline_digest import Digest, clip, file_blocks, strip_file_blocks, unwrap_summary
from .prompts import BRANCH_SUMMARY_PREAMBLE, NO_PRIOR_HISTORY, SPLIT_TURN_HEADING

__all__ = ["FileTracker", "ParsedSummary", "Slot", "merge_abandoned", "merge_earlier", "parse_summary"]

Slot = Literal[
    "goal", "constraint", "done", "open", "blocked", "decision", "error", "learning", "abandoned", "next",
    "context",
]  # fmt: skip
Put = Callable[[Slot, str, int], None]

_SECTIONS = {
    "goal": "goal",
    "goals": "goal",
    "constraints & preferences": "constraints",
    "constraints": "constraints",
    "progress": "progress",
    "done": "done",
    "in progress": "in_progress",
    "blocked": "blocked",
    "key decisions": "decisions",
    "decisions": "decisions",
    "next steps": "next",
    "critical context": "context",
    "original request": "goal",
    "early progress": "done",
    "context for suffix": "context",
    "key learnings": "learnings",
    "learnings": "learnings",
    "why abandoned": "why",
}
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*:?\s*$|^\*\*([^*]+?):?\*\*:?$")
_CHECKBOX = re.compile(r"^(?:[-*+]\s+)?\[([ xX])\]\s+")
_MARKER = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+)")
_MORE = re.compile(r"^\(\d+ more not shown\)$")
_LABEL = re.compile(r"^\*\*([^*]+)\*\*:\s*(.*)$")
_LEGACY_FAILURE = re.compile(r" → failed: ")  # how failed steps were written before they were labelled
_FILE_ITEM = re.compile(r"^(Modified|Read)( on an abandoned branch)?: (.+)$")
_SKIP = {
    "(none)",
    "---",
    NO_PRIOR_HISTORY,
    SPLIT_TURN_HEADING,
    "<summary>",
    "</summary>",
    *(line.strip() for line in BRANCH_SUMMARY_PREAMBLE.split("\n")),
    *(line.strip() for line in BRANCH_SUMMARY_PREFIX.split("\n")),
}


@dataclass(slots=True)
class ParsedSummary:
    """An earlier summary as ``section -> items`` (sections named as in ``_SECTIONS``) plus its file lists.

    Progress items of the branch layout land in ``done`` (``[x]``) or ``in_progress`` (``[ ]``); lines under
    an unknown heading or under none land in ``other``, labelled with their heading.
    """

    sections: dict[str, list[str]] = field(default_factory=dict)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)

    def items(self, *names: str) -> list[str]:
        return [item for name in names for item in self.sections.get(name, [])]


def parse_summary(text: str) -> ParsedSummary:
    """Read a summary of any known layout (wrapped or not, split-turn or not) into sections."""
    wrapped = unwrap_summary(text)
    body = wrapped[1] if wrapped else text
    parsed = ParsedSummary()
    parsed.read_files, parsed.modified_files = file_blocks(body)
    section, label = "other", ""
    for raw in strip_file_blocks(body).split("\n"):
        line = raw.strip()
        heading = _HEADING.match(line)
        if heading:
            name = (heading.group(1) or heading.group(2) or "").strip().lower()
            if heading.group(1) or name in _SECTIONS:
                section, label = _SECTIONS.get(name, "other"), "" if name in _SECTIONS else name
                continue
        if not line or line in _SKIP or line.startswith("```"):
            continue
        box = _CHECKBOX.match(line)
        item = (line[box.end() :] if box else _MARKER.sub("", line)).strip()
        if not item or item == "(none)" or _MORE.match(item):
            continue
        target = section
        if section == "progress":
            target = "in_progress" if box and box.group(1) == " " else "done"
        if target == "other" and label:
            item = f"{label.capitalize()}: {item}"
        parsed.sections.setdefault(target, []).append(item)
    return parsed


@dataclass(slots=True)
class FileTracker:
    """Paths read or modified, on the current path or on abandoned branches; each reported once."""

    modified: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    abandoned_modified: list[str] = field(default_factory=list)
    abandoned_read: list[str] = field(default_factory=list)

    def add(self, path: str, *, modified: bool, abandoned: bool = False) -> None:
        target = {
            (True, False): self.modified,
            (False, False): self.read,
            (True, True): self.abandoned_modified,
            (False, True): self.abandoned_read,
        }[(modified, abandoned)]
        if path and path not in target:
            target.append(path)

    def lines(self) -> list[tuple[str, int]]:
        """``(text, priority)`` per path: modified first, a path listed only under its strongest use."""
        seen: set[str] = set()
        out: list[tuple[str, int]] = []
        groups = [
            (self.modified, "Modified", 100),
            (self.read, "Read", 70),
            (self.abandoned_modified, "Modified on an abandoned branch", 65),
            (self.abandoned_read, "Read on an abandoned branch", 40),
        ]
        for paths, label, priority in groups:
            for path in paths:
                if path not in seen:
                    seen.add(path)
                    out.append((f"{label}: {path}", priority))
        return out


def _track_item(item: str, files: FileTracker, abandoned: bool) -> bool:
    """Add a ``Modified: path`` / ``Read: path`` item to the tracker; False when it is not one."""
    match = _FILE_ITEM.match(item)
    if not match:
        return False
    files.add(
        match.group(3).strip(),
        modified=match.group(1) == "Modified",
        abandoned=abandoned or bool(match.group(2)),
    )
    return True


def _labelled(put: Put, item: str, default: Slot, priority: int, *, abandoned: bool = False) -> None:
    """Route an item by its bold label (``**Error**:``, ``**Decision**:``, …), else to ``default``.

    With ``abandoned`` an error is kept as a learning marked as met on an abandoned branch, so it is not
    taken for a failure of the current path.
    """
    match = _LABEL.match(item)
    label = match.group(1).strip().lower() if match else ""
    rest = match.group(2).strip() if match else item
    if label == "error" and abandoned:
        put("learning", f"**Error on the abandoned branch**: {rest}", priority)
    elif label == "error":
        put("error", rest, priority + 10)
    elif not match and default == "done" and _LEGACY_FAILURE.search(item):
        put("error", _LEGACY_FAILURE.sub(" failed: ", item), priority + 10)
    elif label == "decision":
        put("decision", rest, priority)
    elif label == "abandoned approach":
        put("abandoned", rest, priority + 10)
    elif label == "learning":
        put("learning", rest, priority)
    else:
        put(default, item, priority)


def merge_earlier(text: str, out: Put, files: FileTracker, new: Digest, *, branch: bool = False) -> None:
    """Carry an earlier compaction summary's items into the summary being built after it.

    ``new`` is what the newer messages show: earlier in-progress items count as done once the newer messages
    end with an answer and no open error, earlier blockers become past errors once work moved on, and earlier
    next steps, last error and last note give way to newer ones. With ``branch`` the items describe an
    abandoned branch's earlier part (no next steps, no constraints).
    """
    parsed = parse_summary(text)
    for path in parsed.modified_files:
        files.add(path, modified=True)
    for path in parsed.read_files:
        files.add(path, modified=False)
    carried: list[str] = []

    def put(slot: Slot, item: str, priority: int) -> None:
        if slot == "error":
            carried.append(item)
        out(slot, item, priority)

    for i, goal in enumerate(parsed.items("goal")):
        put("goal", clip(goal, 400), 100 if i == 0 else 80)
    if not branch:
        for item in parsed.items("constraints"):
            put("constraint", item, 55)
    for item in parsed.items("done"):
        _labelled(put, item, "done", 30)
    finished = new.answered_last_request and not new.unresolved_error
    for item in parsed.items("in_progress"):
        if finished:
            _labelled(put, item.removesuffix(" (no result yet)"), "done", 40)
        else:
            _labelled(put, item, "open", 40)
    for item in parsed.items("blocked"):
        _labelled(put, item, "error" if new.acted else "blocked", 60)
    for item in parsed.items("decisions", "learnings"):
        _labelled(put, item, "decision", 45)
    if not branch and not new.requests:
        for item in parsed.items("next"):
            if not (new.acted and item.startswith("Resolve")):
                put("next", item, 50)
    for item in parsed.items("context", "other"):
        if _track_item(item, files, abandoned=False):
            continue
        if item.startswith("Last error: "):
            error = item.removeprefix("Last error: ")
            # Usually the same error as one already carried (older layouts worded the step differently).
            if not any(error.endswith(e.rpartition(" failed: ")[2]) for e in carried):
                put("error", error, 50)
            continue
        if item.startswith("Last assistant note: ") and (new.last_assistant_text or branch):
            continue
        put("context", clip(item, 300), 55)


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:] if len(text) > 1 and text[0].isupper() and text[1].islower() else text


def merge_abandoned(text: str, put: Put, files: FileTracker) -> None:
    """An abandoned branch's summary as short learnings: what was tried and why it was left, what it taught.

    Its progress is not carried (it does not describe the current state); its files are tracked as touched
    on an abandoned branch.
    """
    parsed = parse_summary(text)
    for path in parsed.modified_files:
        files.add(path, modified=True, abandoned=True)
    for path in parsed.read_files:
        files.add(path, modified=False, abandoned=True)
    goals = [clip(g, 200).rstrip(".") for g in parsed.items("goal")]
    reasons = [r for r in parsed.items("why") if not r.lower().startswith("(unclear)")]
    if goals:
        approach = "; ".join(goals[:2]) + (f" (+{len(goals) - 2} more)" if len(goals) > 2 else "")
        reason = f" — {_lower_first(clip(' '.join(reasons), 240))}" if reasons else ""
        put("abandoned", approach + reason, 85)
    elif reasons:
        put("abandoned", clip(" ".join(reasons), 300), 80)
    for item in parsed.items("learnings", "decisions", "context", "other"):
        if _track_item(item, files, abandoned=True):
            continue
        _labelled(put, clip(item, 300), "learning", 60, abandoned=True)
