"""The chat's REPL loop: read a line, then send it (a prompt, a steering or follow-up message), run a slash
command or a ``!cmd``; turns run in the background so the input line stays live while the agent works.

Holds no session logic: prompts, queues, aborts, navigation, forks and compaction are harness calls, and
everything else is a library function. Owns the terminal (rich for the scrollback, prompt_toolkit for the
input, textual for the pickers) and the current harness, which it replaces when another session is opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console

from sessiontree.format.safe_text import safe_text

from ...llm.types import AbortSignal
from .footer import Footer
from .input_line import InputLine, Interrupt
from .render import Transcript

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

    from ...agent import AgentHarness
    from ...agent.host import AgentSettings, HostConfig, ModelChoice
    from ...llm.models import ModelRegistry

__all__ = ["ChatApp", "ChatConfig", "SlashCommands"]

SlashCommands = Callable[["ChatApp", str], Awaitable[bool]]
"""Runs a ``/command`` line; False ends the chat."""
_EXIT_WINDOW = 2.0  # seconds within which a second Ctrl+C exits
_RECAP = 12  # messages of the branch shown when a session is opened or the leaf moves
_TICK = 0.1  # seconds between redraws of the spinner while something runs
# Events after which the footer is recomputed: every change of the leaf, the model or the thinking level
# (each stored message, ``message_end``, updates it in place).
_FOOTER_EVENTS = frozenset(
    {
        "settled",
        "session_tree",
        "session_compact",
        "compaction_end",
        "model_update",
        "thinking_level_update",
    }
)


class _Stdout:
    """Whatever ``sys.stdout`` is now (prompt_toolkit swaps in a proxy while the input line is shown)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return sys.__stdout__.isatty() if sys.__stdout__ is not None else False

    def fileno(self) -> int:
        stream: TextIO | None = sys.__stdout__
        if stream is None:
            raise OSError("no standard output")
        return stream.fileno()


@dataclass
class ChatConfig:
    """What the chat was started with: directory, model choice, settings, models, the agent session's
    configuration (tools, prompt resources), store."""

    cwd: Path
    choice: ModelChoice
    settings: AgentSettings
    registry: ModelRegistry
    host: HostConfig
    store: str | None = None
    history_path: Path | None = None
    base_url: str | None = None
    shell_dir: Path | None = None
    """The directory the chat was started from (where the hint to continue is run)."""


