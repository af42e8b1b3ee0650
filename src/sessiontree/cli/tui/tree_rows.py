"""The rows of the ``/tree`` navigator, as pi's tree selector lays them out: the active branch first, pi's
indentation and connectors, filters (default, no-tools, user-only, labeled-only, all), search, folding and
jumps between branch points.

Plain state over ``get_tree()`` nodes, no terminal and no textual: the app draws ``lines()`` and forwards
keys to the methods here. It never writes to the session; a label change only updates what is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .entry_text import entry_line, search_text
from .picker_rows import window

__all__ = ["FILTERS", "FilterMode", "Row", "TreeRows"]

FilterMode = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
FILTERS: tuple[FilterMode, ...] = ("default", "no-tools", "user-only", "labeled-only", "all")
_TAGS = {
    "default": "",
    "no-tools": " [no-tools]",
    "user-only": " [user]",
    "labeled-only": " [labeled]",
    "all": " [all]",
}


class _Node(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def entry(self) -> dict[str, Any]: ...

    @property
    def children(self) -> Sequence[Any]: ...

    label: str | None


@dataclass(slots=True)
class _Flat:
    node: Any
    indent: int
    show_connector: bool
    is_last: bool
    gutters: list[tuple[int, bool]]
    virtual_root_child: bool


@dataclass(frozen=True, slots=True)
class Row:
    """One drawn row: the selection cursor, the branch lines, the markers and the entry's text and style."""

    entry_id: str
    selected: bool
    prefix: str
    fold_marker: str
    on_path: bool
    label: str | None
    kind: str
    text: str


_Visit = Callable[[Any, int, bool, bool, list[tuple[int, bool]], bool], None]


def _child_indent(indent: int, multiple_children: bool, just_branched: bool) -> int:
    if multiple_children or (just_branched and indent > 0):
        return indent + 1
    return indent


