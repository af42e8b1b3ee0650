"""The ``edit`` tool (pi's current shape ``{path, edits: [{oldText, newText}]}``, the older
``{path, oldText, newText}`` accepted): exact, unique, non-overlapping replacements matched against the
original file, line endings and BOM kept, a display diff and a unified patch in ``details``.

Changes one file; not safe to repeat blindly after an interrupted run.
"""

from __future__ import annotations

import itertools
from typing import Any

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import in_thread, object_schema, text_result
from ._diff import display_diff, unified_patch
from ._paths import Workspace
from .read import load_text

__all__ = ["apply_edits", "edit_tool", "prepare_edit_arguments"]

_EDIT = {
    "type": "object",
    "properties": {
        "oldText": {
            "type": "string",
            "description": "Exact text for one targeted replacement. It must be unique in the original file "
            "and must not overlap with any other edits[].oldText in the same call.",
        },
        "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
    },
    "required": ["oldText", "newText"],
    "additionalProperties": False,
}

SCHEMA = object_schema(
    {
        "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
        "edits": {
            "type": "array",
            "items": _EDIT,
            "description": "One or more targeted replacements. Each edit is matched against the original file, "
            "not incrementally. Do not include overlapping or nested edits.",
        },
    },
    ["path", "edits"],
)

DESCRIPTION = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, "
    "non-overlapping region of the original file. If two changes affect the same block or nearby lines, "
    "merge them into one edit instead of emitting overlapping edits."
)

SNIPPET = "Replace exact pieces of text in a file, several separate pieces per call"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = (
    "Keep changes targeted with edit, and make all the changes to one file in a single call.",
    "Every edits[].oldText must occur exactly once in the file as it is now; keep each one short and never let two of them overlap.",
)
"""Its bullets in the system prompt's rules."""


def prepare_edit_arguments(raw: Any) -> Any:
    """Accept the older ``oldText``/``newText`` shape (and ``edits`` sent as a JSON string)."""
    if not isinstance(raw, dict):
        return raw
    args = dict(raw)
    if isinstance(args.get("edits"), str):
        from sessiontree.format.pi_json import loads

        try:
            parsed = loads(args["edits"])
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
    if isinstance(args.get("oldText"), str) and isinstance(args.get("newText"), str):
        edits = list(args.get("edits") or []) if isinstance(args.get("edits"), list) else []
        edits.append({"oldText": args.pop("oldText"), "newText": args.pop("newText")})
        args["edits"] = edits
    return args


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def apply_edits(content: str, edits: list[dict[str, str]], path: str) -> str:
    """``content`` (LF line endings) with every edit applied at its unique place in the original."""
    if not edits:
        raise ValueError("Edit tool input is invalid. edits must contain at least one replacement.")
    one = len(edits) == 1
    spans: list[tuple[int, int, str, int]] = []
    for index, edit in enumerate(edits):
        old, new = _lf(edit["oldText"]), _lf(edit["newText"])
        name = "the text" if one else f"edits[{index}]"
        if not old:
            raise ValueError(f"{'oldText' if one else name + '.oldText'} must not be empty in {path}.")
        count = content.count(old)
        if count == 0:
            raise ValueError(
                f"Could not find {name} in {path}. The old text must match exactly including all whitespace "
                "and newlines."
            )
        if count > 1:
            raise ValueError(
                f"Found {count} occurrences of {name} in {path}. The text must be unique. Please provide more "
                "context to make it unique."
            )
        start = content.index(old)
        spans.append((start, start + len(old), new, index))
    spans.sort()
    for (_s1, e1, _, i1), (s2, _, _, i2) in itertools.pairwise(spans):
        if s2 < e1:
            raise ValueError(f"edits[{i1}] and edits[{i2}] overlap in {path}. Merge them into one edit.")
    out: list[str] = []
    position = 0
    for start, end, new, _ in spans:
        out.append(content[position:start])
        out.append(new)
        position = end
    out.append(content[position:])
    result = "".join(out)
    if result == content:
        raise ValueError(f"No changes made to {path}. The replacement produced identical content.")
    return result


def _edit(ws: Workspace, path: str, edits: list[dict[str, str]]) -> ToolResult:
    absolute = ws.resolve(path)
    raw = load_text(absolute, path)
    bom = "\ufeff" if raw.startswith("\ufeff") else ""
    text = raw[len(bom) :]
    first_break = text.find("\n")
    crlf = first_break > 0 and text[first_break - 1] == "\r"
    before = _lf(text)
    after = apply_edits(before, edits, path)
    final = bom + (after.replace("\n", "\r\n") if crlf else after)
    absolute.write_bytes(final.encode("utf-8", "surrogatepass"))
    diff, first_changed = display_diff(before, after)
    details = {"diff": diff, "patch": unified_patch(path, before, after), "firstChangedLine": first_changed}
    return text_result(f"Successfully replaced {len(edits)} block(s) in {path}.", details)


def edit_tool(ws: Workspace) -> AgentTool:
    """pi's ``edit`` over ``ws``."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> ToolResult:
        return await in_thread(_edit, ws, args["path"], list(args["edits"]), signal=signal, mutates=True)

    return AgentTool(
        "edit",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="edit",
        prepare_arguments=prepare_edit_arguments,
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
