"""Presentation helpers shared by the CLI and tools: flat tree rows, one-line entry previews.

Turns tree nodes and entries into plain data; prints nothing and reads no files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["TreeRow", "entry_preview", "message_text", "tree_rows"]


class _Node(Protocol):
    @property
    def entry(self) -> dict[str, Any]: ...

    @property
    def children(self) -> Sequence[_Node]: ...

    @property
    def label(self) -> str | None: ...

    @property
    def label_timestamp(self) -> str | None: ...


class TreeRow:
    """One node of a tree in pre-order: depth, indent (branch nesting), ids, label, child ids."""

    __slots__ = ("children", "depth", "entry", "indent", "label", "label_timestamp", "last_sibling")

    def __init__(
        self,
        entry: dict[str, Any],
        depth: int,
        indent: int,
        label: str | None,
        label_timestamp: str | None,
        children: list[str],
        last_sibling: bool,
    ) -> None:
        self.entry = entry
        self.depth = depth
        self.indent = indent
        self.label = label
        self.label_timestamp = label_timestamp
        self.children = children
        self.last_sibling = last_sibling

    def to_dict(self) -> dict[str, Any]:
        """The row as conformance ``tree.json`` nodes: id, type, parentId, depth, label, children."""
        return {
            "id": self.entry.get("id"),
            "type": self.entry.get("type"),
            "parentId": self.entry.get("parentId"),
            "depth": self.depth,
            "label": self.label,
            "labelTimestamp": self.label_timestamp,
            "children": self.children,
        }


def tree_rows(roots: Sequence[_Node]) -> list[TreeRow]:
    """Pre-order rows of a forest, iteratively (trees can be tens of thousands of levels deep).

    ``indent`` grows only at branch points, so a long linear conversation stays flat.
    """
    rows: list[TreeRow] = []
    stack: list[tuple[_Node, int, int, bool]] = [
        (r, 0, 0 if len(roots) == 1 else 1, i == len(roots) - 1) for i, r in reversed(list(enumerate(roots)))
    ]
    while stack:
        node, depth, indent, last = stack.pop()
        children = node.children
        rows.append(
            TreeRow(
                node.entry,
                depth,
                indent,
                node.label,
                node.label_timestamp,
                [str(c.entry.get("id")) for c in children],
                last,
            )
        )
        child_indent = indent + 1 if len(children) > 1 else indent
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i], depth + 1, child_indent, i == len(children) - 1))
    return rows


def message_text(content: Any) -> str:
    """The text of a message ``content`` (string, or text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "thinking":
                parts.append(f"(thinking) {block.get('thinking', '')}")
            elif kind == "toolCall":
                parts.append(f"{block.get('name')}({_short_args(block.get('arguments'))})")
            elif kind == "image":
                parts.append("[image]")
        return " ".join(p for p in parts if p)
    return ""


def _short_args(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    return ", ".join(
        f"{k}={v!r}" if not isinstance(v, str) else f"{k}={v[:40]!r}" for k, v in arguments.items()
    )


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def entry_preview(entry: dict[str, Any], width: int = 80) -> str:
    """A one-line description of an entry: role or type, then its text."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            message = {}
        role = message.get("role", "?")
        if role == "toolResult":
            body = f"{message.get('toolName')}: {message_text(message.get('content'))}"
        elif role == "bashExecution":
            body = f"$ {message.get('command')}"
        else:
            body = message_text(message.get("content"))
        if role == "assistant" and message.get("stopReason") in ("error", "aborted"):
            body = f"[{message.get('stopReason')}] {message.get('errorMessage') or body}"
        return f"{role}: {_one_line(body, width)}"
    if kind == "model_change":
        return f"model → {entry.get('provider')}/{entry.get('modelId')}"
    if kind == "thinking_level_change":
        return f"thinking → {entry.get('thinkingLevel')}"
    if kind == "active_tools_change":
        return f"tools → {', '.join(map(str, entry.get('activeToolNames') or []))}"
    if kind == "compaction":
        return f"compaction ({entry.get('tokensBefore')} tokens before): {_one_line(str(entry.get('summary', '')), width)}"
    if kind == "branch_summary":
        return f"branch summary: {_one_line(str(entry.get('summary', '')), width)}"
    if kind == "label":
        return f"label {entry.get('targetId')} = {entry.get('label', '(cleared)')}"
    if kind == "session_info":
        return f"name = {entry.get('name')}"
    if kind == "custom_message":
        return f"custom[{entry.get('customType')}]: {_one_line(message_text(entry.get('content')), width)}"
    if kind == "custom":
        return f"custom[{entry.get('customType')}]"
    if kind == "leaf":
        return f"leaf → {entry.get('targetId')}"
    return f"{kind}"
