"""Presentation helpers shared by the CLI and tools: flat tree rows with connectors, one-line entry previews.

Turns tree nodes and entries into plain, display-safe data for any JSON value in any field; prints nothing,
reads no files, and every walk is linear in the number of nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import msgspec

from sessiontree.format import pi_json as _json
from sessiontree.format.safe_text import cell_width, cut_to_width, one_line, short_repr

__all__ = [
    "TreeRow",
    "connector_prefix",
    "decode_for_preview",
    "decode_run_for_preview",
    "entry_preview",
    "entry_role",
    "message_text",
    "tree_rows",
]


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
    """One node of a tree in pre-order: depth, indent (branch nesting), ids, label, child ids, connectors.

    ``guides`` has one flag per nesting level (``indent`` of them): whether the branch at that level is the
    last of its siblings (no line continues below it). ``branch_start`` marks the first row of a branch.
    """

    __slots__ = (
        "branch_start",
        "children",
        "depth",
        "guides",
        "indent",
        "label",
        "label_timestamp",
        "last_sibling",
        "node",
    )

    def __init__(
        self,
        node: _Node,
        depth: int,
        indent: int,
        children: list[str],
        last_sibling: bool,
        guides: tuple[bool, ...] = (),
        branch_start: bool = False,
    ) -> None:
        self.node = node
        self.depth = depth
        self.indent = indent
        self.label = node.label
        self.label_timestamp = node.label_timestamp
        self.children = children
        self.last_sibling = last_sibling
        self.guides = guides
        self.branch_start = branch_start

    @property
    def entry(self) -> dict[str, Any]:
        """The entry (decoded when first asked for)."""
        return self.node.entry

    def to_dict(self) -> dict[str, Any]:
        """The row as conformance ``tree.json`` nodes: id, type, parentId, depth, label, children."""
        entry = self.entry
        return {
            "id": entry.get("id"),
            "type": entry.get("type"),
            "parentId": entry.get("parentId"),
            "depth": self.depth,
            "label": self.label,
            "labelTimestamp": self.label_timestamp,
            "children": self.children,
        }


def _node_id(node: _Node) -> str:
    fast = getattr(node, "id", None)  # TreeNode knows its id without decoding the entry
    return fast if isinstance(fast, str) else str(node.entry.get("id"))


def tree_rows(roots: Sequence[_Node]) -> list[TreeRow]:
    """Pre-order rows of a forest, iteratively (trees can be tens of thousands of levels deep).

    ``indent`` grows only at branch points, so a long linear conversation stays flat. Each node is emitted
    once even when a damaged tree lists it under several parents, so the walk is linear in the node count.
    """
    rows: list[TreeRow] = []
    seen: set[int] = set()
    several = len(roots) > 1
    stack: list[tuple[_Node, int, int, bool, tuple[bool, ...], bool]] = [
        (r, 0, 1 if several else 0, i == len(roots) - 1, (i == len(roots) - 1,) if several else (), several)
        for i, r in reversed(list(enumerate(roots)))
    ]
    while stack:
        node, depth, indent, last, guides, start = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        children = list({id(c): c for c in node.children if id(c) not in seen}.values())
        rows.append(TreeRow(node, depth, indent, [_node_id(c) for c in children], last, guides, start))
        branching = len(children) > 1
        child_indent = indent + 1 if branching else indent
        for i in range(len(children) - 1, -1, -1):
            is_last = i == len(children) - 1
            child_guides = (*guides, is_last) if branching else guides
            stack.append((children[i], depth + 1, child_indent, is_last, child_guides, branching))
    return rows


def connector_prefix(guides: Sequence[bool], branch_start: bool, max_levels: int) -> str:
    """The branch lines drawn before a row (``├─``, ``└─``, ``│``; see ``TreeRow.guides``), at most
    ``max_levels`` levels wide: deeper rows show their innermost levels after a ``+N`` count of the rest."""
    if not guides:
        return ""
    hidden = max(0, len(guides) - max(1, max_levels))  # only the shown levels are drawn: deep rows stay cheap
    parts = ["   " if last else "│  " for last in guides[hidden:]]
    if branch_start:
        parts[-1] = "└─ " if guides[-1] else "├─ "
    body = "".join(parts)
    return f"+{hidden} {body}" if hidden else body


# The preview records: Literal fields decode to the one shared string (no allocation per entry); a value
# outside them fails validation and the line takes the general path, so any value still previews.
class _Block(msgspec.Struct, gc=False):
    type: Literal["text", "thinking", "toolCall", "image"] | None = None
    text: Any = None
    thinking: Any = None
    name: Any = None
    arguments: msgspec.Raw = msgspec.Raw(b"null")  # decoded only when a preview gets as far as showing them


class _Message(msgspec.Struct, gc=False):
    role: (
        Literal[
            "user", "assistant", "toolResult", "bashExecution", "custom", "compactionSummary", "branchSummary"
        ]
        | None
    ) = None
    content: str | list[_Block] | None = None
    toolName: Any = None
    command: Any = None
    stopReason: Literal["stop", "length", "toolUse", "error", "aborted"] | None = None
    errorMessage: Any = None
    summary: Any = None


class _MessageEntry(msgspec.Struct, gc=False):
    """The fields of a ``message`` entry that a preview shows; everything else is skipped, not decoded."""

    type: Literal["message"] | None = None
    id: Any = None
    message: _Message | None = None


_preview_decoder = msgspec.json.Decoder(_MessageEntry)
_MESSAGE_LINE = b'{"type":"message"'


def decode_for_preview(raw: bytes | memoryview) -> Any:
    """An entry's line decoded for ``entry_preview`` only: a message as pi writes it becomes a light record
    of the previewed fields (several times faster than a dict of everything); other lines become dicts."""
    if raw[: len(_MESSAGE_LINE)] == _MESSAGE_LINE:
        try:
            return _preview_decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            pass  # an odd shape or a value nested past msgspec's depth: the general path takes any JSON
    return _json.loads(raw)


def decode_run_for_preview(block: bytes, spans: Sequence[tuple[int, int]], types: Sequence[str]) -> list[Any]:
    """``decode_for_preview`` of each line ``block[start:end]`` (with ``types``, the entries' types), a run of
    neighbouring message lines decoded by one call where they take the light record (a block holds nothing
    but line endings between its lines: ``EntryStore.line_runs_at``)."""
    out: list[Any] = []
    view = memoryview(block)
    n, k = len(spans), 0
    while k < n:
        j = k
        while j < n and types[j] == "message":
            j += 1
        if j - k > 1:  # neighbouring message lines: one call
            out += _message_run(block, view, spans[k:j])
        else:  # a message alone, or another entry
            j = k + 1
            out.append(decode_for_preview(view[spans[k][0] : spans[k][1]]))
        k = j
    return out


def _message_run(block: bytes, view: memoryview, spans: Sequence[tuple[int, int]]) -> list[Any]:
    try:
        records = _preview_decoder.decode_lines(view[spans[0][0] : spans[-1][1]])
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        records = []  # one line of another shape: each line by itself
    if len(records) != len(spans):
        return [decode_for_preview(view[a:b]) for a, b in spans]
    # a message line that does not start as pi writes it becomes a dict, as ``decode_for_preview`` makes it
    return [
        record if block.startswith(_MESSAGE_LINE, a) else decode_for_preview(view[a:b])
        for record, (a, b) in zip(records, spans, strict=True)
    ]


_RECORDS = (dict, _Block, _Message, _MessageEntry)


def _get(record: Any, key: str, default: Any = None) -> Any:
    if isinstance(record, dict):
        return record.get(key, default)
    value = getattr(record, key, None)
    return default if value is None else value


def message_text(content: Any, limit: int | None = None) -> str:
    """The text of a message ``content`` (string, or text blocks joined); any other value gives ``""``.

    With ``limit``, blocks stop being added once the text is at least that long (for previews).
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        size = 0
        for block in content:
            if limit is not None and size >= limit:
                break
            if not isinstance(block, _RECORDS):
                continue
            kind = _get(block, "type")
            if kind == "text":
                parts.append(_str(_get(block, "text", "")))
            elif kind == "thinking":
                parts.append(f"(thinking) {_str(_get(block, 'thinking', ''))}")
            elif kind == "toolCall":
                parts.append(
                    f"{_str(_get(block, 'name'))}({_short_args(_get(block, 'arguments'), 1 << 30 if limit is None else limit)})"
                )
            elif kind == "image":
                parts.append("[image]")
            else:
                continue
            size += len(parts[-1]) + 1
        return " ".join(p for p in parts if p)
    return ""


_SCALARS = frozenset((int, float, bool))


def _str(value: Any, limit: int = 4000) -> str:
    """Any JSON value as display text; long values are cut (previews show a line of them at most)."""
    if isinstance(value, str):
        return value[:limit] if len(value) > limit else value
    if value is None or type(value) in _SCALARS:  # short_repr of a scalar is its repr, cut the same way
        shown = repr(value)
        return shown if len(shown) < limit else shown[: max(0, limit - 1)] + "…"  # (as short_repr cuts)
    return short_repr(value, limit)  # bounded and iterative: a value nested 1,000 deep is shown abbreviated


def _short_args(arguments: Any, limit: int = 1 << 30) -> str:
    """``key='value', …`` of a tool call's arguments, each value cut to 40 characters; arguments stop being
    added once the text is at least ``limit`` characters long (previews show a line at most)."""
    if isinstance(arguments, msgspec.Raw):
        arguments = _json.loads(bytes(arguments))
    if not isinstance(arguments, dict):
        return ""
    parts: list[str] = []
    size = 0
    for key, value in arguments.items():
        if size >= limit:
            break
        name = key if len(key) <= 40 else key[:39] + "…"  # JSON object keys are strings
        if type(value) is str:
            part = f"{name}={value!r}" if len(value) <= 40 else f"{name}={value[:39]!r}…"
        else:
            part = f"{name}={_str(value, 40)}"
        parts.append(part)
        size += len(part) + 2
    return ", ".join(parts)


def _names(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_str(v, 80) for v in value)
    return _str(value, 200)


def entry_role(entry: dict[str, Any]) -> str | None:
    """The message role of a ``message`` entry (``None`` for other entries or a role that is not a string)."""
    message = entry.get("message") if entry.get("type") == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    return role if isinstance(role, str) else None


_PLAIN_ROLES = frozenset(
    ("user", "assistant", "toolResult", "bashExecution", "custom", "compactionSummary", "branchSummary")
)


def entry_preview(entry: Any, width: int = 80, *, line_width: int | None = None) -> str:
    """A one-line description of an entry (role or type, then its text), safe to print: control characters
    and escape sequences are shown escaped, and the text is cut to ``width`` terminal cells (or, with
    ``line_width``, the whole preview to that many)."""
    if line_width is not None:
        width = line_width
    if type(entry) is _MessageEntry and entry.message is not None:  # the hot path of long listings
        role = entry.message.role
        if role in _PLAIN_ROLES and len(role) <= width:  # the role is its own head, shown as it is
            name, text = _record_parts(entry.message, width * 2 + 16)
            room = width - len(name) - 2 if line_width is not None else width
            if room > 0:
                return f"{name}: {one_line(text, room)}"
    head, body = _preview_parts(entry, width * 2 + 16)
    head = one_line(head, min(60, width))
    if body is None:
        return head
    if line_width is not None:
        width = line_width - cell_width(head) - 2
        if width <= 0:
            return cut_to_width(head, line_width)
    return f"{head}: {one_line(body, width)}"


def _record_text(content: Any, limit: int) -> str:
    """``message_text`` for decoded records (attribute access, the hot path of long previews)."""
    if isinstance(content, str):
        return content
    if not content:
        return ""
    if len(content) == 1:  # the common case: one block
        block = content[0]
        if block.type == "text":
            text = block.text
            if type(text) is str:
                return text[:limit]
    parts: list[str] = []
    size = 0
    for block in content:
        if size >= limit:
            break
        kind = block.type
        if kind == "text":
            part = _str(block.text if block.text is not None else "", limit)
        elif kind == "thinking":
            part = f"(thinking) {_str(block.thinking if block.thinking is not None else '', limit)}"
        elif kind == "toolCall":
            part = f"{_str(block.name)}({_short_args(block.arguments, limit)})"
        elif kind == "image":
            part = "[image]"
        else:
            continue
        parts.append(part)
        size += len(part) + 1
    return " ".join([p for p in parts if p])


def _record_parts(message: _Message, limit: int) -> tuple[str, str]:
    role = message.role
    if role == "toolResult":
        tool = message.toolName
        if type(tool) is not str or len(tool) > 4000:
            tool = _str(tool)
        body = f"{tool}: {_record_text(message.content, limit)}"
    elif role == "bashExecution":
        body = f"$ {_str(message.command)}"
    elif role in ("compactionSummary", "branchSummary"):
        body = _str(message.summary if message.summary is not None else "", 1 << 20)
    else:
        body = _record_text(message.content, limit)
    if role == "assistant" and message.stopReason in ("error", "aborted"):
        error = message.errorMessage
        body = f"[{message.stopReason}] {error if isinstance(error, str) and error else body}"
    return (role if role is not None else "?"), body  # (one of the roles the record takes, or none)


def _preview_parts(entry: Any, limit: int | None = None) -> tuple[str, str | None]:
    if isinstance(entry, _MessageEntry) and entry.message is not None:
        return _record_parts(entry.message, limit if limit is not None else 1 << 30)
    kind = _get(entry, "type")
    if kind == "message":
        message = _get(entry, "message")
        if not isinstance(message, _RECORDS):
            message = {}
        role = _get(message, "role")
        if role is None:  # missing or null: the same as a decoded record says
            role = "?"
        if role == "toolResult":
            body = f"{_str(_get(message, 'toolName'))}: {message_text(_get(message, 'content'), limit)}"
        elif role == "bashExecution":
            body = f"$ {_str(_get(message, 'command'))}"
        elif role in ("compactionSummary", "branchSummary"):
            body = _str(_get(message, "summary", ""), 1 << 20)
        else:
            body = message_text(_get(message, "content"), limit)
        stop = _get(message, "stopReason")
        if role == "assistant" and stop in ("error", "aborted"):
            error = _get(message, "errorMessage")
            body = f"[{stop}] {error if isinstance(error, str) and error else body}"
        return _str(role), body
    if not isinstance(entry, dict):
        return _str(kind), None
    if kind == "model_change":
        return f"model → {_str(entry.get('provider'))}/{_str(entry.get('modelId'))}", None
    if kind == "thinking_level_change":
        return f"thinking → {_str(entry.get('thinkingLevel'))}", None
    if kind == "active_tools_change":
        return "tools → " + _names(entry.get("activeToolNames")), None
    if kind == "compaction":
        return f"compaction ({_str(entry.get('tokensBefore'))} tokens before)", _str(entry.get("summary", ""))
    if kind == "branch_summary":
        return "branch summary", _str(entry.get("summary", ""))
    if kind == "label":
        label = entry.get("label")
        shown = "(cleared)" if label is None or label == "" else _str(label)
        return f"label {_str(entry.get('targetId'))} = {shown}", None
    if kind == "session_info":
        return f"name = {_str(entry.get('name'))}", None
    if kind == "custom_message":
        return f"custom[{_str(entry.get('customType'))}]", message_text(entry.get("content"))
    if kind == "custom":
        return f"custom[{_str(entry.get('customType'))}]", None
    if kind == "leaf":
        return f"leaf → {_str(entry.get('targetId'))}", None
    return _str(kind), None


def message_full_text(message: Any) -> str:
    """The whole text of a context message, for reading (not for a model): text, thinking, tool calls with
    their arguments, tool output, shell commands and their output, summaries."""
    if not isinstance(message, dict):
        return _str(message, 1 << 30)
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return _str(message.get("summary", ""), 1 << 30)
    if role == "bashExecution":
        return f"$ {_str(message.get('command'))}\n{_str(message.get('output', ''), 1 << 30)}"
    content = message.get("content")
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_str(block.get("text", ""), 1 << 30))
        elif kind == "thinking":
            parts.append(f"(thinking) {_str(block.get('thinking', ''), 1 << 30)}")
        elif kind == "toolCall":
            parts.append(f"→ {_str(block.get('name'))} {_json.dumps(block.get('arguments'))}")
        elif kind == "image":
            parts.append(f"[image {_str(block.get('mimeType'))}]")
    return "\n".join(parts)
