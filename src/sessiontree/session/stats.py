"""Figures about one session, as pi's ``/session`` shows them: entries, branches, messages by role, tokens and
cost, for the whole file and for the active branch.

Reads the session through the manager (entries decoded once, in file order); never writes, accepts any JSON
value in any field (a number that is not one counts as 0).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = ["SessionStats", "UsageTotals", "session_stats"]


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


@dataclass
class UsageTotals:
    """Messages by role, tool calls, and the token usage and cost the provider reported on assistant replies."""

    messages: int = 0
    by_role: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: float = 0.0

    def add(self, entries: Iterable[Mapping[str, Any]]) -> UsageTotals:
        """Count the ``message`` entries among ``entries``."""
        roles: Counter[str] = Counter(self.by_role)
        for entry in entries:
            if entry.get("type") != "message":
                continue
            message = entry.get("message")
            if not isinstance(message, dict):
                continue
            self.messages += 1
            role = message.get("role")
            roles[role if isinstance(role, str) else "?"] += 1
            if role != "assistant":
                continue
            content = message.get("content")
            if isinstance(content, list):
                self.tool_calls += sum(
                    1 for b in content if isinstance(b, dict) and b.get("type") == "toolCall"
                )
            usage = message.get("usage")
            if not isinstance(usage, dict):
                continue
            self.input += int(_num(usage.get("input")))
            self.output += int(_num(usage.get("output")))
            self.cache_read += int(_num(usage.get("cacheRead")))
            self.cache_write += int(_num(usage.get("cacheWrite")))
            self.total_tokens += int(_num(usage.get("totalTokens")))
            cost = usage.get("cost")
            if isinstance(cost, dict):
                self.cost += _num(cost.get("total"))
        self.by_role = dict(roles)
        return self

    def to_dict(self) -> dict[str, Any]:
        """camelCase JSON shape."""
        return {
            "messages": self.messages,
            "byRole": dict(self.by_role),
            "toolCalls": self.tool_calls,
            "tokens": {
                "input": self.input,
                "output": self.output,
                "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write,
                "total": self.total_tokens,
            },
            "cost": round(self.cost, 6),
        }


@dataclass
class SessionStats:
    """The figures ``session_stats`` gathers."""

    file: str | None
    session_id: str
    name: str | None
    entries: int
    by_type: dict[str, int]
    leaves: int
    branch_points: int
    labels: int
    leaf_id: str | None
    active_entries: int
    context_messages: int
    context_tokens: int
    total: UsageTotals
    active: UsageTotals

    def to_dict(self) -> dict[str, Any]:
        """camelCase JSON shape."""
        return {
            "file": self.file,
            "sessionId": self.session_id,
            "name": self.name,
            "entries": self.entries,
            "byType": dict(self.by_type),
            "leaves": self.leaves,
            "branchPoints": self.branch_points,
            "labels": self.labels,
            "leafId": self.leaf_id,
            "activeBranch": {
                "entries": self.active_entries,
                "contextMessages": self.context_messages,
                "contextTokens": self.context_tokens,
                **self.active.to_dict(),
            },
            "total": self.total.to_dict(),
        }


def session_stats(manager: SessionManager) -> SessionStats:
    """Entries, branches, labels, messages by role, tokens and cost: in total and on the active branch; plus
    the context at the leaf (messages, and tokens estimated as compaction estimates them)."""
    from sessiontree.llm.tokens import estimate_context_tokens

    ids, parents, types = manager.index.envelopes()
    unique = set(ids)
    children: Counter[str] = Counter()
    for entry_id, parent in dict(zip(ids, parents, strict=True)).items():  # last copy of an id wins
        if parent is not None and parent != entry_id and parent in unique:
            children[parent] += 1
    path = manager.get_path_view()
    context = manager.build_session_context()
    return SessionStats(
        file=manager.get_session_file(),
        session_id=manager.get_session_id(),
        name=manager.get_session_name(),
        entries=len(ids),
        by_type=dict(Counter(types)),
        leaves=len(unique) - len(children),
        branch_points=sum(1 for n in children.values() if n > 1),
        labels=len(manager.get_labels()),
        leaf_id=manager.get_leaf_id(),
        active_entries=len(path),
        context_messages=len(context.messages),
        context_tokens=estimate_context_tokens(context.messages).tokens,
        total=UsageTotals().add(manager.get_entries()),
        active=UsageTotals().add(manager.get_branch()),
    )
