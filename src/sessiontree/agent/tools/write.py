"""The ``write`` tool (pi's shape ``{path, content}``): create or overwrite a file, making parent directories.

Writes one file; not safe to repeat blindly after an interrupted run.
"""

from __future__ import annotations

from typing import Any

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import in_thread, object_schema, text_result
from ._paths import Workspace

__all__ = ["write_tool"]

SCHEMA = object_schema(
    {
        "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
    ["path", "content"],
)

DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically "
    "creates parent directories."
)

SNIPPET = "Create a file, or replace everything in one"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = ("Use write for new files and complete rewrites only.",)
"""Its bullets in the system prompt's rules."""


def _write(ws: Workspace, path: str, content: str) -> ToolResult:
    absolute = ws.resolve(path)
    if absolute.is_dir():
        raise IsADirectoryError(f"Cannot write {path}: it is a directory")
    absolute.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8", "surrogatepass")
    absolute.write_bytes(data)
    return text_result(f"Successfully wrote {len(data)} bytes to {path}")


def write_tool(ws: Workspace) -> AgentTool:
    """pi's ``write`` over ``ws``."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> ToolResult:
        return await in_thread(_write, ws, args["path"], args["content"], signal=signal, mutates=True)

    return AgentTool(
        "write",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="write",
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