class ChatApp:
    """The interactive chat over one harness at a time (``run()`` returns the exit code); ``slash`` runs the
    ``/command`` lines."""

    def __init__(self, config: ChatConfig, manager: SessionManager, slash: SlashCommands) -> None:
        self.config = config
        self._slash = slash
        self.console = Console(file=_Stdout(), force_terminal=_Stdout().isatty(), highlight=False)  # type: ignore[arg-type]
        self.transcript = Transcript(self.console, self._redraw)
        self.footer = Footer()
        self.input = InputLine(
            live=self.transcript.live_lines,
            footer=self.footer.line,
            busy=self.busy,
            interrupt=self.interrupt,
            expand=self.transcript.expand_last,
            history_path=config.history_path,
        )
        self.thinking_level = config.choice.thinking_level
        self.choice = config.choice
        self.harness = self._harness(manager, config.choice)
        self.editor_text = ""
        self._turn: asyncio.Task[Any] | None = None
        self._shell: tuple[asyncio.Task[Any], AbortSignal] | None = None
        self._armed: float | None = None
        self._aborting: asyncio.Task[Any] | None = None
        self._user_stored = False  # the prompt being sent reached the session (its message_end came)

    # -- harness -----------------------------------------------------------------------------------------
    def _harness(self, manager: SessionManager, choice: ModelChoice) -> AgentHarness:
        from ...agent.host import build_harness

        harness = build_harness(
            self.config.host,
            manager,
            model=choice.model,
            api_key=choice.api_key,
            thinking_level=self.thinking_level,
        )
        harness.subscribe(self._on_event)
        return harness

    async def switch_to(self, manager: SessionManager) -> None:
        """Continue in another session (``/resume``): a new harness with the same model and settings."""
        from .writer_lock import claim

        try:
            claim(manager)  # before leaving this one: a session another chat holds is not opened
        except BaseException:
            manager.close()
            raise
        old = self.harness
        self.thinking_level = old.thinking_level
        await old.shutdown()
        old.session.close()
        self.harness = self._harness(manager, replace(self.choice, model=old.model))
        self.opened()

    def _on_event(self, event: dict[str, Any]) -> None:
        try:
            kind = event.get("type")
            message = event.get("message") if kind == "message_end" else None
            if isinstance(message, dict) and message.get("role") == "user":
                self._user_stored = True
            self.transcript.handle(event)
            if isinstance(message, dict):
                self.footer.add_message(self.harness, message)  # stored before the event is emitted
            elif kind in _FOOTER_EVENTS:
                self.footer.refresh(self.harness)
        except Exception as error:  # a drawing bug must not become a harness failure
            self.transcript.error(f"display error: {error}")

    # -- state the input line asks about ---------------------------------------------------------------------
    def turn_running(self) -> bool:
        return self._turn is not None and not self._turn.done()

    def shell_running(self) -> bool:
        return self._shell is not None and not self._shell[0].done()

    def busy(self) -> bool:
        return self.turn_running() or self.shell_running()

    def interrupt(self, has_text: bool) -> Interrupt:
        """Ctrl+C: a second press soon after the first exits; else abort what runs (a turn, a shell
        command, a summary or a compaction), clear the line, or wait for a second press."""
        now = time.monotonic()
        if self._armed is not None and now - self._armed < _EXIT_WINDOW and not has_text:
            return "exit"
        if self.busy() or self.harness.phase != "idle":
            self._armed = now
            if self._shell is not None and not self._shell[0].done():
                self._shell[1].abort()
            running = self.turn_running() or self.harness.phase != "idle"
            if running and (self._aborting is None or self._aborting.done()):
                self._aborting = asyncio.get_running_loop().create_task(self.harness.abort())
            self.transcript.notice("Aborting… (ctrl+c again to exit)")
            return "abort"
        if has_text:
            self._armed = None
            return "clear"
        self._armed = now
        self.transcript.notice("Press ctrl+c again to exit")
        return "armed"

    def _signal(self, main: asyncio.Task[Any]) -> None:
        """Ctrl+C while no input line is shown (a command runs): as in the input line."""
        if self.interrupt(False) == "exit":
            main.cancel()

    def _redraw(self) -> None:
        self.input.redraw()

    # -- running ---------------------------------------------------------------------------------------------
    def where(self) -> str:
        """The current session's file, or its store URL and id."""
        manager = self.harness.session
        return manager.get_session_file() or f"{self.config.store or 'memory:'}#{manager.get_session_id()}"

    def opened(self) -> None:
        """Say which session this is and show the end of its branch."""
        self.transcript.notice(f"session {safe_text(self.where())}")
        self.recap()
        self.footer.refresh(self.harness)

    def recap(self) -> None:
        """The last messages of the current branch, one line each."""
        messages = self.harness.session.build_session_context().messages
        if len(messages) > _RECAP:
            self.transcript.notice(f"… {len(messages) - _RECAP} earlier messages")
        self.transcript.recap(messages[-_RECAP:])

    def start(self, work: Callable[[], Coroutine[Any, Any, Any]], *, typed: str | None = None) -> None:
        """Run ``work`` as the current turn (errors are shown, never raised). ``typed`` is the line the
        turn sends: when it fails before the line reached the session, the line is put back to edit."""
        self._user_stored = False

        async def guarded() -> None:
            try:
                await work()
            except Exception as error:
                self.transcript.error(str(error))
                if typed is not None and not self._user_stored:
                    self.input.restore(typed)
                    self.transcript.notice("Your message was not sent; it is back in the input line")
            finally:
                self.footer.refresh(self.harness)
                self._redraw()

        self._turn = asyncio.get_running_loop().create_task(guarded())

    async def send(self, text: str, *, follow_up: bool = False) -> None:
        """A prompt when idle; while a turn runs, a steering message (or a follow-up)."""
        if self.turn_running():
            await (self.harness.follow_up(text) if follow_up else self.harness.steer(text))
            return
        harness = self.harness
        self.start(lambda: harness.prompt(text), typed=text)

    def run_shell(self, command: str, exclude: bool) -> None:
        from .shell import run_shell

        signal = AbortSignal()

        async def guarded() -> None:
            try:
                await run_shell(self.harness, command, exclude, self.config.cwd, self.transcript, signal)
            except Exception as error:
                self.transcript.error(str(error))

        self._shell = (asyncio.get_running_loop().create_task(guarded()), signal)

    async def idle(self) -> None:
        """Wait for the running turn and shell command to finish."""
        for task in (self._turn, self._shell[0] if self._shell else None):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)

    async def _tick(self) -> None:
        """Redraw the activity line (its spinner and clock) while something runs."""
        while True:
            await asyncio.sleep(_TICK)
            if self.transcript.activity:
                self._redraw()

    async def run(self) -> int:
        """The loop: read, dispatch, until /quit, Ctrl+D or a double Ctrl+C."""
        from .preload import preload_provider

        self.transcript.notice(
            f"sessiontree chat · {self.harness.model.provider}/{self.harness.model.id} "
            f"({self.config.choice.source}) · /help for commands"
        )
        self.opened()
        preload_provider(self.harness.model.api)  # the SDK loads while the first line is typed
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        ticker = loop.create_task(self._tick())
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            if main is not None:
                loop.add_signal_handler(signal.SIGINT, self._signal, main)
        try:
            with self.input.hold_typeahead():
                await self._loop()
        except asyncio.CancelledError:
            pass
        finally:
            ticker.cancel()
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)
            await self.close()
        return 0

    async def _loop(self) -> None:
        from .shell import parse_shell

        while True:
            default, self.editor_text = self.editor_text, ""
            try:
                submitted = await self.input.read(default)
            except EOFError:
                return
            text = submitted.text
            if not text.strip():
                continue
            self._armed = None
            if text.startswith("/") and not text.startswith("//"):
                if not await self._slash(self, text):
                    return
                continue
            shell = parse_shell(text)
            if shell is not None and shell[0]:
                self.run_shell(*shell)
                continue
            await self.send(text[1:] if text.startswith("//") else text, follow_up=submitted.follow_up)

    async def close(self) -> None:
        """Stop what runs, release the session, and say how to continue it."""
        from .continuing import continue_hint

        if self._shell is not None:
            self._shell[1].abort()
        await self.harness.shutdown()
        await self.idle()
        manager = self.harness.session
        hint = continue_hint(manager, self.config.store, self.config.cwd, self.config.shell_dir)
        manager.close()
        if hint:
            self.transcript.notice(hint)
