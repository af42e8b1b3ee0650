"""What session search looks at: the text of an entry (message text, summaries, session names), a query's
terms, and a snippet around the first match.

Pure functions on decoded entries; the stores decide how to index and query (FTS5, tsvector, a scan).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["SearchHit", "entry_search_text", "query_terms", "snippet"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One match: the session, the entry and a snippet of the text around the match."""

    session_id: str
    entry_id: str
    snippet: str
    session_name: str | None = None
    location: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (camelCase keys, as the rest of the JSON output)."""
        out: dict[str, Any] = {
            "sessionId": self.session_id,
            "entryId": self.entry_id,
            "snippet": self.snippet,
        }
        if self.session_name is not None:
            out["sessionName"] = self.session_name
        if self.location is not None:
            out["location"] = self.location
        return out


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def entry_search_text(entry: Any) -> str | None:
    """The searchable text of an entry, or ``None`` when it has none (tool calls and thinking are left out)."""
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    text: Any = None
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            role = message.get("role")
            if role in ("user", "assistant", "toolResult", "custom"):
                text = _content_text(message.get("content"))
            elif role == "bashExecution":
                text = f"{message.get('command', '')}\n{message.get('output', '')}"
            elif role in ("branchSummary", "compactionSummary"):
                text = message.get("summary")
    elif kind == "custom_message":
        text = _content_text(entry.get("content"))
    elif kind in ("branch_summary", "compaction"):
        text = entry.get("summary")
    elif kind == "session_info":
        text = entry.get("name")
    return text if isinstance(text, str) and text.strip() else None


_TERM = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """The words of a query, lower-cased (every one must appear for a match)."""
    return [t.lower() for t in _TERM.findall(text)]


def snippet(text: str, terms: list[str], width: int = 120) -> str:
    """About ``width`` characters of ``text`` on one line, around the first term found, with ``…`` cuts."""
    flat = " ".join(text.split())
    lower = flat.lower()
    at = min((i for i in (lower.find(t) for t in terms) if i >= 0), default=0)
    start = max(0, at - width // 3)
    end = min(len(flat), start + width)
    start = max(0, min(start, end - width))
    out = flat[start:end]
    return ("…" if start else "") + out + ("…" if end < len(flat) else "")
