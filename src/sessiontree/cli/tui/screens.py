"""Small textual screens the pickers share: a question with a few answers and a one-line text prompt.

Each returns what was chosen (``None`` for Escape); neither knows what the answer is for.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

__all__ = ["ChoiceScreen", "TextScreen"]

_CSS = """
ChoiceScreen, TextScreen { align: center middle; }
#dialog { width: 72; height: auto; border: round $accent; padding: 0 1; background: $surface; }
#dialog OptionList { height: auto; border: none; }
#dialog Input { border: tall $accent; }
.hint { color: $text-muted; }
"""


class ChoiceScreen(ModalScreen[int | None]):
    """``title`` and numbered answers; Enter picks the highlighted one (its index), Escape gives None."""

    DEFAULT_CSS = _CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", priority=True)]

    def __init__(self, title: str, answers: list[str]) -> None:
        super().__init__()
        self._title = title
        self._answers = answers

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self._title)
            yield OptionList(*(Option(a, id=str(i)) for i, a in enumerate(self._answers)))
            yield Static("↑/↓ choose · enter confirm · esc back", classes="hint")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_back(self) -> None:
        self.dismiss(None)


class TextScreen(ModalScreen[str | None]):
    """A one-line text prompt (``value`` pre-filled); Enter gives the text, Escape gives None."""

    DEFAULT_CSS = _CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", priority=True)]

    def __init__(self, title: str, value: str = "", hint: str = "enter confirm · esc back") -> None:
        super().__init__()
        self._title = title
        self._value = value
        self._hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self._title)
            yield Input(value=self._value)
            yield Static(self._hint, classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_back(self) -> None:
        self.dismiss(None)