@dataclass
class TreeRows:
    """Navigator state over a session tree; ``leaf_id`` is the current leaf (selected first, marked ``•``)."""

    roots: Sequence[Any]
    leaf_id: str | None
    max_visible: int = 20
    filter_mode: FilterMode = "default"
    search: str = ""
    folded: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._nodes: dict[str, Any] = {}
        self._parent: dict[str, str | None] = {}
        stack: list[tuple[Any, str | None]] = [(r, None) for r in self.roots]
        while stack:
            node, parent = stack.pop()
            self._nodes[node.id] = node
            self._parent[node.id] = parent
            stack.extend((child, node.id) for child in node.children)
        self._active: set[str] = set()
        current = self.leaf_id
        while current is not None and current not in self._active and current in self._nodes:
            self._active.add(current)
            current = self._parent.get(current)
        self._tool_calls: dict[str, tuple[str, Any]] = {}
        self._haystacks: dict[str, str] = {}
        self._multiple_roots = len(self.roots) > 1
        self._flat = self._flatten()
        self._visible: list[_Flat] = []
        self._vis_parent: dict[str, str | None] = {}
        self._vis_children: dict[str | None, list[str]] = {}
        self.selected = 0
        self._last_selected: str | None = None
        self._apply()
        self.selected = self._nearest_visible(self.leaf_id)
        self._last_selected = self.selected_id

    # -- layout ------------------------------------------------------------------------------------------
    def _layout(self, roots: list[Any], children_of: Callable[[Any], list[Any]], visit: _Visit) -> None:
        """pi's layout walk in pre-order: a chain stays at its indentation, a branch point indents its
        children (and the first generation after it once more), several roots hang under a virtual one."""
        multiple = len(roots) > 1
        stack: list[tuple[Any, int, bool, bool, bool, list[tuple[int, bool]], bool]] = []
        for i in range(len(roots) - 1, -1, -1):
            stack.append((roots[i], int(multiple), multiple, multiple, i == len(roots) - 1, [], multiple))
        while stack:
            key, indent, just_branched, connector, is_last, gutters, virtual = stack.pop()
            visit(key, indent, connector, is_last, gutters, virtual)
            kids = children_of(key)
            several = len(kids) > 1
            child_indent = _child_indent(indent, several, just_branched)
            child_gutters = self._child_gutters(gutters, connector, virtual, is_last, indent)
            for i in range(len(kids) - 1, -1, -1):
                stack.append(
                    (kids[i], child_indent, several, several, i == len(kids) - 1, child_gutters, False)
                )

    def _flatten(self) -> list[_Flat]:
        result: list[_Flat] = []

        def visit(node: Any, *layout: Any) -> None:
            self._note_tool_calls(node)
            result.append(_Flat(node, *layout))

        def children_of(node: Any) -> list[Any]:
            kids = list(node.children)  # the branch holding the leaf first
            return [c for c in kids if c.id in self._active] + [c for c in kids if c.id not in self._active]

        self._layout(sorted(self.roots, key=lambda r: r.id not in self._active), children_of, visit)
        return result

    def _child_gutters(
        self, gutters: list[tuple[int, bool]], connector: bool, virtual: bool, is_last: bool, indent: int
    ) -> list[tuple[int, bool]]:
        if not connector or virtual:
            return gutters
        display = max(0, indent - 1) if self._multiple_roots else indent
        return [*gutters, (max(0, display - 1), not is_last)]

    def _note_tool_calls(self, node: Any) -> None:
        entry = node.entry
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                self._tool_calls[str(block.get("id"))] = (str(block.get("name")), block.get("arguments"))

    # -- filtering -----------------------------------------------------------------------------------------
    def _passes(self, flat: _Flat, tokens: list[str]) -> bool:
        node = flat.node
        entry = node.entry
        kind = entry.get("type")
        message = (
            entry.get("message") if kind == "message" and isinstance(entry.get("message"), dict) else None
        )
        role = message.get("role") if message is not None else None
        if role == "assistant" and node.id != self.leaf_id:
            assert message is not None
            has_text = any(
                isinstance(b, dict) and b.get("type") == "text" and str(b.get("text") or "").strip()
                for b in (message.get("content") if isinstance(message.get("content"), list) else [])
            ) or (isinstance(message.get("content"), str) and bool(message["content"].strip()))
            stop = message.get("stopReason")
            if not has_text and not (stop and stop not in ("stop", "toolUse")):
                return False  # a tool-call-only step: its tool results stand for it
        settings = kind in ("label", "model_change", "thinking_level_change") or (
            kind == "custom" and entry.get("customType") != "skills_reload"
        )
        mode = self.filter_mode
        if mode == "user-only":
            passes = role == "user"
        elif mode == "no-tools":
            passes = not settings and role != "toolResult"
        elif mode == "labeled-only":
            passes = node.label is not None
        elif mode == "all":
            passes = True
        else:
            passes = not settings
        if not passes:
            return False
        if tokens:
            haystack = self._haystacks.get(node.id)
            if haystack is None:  # computed once per entry: typing a query re-filters every entry per key
                haystack = self._haystacks[node.id] = search_text(entry, node.label)
            return all(t in haystack for t in tokens)
        return True

    def _apply(self) -> None:
        if self._visible:
            self._last_selected = self.selected_id or self._last_selected
        tokens = self.search.lower().split()
        visible = [f for f in self._flat if self._passes(f, tokens)]
        if self.folded:
            hidden: set[str] = set()
            stack = [
                child for fid in self.folded if fid in self._nodes for child in self._nodes[fid].children
            ]
            while stack:
                node = stack.pop()
                hidden.add(node.id)
                stack.extend(node.children)
            visible = [f for f in visible if f.node.id not in hidden]
        self._visible = visible
        self._restructure()
        if self._last_selected is not None:
            self.selected = self._nearest_visible(self._last_selected)
        elif self.selected >= len(visible):
            self.selected = max(0, len(visible) - 1)
        if visible:
            self._last_selected = self.selected_id

    def _restructure(self) -> None:
        """Connectors and indentation for what is visible: hidden entries' children hang on the nearest
        visible ancestor, with the same indentation rules as the full tree."""
        if not self._visible:
            return
        shown = {f.node.id for f in self._visible}
        parents: dict[str, str | None] = {}
        children: dict[str | None, list[str]] = {None: []}
        for flat in self._visible:
            current = self._parent.get(flat.node.id)
            while current is not None and current not in shown:
                current = self._parent.get(current)
            parents[flat.node.id] = current
            children.setdefault(current, []).append(flat.node.id)
        roots = children[None]
        self._multiple_roots = len(roots) > 1
        by_id = {f.node.id: f for f in self._visible}

        def visit(
            node_id: str, indent: int, connector: bool, is_last: bool, gutters: Any, virtual: bool
        ) -> None:
            flat = by_id[node_id]
            flat.indent, flat.show_connector, flat.is_last = indent, connector, is_last
            flat.gutters, flat.virtual_root_child = gutters, virtual

        self._layout(roots, lambda node_id: children.get(node_id, []), visit)
        self._vis_parent, self._vis_children = parents, children

    def _nearest_visible(self, entry_id: str | None) -> int:
        if not self._visible:
            return 0
        index = {f.node.id: i for i, f in enumerate(self._visible)}
        current = entry_id
        seen: set[str] = set()
        while current is not None and current not in seen:
            if current in index:
                return index[current]
            seen.add(current)
            current = self._parent.get(current)
        return len(self._visible) - 1

    # -- what is shown ---------------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """How many rows pass the filter and the search (folded ones excluded)."""
        return len(self._visible)

    @property
    def selected_id(self) -> str | None:
        return self._visible[self.selected].node.id if self._visible else None

    @property
    def selected_entry(self) -> dict[str, Any] | None:
        return self._visible[self.selected].node.entry if self._visible else None

    def label_of(self, entry_id: str) -> str | None:
        node = self._nodes.get(entry_id)
        return node.label if node is not None else None

    def status(self) -> str:
        """pi's status line: ``(3/12) [user]``."""
        tag = _TAGS[self.filter_mode]
        if not self._visible:
            return f"No entries found  (0/0){tag}"
        return f"({self.selected + 1}/{len(self._visible)}){tag}"

    def _foldable(self, entry_id: str) -> bool:
        kids = self._vis_children.get(entry_id)
        if not kids:
            return False
        parent = self._vis_parent.get(entry_id)
        return parent is None or len(self._vis_children.get(parent, [])) > 1

    def rows(self) -> list[Row]:
        """The rows in the window around the selection (``max_visible`` of them at most)."""
        out: list[Row] = []
        for i in window(self.selected, len(self._visible), self.max_visible):
            flat = self._visible[i]
            node = flat.node
            display = max(0, flat.indent - 1) if self._multiple_roots else flat.indent
            shows_connector = flat.show_connector and not flat.virtual_root_child
            folded = node.id in self.folded
            chars: list[str] = []
            gutters = dict(flat.gutters)
            for c in range(display * 3):
                level, pos = divmod(c, 3)
                if level in gutters:
                    chars.append("│" if pos == 0 and gutters[level] else " ")
                elif shows_connector and level == display - 1:
                    if pos == 0:
                        chars.append("└" if flat.is_last else "├")
                    elif pos == 1:
                        chars.append("⊞" if folded else "⊟" if self._foldable(node.id) else "─")
                    else:
                        chars.append(" ")
                else:
                    chars.append(" ")
            kind, text = entry_line(node.entry, self._tool_calls)
            out.append(
                Row(
                    node.id,
                    i == self.selected,
                    "".join(chars),
                    "⊞ " if folded and not shows_connector else "",
                    node.id in self._active,
                    node.label,
                    kind,
                    text,
                )
            )
        return out

    # -- keys --------------------------------------------------------------------------------------------
    def move(self, step: int) -> None:
        """Up (-1) or down (+1), wrapping around."""
        if self._visible:
            self.selected = (self.selected + step) % len(self._visible)

    def page(self, step: int) -> None:
        """A page up (-1) or down (+1)."""
        if self._visible:
            self.selected = max(0, min(len(self._visible) - 1, self.selected + step * self.max_visible))

    def fold_or_up(self) -> None:
        """Fold the selected branch point, or jump to the start of the branch segment above."""
        current = self.selected_id
        if current is not None and self._foldable(current) and current not in self.folded:
            self.folded.add(current)
            self._apply()
        else:
            self.selected = self._segment_start("up")

    def unfold_or_down(self) -> None:
        """Unfold the selected entry, or jump to the next branch point below."""
        current = self.selected_id
        if current is not None and current in self.folded:
            self.folded.discard(current)
            self._apply()
        else:
            self.selected = self._segment_start("down")

    def _segment_start(self, direction: Literal["up", "down"]) -> int:
        current = self.selected_id
        if current is None:
            return self.selected
        index = {f.node.id: i for i, f in enumerate(self._visible)}
        if direction == "down":
            while True:
                kids = self._vis_children.get(current, [])
                if not kids:
                    return index[current]
                if len(kids) > 1:
                    return index[kids[0]]
                current = kids[0]
        while True:
            parent = self._vis_parent.get(current)
            if parent is None:
                return index[current]
            if len(self._vis_children.get(parent, [])) > 1 and index[current] < self.selected:
                return index[current]
            current = parent

    def set_filter(self, mode: FilterMode) -> None:
        self.filter_mode = mode
        self.folded.clear()
        self._apply()

    def toggle_filter(self, mode: FilterMode) -> None:
        """Switch to ``mode``, or back to the default when it is already on."""
        self.set_filter("default" if self.filter_mode == mode else mode)

    def cycle_filter(self, step: int) -> None:
        self.set_filter(FILTERS[(FILTERS.index(self.filter_mode) + step) % len(FILTERS)])

    def type_text(self, text: str) -> None:
        """Add typed characters to the search."""
        if text and text.isprintable():
            self.search += text
            self.folded.clear()
            self._apply()

    def backspace(self) -> None:
        if self.search:
            self.search = self.search[:-1]
            self.folded.clear()
            self._apply()

    def clear_search(self) -> bool:
        """Clear the search; False when there was none (the key then means cancel)."""
        if not self.search:
            return False
        self.search = ""
        self.folded.clear()
        self._apply()
        return True

    def set_label(self, entry_id: str, label: str | None) -> None:
        """Show ``label`` on the entry (the caller writes it to the session)."""
        node = self._nodes.get(entry_id)
        if node is not None:
            node.label = label
            self._haystacks.pop(entry_id, None)  # the label is part of what search matches
            self._apply()
