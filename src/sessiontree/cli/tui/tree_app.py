"""The ``/tree`` navigator: pi's session tree selector as a textual app over ``TreeRows``.

Keys as in pi: ↑/↓ move, ←/→ page, Ctrl+←/Ctrl+→ (or Alt+←/→) fold and jump between branch points, typing
searches, Ctrl+O / Ctrl+P cycle the filters (Ctrl+U user messages only, Ctrl+T no tools, Ctrl+L labeled
only, Ctrl+A all), Shift+L labels the selected entry, Enter selects (then: no summary, summary, or summary
with a focus), Escape clears the search or cancels. Returns a ``TreeChoice``; writes nothing itself: labels
go to the ``on_label`` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from .screens import ChoiceScreen, TextScreen
from .tree_rows import FilterMode, TreeRows

__all__ = ["SUMMARY_ANSWERS", "TreeChoice", "TreeNavigator"]

SUMMARY_ANSWERS = ["No summary", "Summarize", "Summarize with custom prompt"]
HELP = (
    "↑/↓ move · ←/→ page · ctrl+←/→ branch · shift+L label · ^O/^P filter "
    "(^U user ^T no-tools ^L labeled ^A all) · type to search · esc cancel"
)
STYLES = {
    "user": "cyan",
    "assistant": "green",
    "tool": "grey62",
    "error": "red",
    "summary": "yellow",
    "compaction": "magenta",
    "custom": "blue",
    "meta": "grey50",
}
_FILTER_KEYS: dict[str, FilterMode] = {
    "ctrl+u": "user-only",
    "ctrl+t": "no-tools",
    "ctrl+l": "labeled-only",
    "ctrl+a": "all",
}


@dataclass(frozen=True, slots=True)
class TreeChoice:
    """Where to go, and whether to leave a summary of the abandoned branch (with an optional focus)."""

    target_id: str
    summarize: bool = False
    focus: str | None = None


class _TreeList(Static):
    """The rows around the selection, as many as fit."""

    def __init__(self, rows: TreeRows) -> None:
        super().__init__()
        self.rows = rows

    def render(self) -> Text:
        self.rows.max_visible = max(1, self.size.height)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, row in enumerate(self.rows.rows()):
            if i:
                text.append("\n")
            line = Text(no_wrap=True)
            line.append("› " if row.selected else "  ", "bold cyan")
            line.append(row.prefix, "grey42")
            line.append(row.fold_marker, "cyan")
            line.append("• " if row.on_path else "", "cyan")
            if row.label:
                line.append(f"[{row.label}] ", "yellow")
            line.append(row.text, STYLES.get(row.kind, ""))
            if row.selected:
                line.stylize("bold reverse")
            text.append_text(line)
        return text


class TreeNavigator(App[TreeChoice | None]):
    """Choose an entry of the session tree (see the module docstring for the keys)."""

    CSS = """
    Screen { layout: vertical; }
    #title { text-style: bold; }
    .muted { color: $text-muted; }
    _TreeList { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+c", "cancel", "Cancel", priority=True, show=False)]
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self,
        roots: Sequence[Any],
        leaf_id: str | None,
        *,
        asks_summary: Callable[[str], bool] = lambda _target: True,
        on_label: Callable[[str, str | None], object] | None = None,
    ) -> None:
        super().__init__()
        self.rows = TreeRows(roots, leaf_id)
        self._asks_summary = asks_summary
        self._on_label = on_label

    def compose(self) -> ComposeResult:
        yield Static("Session Tree", id="title")
        yield Static(HELP, classes="muted")
        yield Static("", id="search", classes="muted")
        yield _TreeList(self.rows)
        yield Static("", id="status", classes="muted")

    def on_mount(self) -> None:
        self._refresh()

    def _refresh(self) -> None:
        self.query_one("#search", Static).update(Text(f"Type to search: {self.rows.search}"))
        self.query_one("#status", Static).update(Text(self.rows.status()))
        self.query_one(_TreeList).refresh()

    def action_cancel(self) -> None:
        self.exit(None)

    def on_key(self, event: events.Key) -> None:
        if self.screen is not self.screen_stack[0]:
            return  # a dialog is open and handles its own keys
        handled = self._key(event)
        if handled:
            event.prevent_default()
            event.stop()
            self._refresh()

    def _key(self, event: events.Key) -> bool:
        rows, key = self.rows, event.key
        moves = {"up": lambda: rows.move(-1), "down": lambda: rows.move(1)}
        moves |= {"left": lambda: rows.page(-1), "right": lambda: rows.page(1)}
        moves |= {"pageup": lambda: rows.page(-1), "pagedown": lambda: rows.page(1)}
        moves |= {"ctrl+left": rows.fold_or_up, "alt+left": rows.fold_or_up}
        moves |= {"ctrl+right": rows.unfold_or_down, "alt+right": rows.unfold_or_down}
        moves |= {"ctrl+o": lambda: rows.cycle_filter(1), "ctrl+p": lambda: rows.cycle_filter(-1)}
        if key in moves:
            moves[key]()
        elif key in _FILTER_KEYS:
            rows.toggle_filter(_FILTER_KEYS[key])
        elif key == "enter":
            self._select()
        elif key == "escape":
            if not rows.clear_search():
                self.exit(None)
        elif key == "backspace":
            rows.backspace()
        elif event.character == "L":
            self._edit_label()
        elif event.character is not None and event.is_printable:
            rows.type_text(event.character)
        else:
            return False
        return True

    def _edit_label(self) -> None:
        target = self.rows.selected_id
        if target is None:
            return

        def done(value: str | None) -> None:
            if value is None:
                return
            label = value.strip() or None
            if self._on_label is not None:
                self._on_label(target, label)
            self.rows.set_label(target, label)
            self._refresh()

        self.push_screen(TextScreen("Label (empty to remove):", self.rows.label_of(target) or ""), done)

    def _select(self) -> None:
        target = self.rows.selected_id
        if target is None:
            return
        if target == self.rows.leaf_id or not self._asks_summary(target):
            self.exit(TreeChoice(target))
            return

        def chosen(answer: int | None) -> None:
            if answer is None:
                return
            if answer < 2:
                self.exit(TreeChoice(target, summarize=answer == 1))
                return

            def focused(text: str | None) -> None:
                if text is not None:
                    self.exit(TreeChoice(target, summarize=True, focus=text.strip() or None))

            self.push_screen(TextScreen("Focus for the summary (what it should stress):"), focused)

        self.push_screen(ChoiceScreen("Summarize the branch you are leaving?", SUMMARY_ANSWERS), chosen)
