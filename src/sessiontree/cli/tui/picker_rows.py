"""Rows of the ``/resume`` and ``/fork`` pickers: sessions threaded by ``parentSession`` as pi's resume picker
shows them (a flat list, newest first, while searching), and the user messages a fork can start before.

Plain functions over ``SessionInfo`` and entries; they read nothing from disk and write nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sessiontree.format.safe_text import one_line

from .entry_text import text_of

__all__ = ["PickItem", "age", "fork_items", "matches", "session_items", "window"]

_TEXT = 200


@dataclass(frozen=True, slots=True)
class PickItem:
    """One row: what picking it returns (``key``), its tree prefix, its text, what is right-aligned, a style."""

    key: str
    text: str
    prefix: str = ""
    right: str = ""
    style: str = ""


def window(selected: int, total: int, size: int) -> range:
    """The rows to draw: ``size`` of ``total``, the selection in the middle where it can be (as pi scrolls)."""
    start = max(0, min(selected - size // 2, total - size))
    return range(start, min(start + size, total))


def age(when: datetime, now: datetime | None = None) -> str:
    """pi's short age: ``now``, ``5m``, ``3h``, ``2d``, ``1w``, ``4mo``, ``1y``."""
    now = now or datetime.now(UTC)
    seconds = (now - when).total_seconds()
    minutes, hours, days = seconds / 60, seconds / 3600, seconds / 86400
    if minutes < 1:
        return "now"
    if minutes < 60:
        return f"{int(minutes)}m"
    if hours < 24:
        return f"{int(hours)}h"
    if days < 7:
        return f"{int(days)}d"
    if days < 30:
        return f"{int(days // 7)}w"
    if days < 365:
        return f"{int(days // 30)}mo"
    return f"{int(days // 365)}y"


def matches(query: str, haystack: str) -> bool:
    """Whether every word of ``query`` is in ``haystack`` (case-insensitive)."""
    lower = haystack.lower()
    return all(word in lower for word in query.lower().split())


def _item(info: Any, prefix: str, current: str | None, now: datetime) -> PickItem:
    name = info.name
    text = one_line(name or info.first_message or "(no messages)", _TEXT)
    style = "current" if current is not None and str(info.path) == current else "named" if name else ""
    return PickItem(str(info.path), text, prefix, f"{info.message_count} {age(info.modified, now)}", style)


def session_items(
    infos: Sequence[Any], query: str = "", current: str | None = None, *, now: datetime | None = None
) -> list[PickItem]:
    """Sessions as picker rows: threaded (a fork under the session it came from, newest first at every level)
    without a query; with one, the sessions whose name or messages hold every word, newest first."""
    now = now or datetime.now(UTC)
    if query.strip():
        found = [
            i
            for i in infos
            if matches(
                query, " ".join([i.name or "", i.first_message or "", i.all_messages_text or "", i.id])
            )
        ]
        found.sort(key=lambda i: i.modified, reverse=True)
        return [_item(i, "", current, now) for i in found]
    by_key: dict[str, Any] = {}
    for info in infos:
        by_key[str(info.path)] = info
        by_key.setdefault(str(info.id), info)
    children: dict[str, list[Any]] = {}
    roots: list[Any] = []
    for info in infos:
        parent = by_key.get(str(info.parent_session_path)) if info.parent_session_path else None
        if parent is not None and parent is not info:
            children.setdefault(str(parent.path), []).append(info)
        else:
            roots.append(info)
    out: list[PickItem] = []
    stack: list[tuple[Any, str, bool, int]] = [
        (r, "", i == len(roots) - 1, 0) for i, r in enumerate(sorted(roots, key=lambda i: i.modified))
    ]
    seen: set[str] = set()
    while stack:
        info, lead, last, depth = stack.pop()
        if str(info.path) in seen:
            continue  # a parent cycle: show each session once
        seen.add(str(info.path))
        out.append(_item(info, lead + ("" if depth == 0 else "└─ " if last else "├─ "), current, now))
        kids = sorted(children.get(str(info.path), []), key=lambda i: i.modified, reverse=True)
        below = lead if depth == 0 else lead + ("   " if last else "│  ")
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], below, i == len(kids) - 1, depth + 1))
    return out


def fork_items(entries: Iterable[dict[str, Any]], query: str = "") -> list[PickItem]:
    """The user messages with text, newest first (pi's ``/fork`` list; every branch of the file)."""
    items: list[PickItem] = []
    for entry in entries:
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = text_of(message.get("content"))
        if text.strip() and matches(query, text):
            items.append(PickItem(str(entry.get("id")), one_line(text, _TEXT), right=str(entry.get("id"))))
    items.reverse()
    return items
