"""A session branch as Markdown for pasting: one heading per message, code fences for tool calls and output.

Session text is kept as written (it is usually Markdown already), made display-safe (control characters
escaped), and its raw HTML is shown as text, as the HTML export shows it: outside code blocks and code
spans, ``<`` is written ``&lt;``, so no viewer renders a tag, a script or a comment from the session. The
whole page is read once for that, so a fence left open in one message cannot change what is code in the
next. Fences are longer than any backtick run they enclose. It reads the session and never writes it.
"""

from __future__ import annotations

import re
import string
from typing import TYPE_CHECKING, Any

from sessiontree.format.pi_json import dumps
from sessiontree.format.safe_text import safe_text
from sessiontree.tree.views import entry_preview

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = ["export_markdown"]

_TICKS = re.compile(r"`{3,}")


def _fence(text: str, info: str = "") -> str:
    longest = max((len(m.group()) for m in _TICKS.finditer(text)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _safe(value: Any) -> str:
    return safe_text(value if isinstance(value, str) else dumps(value), keep_newlines=True)


def _no_html(page: str) -> str:
    """``<`` as ``&lt;`` everywhere but in code blocks and code spans (where it shows as it is anyway)."""
    if "<" not in page:
        return page
    from markdown_it import MarkdownIt

    code: set[int] = set()
    for token in MarkdownIt("commonmark", {"html": False}).parse(page):  # the blocks with no HTML in them
        if token.type in ("fence", "code_block") and token.map:
            code.update(range(*token.map))
    lines = page.split("\n")
    return "\n".join(line if n in code else _escape_line(line) for n, line in enumerate(lines))


_PUNCTUATION = frozenset(string.punctuation)


def _escape_line(line: str) -> str:
    """A line outside code blocks: ``<`` escaped except inside a code span that closes on this line (a span
    over several lines is escaped too, which only shows it as ``&lt;``). A table row splits into cells
    before its spans are read, so in a line with a ``|`` every ``<`` is escaped."""
    spans = "|" not in line
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        char = line[i]
        if char == "\\" and i + 1 < n and line[i + 1] in _PUNCTUATION:  # an escaped character stays
            out.append(line[i : i + 2])
            i += 2
        elif char == "`" and spans:
            run_end = i
            while run_end < n and line[run_end] == "`":
                run_end += 1
            close = _closing_run(line, run_end, run_end - i)
            stop = run_end if close < 0 else close + (run_end - i)
            out.append(line[i:stop])
            i = stop
        else:
            out.append("&lt;" if char == "<" else char)
            i += 1
    return "".join(out)


def _closing_run(line: str, start: int, length: int) -> int:
    """Where the next run of exactly ``length`` backticks starts in ``line``, or -1."""
    at = line.find("`" * length, start)
    while at >= 0:
        end = at
        while end < len(line) and line[end] == "`":
            end += 1
        if end - at == length:
            return at
        at = line.find("`" * length, end)
    return -1


def _blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [_safe(content)]
    out = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(_safe(block.get("text", "")))
        elif kind == "thinking":
            thought = _safe(block.get("thinking", ""))
            out.append(
                "\n".join(f"> {line}" if line else ">" for line in ["*Thinking:*", *thought.split("\n")])
            )
        elif kind == "toolCall":
            out.append(
                f"**Tool call** `{_safe(block.get('name'))}`\n\n{_fence(_safe(block.get('arguments')), 'json')}"
            )
        elif kind == "image":
            out.append("*[image]*")
    return out


def _message(message: dict[str, Any]) -> tuple[str, list[str]]:
    role = message.get("role")
    if role == "user":
        return "User", _blocks(message.get("content"))
    if role == "assistant":
        parts = _blocks(message.get("content"))
        if message.get("stopReason") in ("error", "aborted"):
            parts.append(f"*{_safe(message.get('stopReason'))}: {_safe(message.get('errorMessage') or '')}*")
        model = message.get("model")
        return "Assistant" + (f" ({_safe(model)})" if isinstance(model, str) else ""), parts
    if role == "toolResult":
        text = (
            "\n".join(
                _safe(b.get("text", ""))
                for b in message.get("content") or []
                if isinstance(b, dict) and b.get("type") == "text"
            )
            if isinstance(message.get("content"), list)
            else _safe(message.get("content"))
        )
        error = " (error)" if message.get("isError") is True else ""
        return f"Tool result: {_safe(message.get('toolName'))}{error}", [_fence(text)]
    if role == "bashExecution":
        return "Shell command", [
            _fence(f"$ {_safe(message.get('command'))}\n{_safe(message.get('output', ''))}")
        ]
    return _safe(role if isinstance(role, str) else "Message"), _blocks(message.get("content"))


def export_markdown(manager: SessionManager, leaf_id: str | None = None) -> str:
    """The branch ending at ``leaf_id`` (default: the leaf) as Markdown."""
    path = manager.get_branch(leaf_id)
    name = manager.get_session_name()
    lines = [f"# {safe_text(name) if name else 'Session ' + safe_text(manager.get_session_id())}", ""]
    lines.append(f"*{len(path)} entries on this branch; cwd `{safe_text(manager.get_cwd())}`*")
    for entry in path:
        kind = entry.get("type")
        if kind == "message" and isinstance(entry.get("message"), dict):
            heading, parts = _message(entry["message"])
        elif kind == "compaction":
            heading, parts = "Compaction summary", [_safe(entry.get("summary", ""))]
        elif kind == "branch_summary":
            heading, parts = "Summary of an abandoned branch", [_safe(entry.get("summary", ""))]
        elif kind == "custom_message":
            heading, parts = (
                f"Extension message: {_safe(entry.get('customType'))}",
                _blocks(entry.get("content")),
            )
        else:
            lines.extend(["", f"*{entry_preview(entry, 200)}*"])
            continue
        lines.extend(["", f"## {heading}", ""])
        lines.append("\n\n".join(p for p in parts if p))
    return _no_html("\n".join(lines) + "\n")
