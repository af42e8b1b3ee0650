"""The ``ls`` tool (pi's shape ``{path?, limit?}``): a directory's entries sorted case-insensitively, ``/``
after directories, dotfiles included, at most 500 entries.

Reads only; safe to repeat after an interrupted run.
"""

from __future__ import annotations

import os
from typing import Any

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import in_thread, object_schema, text_result
from ._paths import Workspace
from ._truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

__all__ = ["limited", "ls_tool"]

DEFAULT_LIMIT = 500
SCHEMA = object_schema(
    {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"},
    },
    [],
)
DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. "
    f"Includes dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first)."
)

SNIPPET = "List what a directory holds"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = ()
"""Its bullets in the system prompt's rules."""


def limited(
    lines: list[str],
    *,
    limit: int,
    noun: str,
    key: str,
    reached: bool,
    notices: list[str] | None = None,
    details: dict[str, Any] | None = None,
) -> ToolResult:
    """``lines`` cut to 50 KB, with the notices pi's listing tools append (``reached``: the result limit
    stopped the listing; ``details[key]`` then says which limit)."""
    notices = list(notices or ())
    details = dict(details or {})
    if reached:
        refine = "" if noun == "entries" else ", or refine pattern"
        notices.insert(0, f"{limit} {noun} limit reached. Use limit={limit * 2} for more{refine}")
        details[key] = limit
    cut = truncate_head("\n".join(lines), max_lines=1 << 62)
    if cut.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = cut.to_dict()
    text = cut.content + (f"\n\n[{'. '.join(notices)}]" if notices else "")
    return text_result(text, details or None)


def _ls(ws: Workspace, path: str, limit: int) -> ToolResult:
    directory = ws.resolve(path)
    if not directory.exists():
        raise FileNotFoundError(f"Path not found: {path}")
    if not directory.is_dir():
        raise NotADirectoryError(f"Not a directory: {path}")
    try:
        names = sorted(os.listdir(directory), key=str.lower)
    except OSError as exc:
        raise OSError(f"Cannot read directory: {exc.strerror or exc}") from exc
    entries = [name + ("/" if (directory / name).is_dir() else "") for name in names[:limit]]
    if not entries:
        return text_result("(empty directory)")
    return limited(entries, limit=limit, noun="entries", key="entryLimitReached", reached=len(names) > limit)


def ls_tool(ws: Workspace) -> AgentTool:
    """pi's ``ls`` over ``ws``."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> ToolResult:
        limit = int(args.get("limit") or DEFAULT_LIMIT)
        return await in_thread(_ls, ws, args.get("path") or ".", max(1, limit), signal=signal)

    return AgentTool(
        "ls",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="ls",
        repeatable=True,
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
