"""Output truncation as pi's tools do it: by lines (2000) and bytes (50 KB), whichever comes first, never
cutting a line except when a single last line is longer than the byte limit.

Pure string arithmetic on UTF-8 byte lengths; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "Truncation",
    "format_size",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500


@dataclass(frozen=True, slots=True)
class Truncation:
    """pi's ``TruncationResult``: the kept content and what was cut."""

    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """The camelCase shape tools put in ``details.truncation``."""
        return {
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _lines(content: str) -> list[str]:
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def format_size(size: int) -> str:
    """``512B``, ``1.5KB``, ``2.0MB`` (pi's wording)."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def _measure(content: str, max_lines: int, max_bytes: int) -> tuple[int, list[str], Truncation | None]:
    """Total bytes, the lines, and the result when nothing needs cutting."""
    size = _bytes(content)
    lines = _lines(content)
    if len(lines) <= max_lines and size <= max_bytes:
        count = len(lines)
        return (
            size,
            lines,
            Truncation(content, False, None, count, size, count, size, False, False, max_lines, max_bytes),
        )
    return size, lines, None


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> Truncation:
    """Keep the first lines that fit (for reading files); a first line over the byte limit keeps nothing."""
    total_bytes, lines, whole = _measure(content, max_lines, max_bytes)
    if whole is not None:
        return whole
    if _bytes(lines[0]) > max_bytes:
        return Truncation("", True, "bytes", len(lines), total_bytes, 0, 0, False, True, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    for i, line in enumerate(lines[:max_lines]):
        cost = _bytes(line) + (1 if i > 0 else 0)
        if used + cost > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += cost
    out = "\n".join(kept)
    return Truncation(
        out, True, by, len(lines), total_bytes, len(kept), _bytes(out), False, False, max_lines, max_bytes
    )


def _tail_of_line(line: str, max_bytes: int) -> str:
    data = line.encode("utf-8", "surrogatepass")
    start = max(0, len(data) - max_bytes)
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1  # start on a character boundary
    return data[start:].decode("utf-8", "surrogatepass")


def truncate_tail(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> Truncation:
    """Keep the last lines that fit (for command output); a last line over the limit keeps its end."""
    total_bytes, lines, whole = _measure(content, max_lines, max_bytes)
    if whole is not None:
        return whole
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        cost = _bytes(line) + (1 if kept else 0)
        if used + cost > max_bytes:
            by = "bytes"
            if not kept:
                kept.append(_tail_of_line(line, max_bytes))
                partial = True
            break
        kept.append(line)
        used += cost
    kept.reverse()
    out = "\n".join(kept)
    return Truncation(
        out, True, by, len(lines), total_bytes, len(kept), _bytes(out), partial, False, max_lines, max_bytes
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """One line cut to ``max_chars`` with a ``... [truncated]`` mark; returns (text, was_truncated)."""
    if len(line) <= max_chars:
        return line, False
    return line[:max_chars] + "... [truncated]", True
