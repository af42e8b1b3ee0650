"""The ``find`` tool (pi's shape ``{pattern, path?, limit?}``): files whose name (or relative path, when the
glob has a ``/``) matches, ``.gitignore`` honoured, dotfiles included, at most 1000 results.

Pure Python (no ``fd``). Reads only; safe to repeat after an interrupted run.
"""

from __future__ import annotations

from typing import Any

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import in_thread, object_schema, text_result
from ._paths import Workspace
from ._truncate import DEFAULT_MAX_BYTES
from ._walk import glob_regex, walk
from .ls import limited

__all__ = ["find_tool"]

DEFAULT_LIMIT = 1000
SCHEMA = object_schema(
    {
        "pattern": {
            "type": "string",
            "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
        },
        "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
    },
    ["pattern"],
)
DESCRIPTION = (
    "Search for files by glob pattern. Returns matching file paths relative to the search directory. "
    f"Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first)."
)

SNIPPET = "Find files by glob pattern (files ignored by .gitignore are skipped)"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = ()
"""Its bullets in the system prompt's rules."""


def _find(ws: Workspace, pattern: str, path: str, limit: int, signal: AbortSignal | None) -> ToolResult:
    root = ws.resolve(path)
    if not root.exists():
        raise FileNotFoundError(f"Path not found: {path}")
    regex = glob_regex(pattern)
    full = "/" in pattern
    found: list[str] = []
    stopped = False
    for item, is_dir in walk(root, stop=lambda: bool(signal and signal.aborted)):
        relative = item.relative_to(root).as_posix()
        if regex.match(relative if full else item.name):
            if len(found) >= limit:
                stopped = True
                break
            found.append(relative + ("/" if is_dir else ""))
    if not found:
        return text_result("No files found matching pattern")
    found.sort()
    return limited(found, limit=limit, noun="results", key="resultLimitReached", reached=stopped)


def find_tool(ws: Workspace) -> AgentTool:
    """pi's ``find`` over ``ws``."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> ToolResult:
        limit = max(1, int(args.get("limit") or DEFAULT_LIMIT))
        return await in_thread(
            _find, ws, args["pattern"], args.get("path") or ".", limit, signal, signal=signal
        )

    return AgentTool(
        "find",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="find",
        repeatable=True,
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
