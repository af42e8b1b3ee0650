"""The ``grep`` tool (pi's shape ``{pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}``):
``file:line: text`` for each match (``file-line- text`` for context lines), ``.gitignore`` honoured, binary
files skipped, at most 100 matches, long lines cut at 500 characters.

Pure Python ``re`` (no ripgrep). Reads only; safe to repeat after an interrupted run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import in_thread, object_schema, text_result
from ._paths import Workspace
from ._truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line
from ._walk import glob_regex, walk
from .ls import limited

__all__ = ["grep_tool"]

DEFAULT_LIMIT = 100
SCHEMA = object_schema(
    {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
        "glob": {
            "type": "string",
            "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'",
        },
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"},
    },
    ["pattern"],
)
DESCRIPTION = (
    "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects "
    f".gitignore. Output is truncated to {DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB (whichever "
    f"is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
)

SNIPPET = "Search file contents for a pattern (files ignored by .gitignore are skipped)"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = ()
"""Its bullets in the system prompt's rules."""


def _text_lines(path: Path) -> list[str] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _grep(ws: Workspace, args: dict[str, Any], signal: AbortSignal | None) -> ToolResult:
    shown = args.get("path") or "."
    root = ws.resolve(shown)
    if not root.exists():
        raise FileNotFoundError(f"Path not found: {shown}")
    flags = re.IGNORECASE if args.get("ignoreCase") else 0
    source = str(args["pattern"])
    try:
        regex = re.compile(re.escape(source) if args.get("literal") else source, flags)
    except re.error as exc:
        raise ValueError(f"Invalid regular expression {source!r}: {exc}") from None
    file_glob = args.get("glob")
    glob = glob_regex(file_glob) if file_glob else None
    context = max(0, int(args.get("context") or 0))
    limit = max(1, int(args.get("limit") or DEFAULT_LIMIT))
    files = (
        [(root, root.name)]
        if root.is_file()
        else [
            (p, p.relative_to(root).as_posix())
            for p, is_dir in walk(root, stop=lambda: bool(signal and signal.aborted))
            if not is_dir
        ]
    )
    out: list[str] = []
    matches = 0
    long_lines = False
    for path, relative in files:
        if glob is not None and not glob.match(relative if "/" in file_glob else path.name):  # type: ignore[operator]
            continue
        lines = _text_lines(path)
        if lines is None:
            continue
        for number, line in enumerate(lines, 1):
            if not regex.search(line):
                continue
            if matches >= limit:
                break
            matches += 1
            for k in range(max(1, number - context), min(len(lines), number + context) + 1):
                text, cut = truncate_line(lines[k - 1])
                long_lines = long_lines or cut
                out.append(f"{relative}:{k}: {text}" if k == number else f"{relative}-{k}- {text}")
        if matches >= limit:
            break
    if not matches:
        return text_result("No matches found")
    notices, details = [], {}
    if long_lines:
        notices.append(
            f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        )
        details["linesTruncated"] = True
    return limited(
        out,
        limit=limit,
        noun="matches",
        key="matchLimitReached",
        reached=matches >= limit,
        notices=notices,
        details=details,
    )


def grep_tool(ws: Workspace) -> AgentTool:
    """pi's ``grep`` over ``ws``."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> ToolResult:
        return await in_thread(_grep, ws, args, signal, signal=signal)

    return AgentTool(
        "grep",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="grep",
        repeatable=True,
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
