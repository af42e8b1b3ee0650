"""The chat's input line (prompt_toolkit): history, multi-line editing, and the keys that matter while a
turn runs. Enter sends (steers while a turn runs), Alt+Enter queues a follow-up while a turn runs (a new
line otherwise), Ctrl+J a new line, Ctrl+O shows a collapsed tool output in full, Ctrl+C aborts / clears /
exits, Ctrl+D on an empty line exits.

It returns what was typed and how; what to do with it is the REPL's business.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style

__all__ = ["InputLine", "Interrupt", "Submitted"]

Interrupt = Literal["abort", "clear", "exit", "armed"]
"""What Ctrl+C did, as the REPL decided: aborted a turn, cleared the line, exits, or waits for a second one."""


@dataclass(frozen=True, slots=True)
class Submitted:
    """A line sent with Enter (``follow_up`` when Alt+Enter queued it as a follow-up)."""

    text: str
    follow_up: bool = False


def _history(path: Path | None) -> History:
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError:
        return InMemoryHistory()  # a history that cannot be kept is no reason not to chat
    return FileHistory(str(path))


class InputLine:
    """``await read(default)`` gives the next ``Submitted`` (EOFError: exit). ``live`` gives the rows shown
    above the prompt (each a list of fragments), ``footer`` the bottom line for a width, ``busy`` whether a
    turn runs, ``interrupt`` decides what Ctrl+C does (given whether the line has text) and ``expand`` is
    Ctrl+O."""

    def __init__(
        self,
        *,
        live: Callable[[], list[list[tuple[str, str]]]],
        footer: Callable[[int], str],
        busy: Callable[[], bool],
        interrupt: Callable[[bool], Interrupt],
        expand: Callable[[], object] = lambda: None,
        history_path: Path | None = None,
    ) -> None:
        self._live = live
        self._footer = footer
        self._busy = busy
        self._interrupt = interrupt
        self._expand = expand
        self._follow_up = False
        self._restored: str | None = None
        self.session: PromptSession[str] = PromptSession(
            message=self._message,
            bottom_toolbar=self._toolbar,
            key_bindings=self._bindings(),
            multiline=True,
            history=_history(history_path),
            erase_when_done=True,
            prompt_continuation="  ",
            style=Style.from_dict({"bottom-toolbar": "noreverse bg:default #888888"}),
            refresh_interval=0.5,
        )
        self.session.app.min_redraw_interval = 0.05  # a fast stream redraws 20 times a second, not per delta

    def _message(self) -> FormattedText:
        parts: list[tuple[str, str]] = []
        for row in self._live():
            parts += [*row, ("", "\n")]
        parts.append(("bold ansicyan", "› "))
        return FormattedText(parts)

    def width(self) -> int:
        """The terminal's width in cells."""
        try:
            return int(self.session.app.output.get_size().columns)
        except Exception:  # no terminal to ask (tests)
            return 80

    def _toolbar(self) -> FormattedText:
        return FormattedText([("", self._footer(self.width()))])

    def _bindings(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("enter")
        def _send(event: KeyPressEvent) -> None:
            event.current_buffer.validate_and_handle()

        @keys.add("escape", "enter")
        def _follow_up(event: KeyPressEvent) -> None:
            if self._busy():
                self._follow_up = True
                event.current_buffer.validate_and_handle()
            else:
                event.current_buffer.insert_text("\n")

        @keys.add("c-j")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("c-o")
        def _expand(_event: KeyPressEvent) -> None:
            self._expand()

        @keys.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            outcome = self._interrupt(bool(buffer.text))
            if outcome == "exit":
                event.app.exit(exception=EOFError())
            elif outcome == "clear":
                buffer.reset()

        @keys.add("c-d")
        def _eof(event: KeyPressEvent) -> None:
            if not event.current_buffer.text:
                event.app.exit(exception=EOFError())
            else:
                event.current_buffer.delete()

        return keys

    async def read(self, default: str = "") -> Submitted:
        """The next line; raises ``EOFError`` when the user exits."""
        self._follow_up = False
        if self._restored is not None:
            default, self._restored = self._restored + (f"\n{default}" if default else ""), None
        with patch_stdout(raw=True):
            text = await self.session.prompt_async(default=default, handle_sigint=False)
        return Submitted(text, self._follow_up)

    def restore(self, text: str) -> None:
        """Put ``text`` back to edit (a line that could not be sent): into the line shown now, before what
        is typed there, or into the next one."""
        app = self.session.app
        if app.is_running:
            buffer = self.session.default_buffer
            current = buffer.text
            buffer.text = text + (f"\n{current}" if current else "")
            buffer.cursor_position = len(buffer.text)
            app.invalidate()
        else:
            self._restored = text if self._restored is None else f"{self._restored}\n{text}"

    @staticmethod
    @contextlib.contextmanager
    def hold_typeahead() -> Iterator[None]:
        """Between prompts, keep what is typed unechoed and Enter a carriage return (so a line typed while
        a command runs still sends when the next prompt reads it); Ctrl+C stays a signal. Restored after."""
        try:
            import termios

            fd = sys.stdin.fileno()
            saved = termios.tcgetattr(fd)
        except (ImportError, OSError, ValueError, AttributeError):
            yield
            return
        held = termios.tcgetattr(fd)
        held[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR)
        held[3] &= ~(termios.ICANON | termios.ECHO)
        held[6][termios.VMIN], held[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, held)
        try:
            yield
        finally:
            termios.tcsetattr(fd, termios.TCSANOW, saved)

    def redraw(self) -> None:
        """Draw the input area again (from any event on the loop)."""
        app = self.session.app
        if app.is_running:
            app.invalidate()
