"""The ``read`` tool (pi's shape ``{path, offset?, limit?}``): a text file's lines with pi's truncation and
continuation notices, or an image as an attachment; binary files are refused with a clear error.

Reads only; safe to repeat after an interrupted run.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import in_thread, object_schema, text_result
from ._paths import Workspace
from ._truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head

__all__ = ["IMAGE_TYPES", "load_text", "read_tool"]

IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

SCHEMA = object_schema(
    {
        "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
        "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
    ["path"],
)

DESCRIPTION = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as "
    f"attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Use offset/limit for large files. When you need "
    "the full file, continue with offset until complete."
)

SNIPPET = "Show a text file's lines or an image"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = ("Look at files with read, not with cat or sed in bash.",)
"""Its bullets in the system prompt's rules."""


def _image_type(head: bytes) -> str | None:
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in IMAGE_TYPES if head.startswith(magic)), None)


def load_text(path: Path, shown: str) -> str:
    """A file's text; missing files, directories and binary files raise errors that say so."""
    if not path.exists():
        raise FileNotFoundError(f"File not found: {shown}")
    if path.is_dir():
        raise IsADirectoryError(f"Not a file: {shown} is a directory (use ls)")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ValueError(f"Cannot read binary file: {shown}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"Cannot read binary file: {shown} (not UTF-8 text)") from None


def _read(ws: Workspace, path: str, offset: int | None, limit: int | None) -> ToolResult:
    absolute = ws.resolve(path)
    if absolute.is_file():
        with open(absolute, "rb") as f:
            head = f.read(16)
        mime = _image_type(head)
        if mime is not None:
            data = base64.b64encode(absolute.read_bytes()).decode("ascii")
            return ToolResult(
                [
                    {"type": "text", "text": f"Read image file [{mime}]"},
                    {"type": "image", "data": data, "mimeType": mime},
                ]
            )
    lines = load_text(absolute, path).split("\n")
    start = max(0, offset - 1) if offset else 0
    if start >= len(lines):
        raise ValueError(f"Offset {offset} is beyond end of file ({len(lines)} lines total)")
    end = min(start + limit, len(lines)) if limit is not None else len(lines)
    selected = "\n".join(lines[start:end])
    cut = truncate_head(selected)
    first = start + 1
    if cut.first_line_exceeds_limit:
        size = format_size(len(lines[start].encode("utf-8")))
        text = (
            f"[Line {first} is {size}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. Use bash: "
            f"sed -n '{first}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        return text_result(text, {"truncation": cut.to_dict()})
    if cut.truncated:
        last = first + cut.output_lines - 1
        limit_note = "" if cut.truncated_by == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        text = f"{cut.content}\n\n[Showing lines {first}-{last} of {len(lines)}{limit_note}. Use offset={last + 1} to continue.]"
        return text_result(text, {"truncation": cut.to_dict()})
    if limit is not None and end < len(lines):
        return text_result(
            f"{cut.content}\n\n[{len(lines) - end} more lines in file. Use offset={end + 1} to continue.]"
        )
    return text_result(cut.content)


def read_tool(ws: Workspace) -> AgentTool:
    """pi's ``read`` over ``ws``."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> ToolResult:
        offset, limit = args.get("offset"), args.get("limit")
        return await in_thread(
            _read,
            ws,
            args["path"],
            int(offset) if offset is not None else None,
            int(limit) if limit is not None else None,
            signal=signal,
        )

    return AgentTool(
        "read",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="read",
        repeatable=True,
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
