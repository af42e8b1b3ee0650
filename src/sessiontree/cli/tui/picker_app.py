"""A searchable list picker (textual): the ``/resume`` session picker and the ``/fork`` message picker.

Type to search, ↑/↓ to move, Enter to pick, Tab to switch scope (this folder / all) where there are two,
Escape to cancel. Rows come from a callback of the query and the scope, so the app holds no session logic;
it returns the picked row's key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from sessiontree.format.safe_text import cell_width, cut_to_width

from .picker_rows import PickItem, window

__all__ = ["Picker"]

_STYLES = {"current": "cyan", "named": "yellow"}


class _Rows(Static):
    def __init__(self, picker: Picker) -> None:
        super().__init__()
        self.picker = picker

    def render(self) -> Text:
        items, selected = self.picker.items, self.picker.selected
        if not items:
            return Text(self.picker.empty, style="grey50")
        rows = window(selected, len(items), max(1, self.size.height))
        width = max(20, self.size.width)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i in rows:
            item = items[i]
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append("› " if i == selected else "  ", "bold cyan")
            line.append(item.prefix, "grey42")
            prefix, right = cell_width(item.prefix), cell_width(item.right)
            room = max(10, width - 4 - prefix - right)
            body = cut_to_width(item.text, room)
            line.append(body, _STYLES.get(item.style, ""))
            line.append(" " * max(1, width - 2 - prefix - cell_width(body) - right))
            line.append(item.right, "grey50")
            if i == selected:
                line.stylize("bold reverse")
            if i > rows.start:
                text.append("\n")
            text.append_text(line)
        return text


class Picker(App[str | None]):
    """Pick one of ``source(query, all_scope)``; ``scopes`` names the two scopes Tab switches between."""

    CSS = """
    Screen { layout: vertical; }
    #title { text-style: bold; }
    .muted { color: $text-muted; }
    _Rows { height: 1fr; }
    Input { border: tall $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "cancel", "Cancel", priority=True, show=False),
        Binding("escape", "cancel", "Cancel", priority=True, show=False),
        Binding("tab", "scope", "Scope", priority=True, show=False),
    ]
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self,
        title: str,
        source: Callable[[str, bool], list[PickItem]],
        *,
        scopes: tuple[str, str] | None = None,
        empty: str = "Nothing to pick",
    ) -> None:
        super().__init__()
        self._title = title
        self._source = source
        self._scopes = scopes
        self.all_scope = False
        self.empty = empty
        self.items: list[PickItem] = source("", False)
        self.selected = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="title")
        hint = "type to search · ↑/↓ move · enter pick · esc cancel" + (
            " · tab scope" if self._scopes else ""
        )
        yield Static(hint, classes="muted")
        yield Input(placeholder="search")
        yield _Rows(self)

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self._refresh()

    def _refresh(self) -> None:
        title = self._title
        if self._scopes is not None:
            here, everywhere = self._scopes
            title += f"  ({'◉ ' + here + ' | ○ ' + everywhere if not self.all_scope else '○ ' + here + ' | ◉ ' + everywhere})"
        self.query_one("#title", Static).update(Text(title))
        self.query_one(_Rows).refresh()

    def _reload(self) -> None:
        self.items = self._source(self.query_one(Input).value, self.all_scope)
        self.selected = min(self.selected, max(0, len(self.items) - 1))
        self._refresh()

    def on_input_changed(self, _event: Input.Changed) -> None:
        self.selected = 0
        self._reload()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        if self.items:
            self.exit(self.items[self.selected].key)

    def on_key(self, event: events.Key) -> None:
        if event.key in ("up", "down", "pageup", "pagedown") and self.items:
            step = {"up": -1, "down": 1, "pageup": -10, "pagedown": 10}[event.key]
            if event.key in ("up", "down"):
                self.selected = (self.selected + step) % len(self.items)
            else:
                self.selected = max(0, min(len(self.items) - 1, self.selected + step))
            event.prevent_default()
            event.stop()
            self._refresh()

    def action_scope(self) -> None:
        if self._scopes is not None:
            self.all_scope = not self.all_scope
            self.selected = 0
            self._reload()

    def action_cancel(self) -> None:
        self.exit(None)
