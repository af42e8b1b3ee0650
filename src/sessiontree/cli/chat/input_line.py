"""The chat's input line (prompt_toolkit): history, multi-line editing, and the keys that matter while a
turn runs. Enter sends (steers while a turn runs), Alt+Enter queues a follow-up while a turn runs (a new
line otherwise), Ctrl+J a new line, Ctrl+C aborts / clears / exits, Ctrl+D on an empty line exits.

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
    """``await read(default)`` gives the next ``Submitted`` (EOFError: exit). ``live`` gives the lines shown
    above the prompt, ``footer`` the bottom line, ``busy`` whether a turn runs and ``interrupt`` decides
    what Ctrl+C does (given whether the line has text)."""

    def __init__(
        self,
        *,
        live: Callable[[], list[tuple[str, str]]],
        footer: Callable[[], str],
        busy: Callable[[], bool],
        interrupt: Callable[[bool], Interrupt],
        history_path: Path | None = None,
    ) -> None:
        self._live = live
        self._footer = footer
        self._busy = busy
        self._interrupt = interrupt
        self._follow_up = False
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

    def _message(self) -> FormattedText:
        parts: list[tuple[str, str]] = []
        for style, text in self._live():
            parts += [(style, text), ("", "\n")]
        parts.append(("bold ansicyan", "› "))
        return FormattedText(parts)

    def _toolbar(self) -> FormattedText:
        return FormattedText([("", self._footer())])

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
        with patch_stdout(raw=True):
            text = await self.session.prompt_async(default=default, handle_sigint=False)
        return Submitted(text, self._follow_up)

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
