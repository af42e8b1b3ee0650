"""``sessiontree rpc``'s loop (pi's RPC mode): read command lines from stdin, handle each as soon as it arrives
(a slow command does not hold back the next), answer on stdout between the session's events, and never
stop for bad input: a line that is not JSON, an unknown command, a missing field or a command that is not
allowed now each get a failed response. EOF aborts the run, writes the session and exits 0; SIGTERM and
SIGHUP do the same with 143 and 129 (a second signal exits at once).

Diagnostics go to stderr; stdout carries protocol lines only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import IO, TYPE_CHECKING, Any

from sessiontree.format.pi_json import loads

from .commands import ANSWERED, COMMANDS
from .framing import LineReader, Output, failure, success

if TYPE_CHECKING:
    from ...agent.host import AgentSession

__all__ = ["serve"]

_SIGNALS = ((signal.SIGTERM, 143), (signal.SIGHUP, 129))
_SETTLE_SECONDS = 5.0  # how long commands still running may take to finish once the input ended


class _Server:
    def __init__(self, session: AgentSession, output: Output) -> None:
        self.session = session
        self.output = output
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stopping: int | None = None
        self.stopped = asyncio.Event()

    def line(self, text: str) -> None:
        """Handle one input line in a task of its own."""
        task = asyncio.get_running_loop().create_task(self._handle(text))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _handle(self, text: str) -> None:
        try:
            command = loads(text)
        except (ValueError, RecursionError) as error:
            self.output(failure(None, "parse", f"Failed to parse command: {error}"))
            return
        if not isinstance(command, dict):
            self.output(failure(None, "parse", "Failed to parse command: expected a JSON object"))
            return
        kind, command_id = command.get("type"), command.get("id")
        if kind == "extension_ui_response":
            return  # no extension asks anything here; pi answers nothing to these either
        handler = COMMANDS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            self.output(failure(command_id, kind, f"Unknown command: {kind}"))
            return
        try:
            data = await handler(self.session, command, self.output)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self.output(failure(command_id, kind, str(error) or type(error).__name__))
            return
        if data is not ANSWERED:
            self.output(success(command_id, str(kind), data))

    def signal(self, code: int) -> None:
        if self.stopping is not None:
            os._exit(code)  # a second signal while shutting down
        self.stop(code)

    def stop(self, code: int) -> None:
        if self.stopping is None:
            self.stopping = code
            self.stopped.set()

    async def shutdown(self) -> None:
        """Abort the run, give running commands a moment to answer, write the session."""
        session = self.session
        try:
            if session.run_active or session.harness.phase != "idle":
                await session.abort()
            if self.tasks:
                await asyncio.wait(set(self.tasks), timeout=_SETTLE_SECONDS)
            for task in set(self.tasks):
                task.cancel()
        finally:
            await session.close()


async def serve(session: AgentSession, stdin: int | None = None, stdout: IO[bytes] | None = None) -> int:
    """Speak pi's RPC protocol on the file descriptor ``stdin`` and ``stdout`` until the input ends or a
    signal comes; returns the exit code."""
    loop = asyncio.get_running_loop()
    output = Output(stdout if stdout is not None else sys.stdout.buffer)
    server = _Server(session, output)
    session.subscribe(output)
    reader = LineReader(stdin if stdin is not None else sys.stdin.fileno(), loop)
    for sig, code in _SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, server.signal, code)

    async def pump() -> None:
        while True:
            text = await reader.queue.get()
            if text is None:
                server.stop(0)
                return
            server.line(text)

    reader.start()
    pumping = loop.create_task(pump())
    try:
        await server.stopped.wait()
    finally:
        pumping.cancel()
        await server.shutdown()
        for sig, _code in _SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
    return server.stopping or 0
