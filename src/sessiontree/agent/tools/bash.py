"""The ``bash`` tool (pi's shape ``{command, timeout?}``): run a command in the working directory, stdout and
stderr together, the last 2000 lines / 50 KB returned and the full output kept in a temporary file.

The command runs in its own process group, killed on abort and on timeout; a non-zero exit, a timeout and
an abort are errors that carry the output. ``run_command`` is the runner without the tool's error shape (the
chat's ``!cmd`` uses it). The shell is not confined to the working directory (only the file
tools are). Not safe to repeat after an interrupted run.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import signal as signals
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Literal

import anyio
from anyio.abc import Process

from sessiontree.format.messages import bash_execution_message

from ...llm.types import AbortSignal
from ..types import AgentTool, ToolResult, ToolUpdate
from ._common import ABORTED, object_schema, text_result
from ._paths import Workspace
from ._truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, format_size, truncate_tail

__all__ = ["DEFAULT_TIMEOUT", "CommandRun", "bash_tool", "run_command"]

DEFAULT_TIMEOUT = 180
"""Seconds a command may run when the call gives no ``timeout`` (pi's default; 0 disables the limit)."""
_KEEP = 4 * DEFAULT_MAX_BYTES  # bytes of the output's end kept in memory once it spilled to the file
_UPDATE_EVERY = 0.25  # seconds between progress updates
_DRAIN_GRACE = 0.2  # seconds to keep reading after exit (a background child may hold the pipe open)

SCHEMA = object_schema(
    {
        "command": {"type": "string", "description": "Shell command to execute"},
        "timeout": {
            "type": "number",
            "description": "Timeout in seconds. Defaults to 180 (3 minutes) when omitted; pass 0 to disable "
            "the timer, or a finite number of seconds for a longer limit.",
        },
    },
    ["command"],
)

DESCRIPTION = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated "
    f"to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). If "
    "truncated, full output is saved to a temp file. Timeout defaults to 180 seconds; pass a timeout in seconds "
    "for a longer limit, or 0 to disable the timer."
)

SNIPPET = "Run a shell command in the working directory (ls, rg, find, git, tests, ...)"
"""The one-liner of the system prompt's tool list."""
GUIDELINES: tuple[str, ...] = ()
"""Its bullets in the system prompt's rules."""


class _Output:
    """The command's output: all of it in memory while small, else in a temporary file plus its end."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.total = 0
        self.newlines = 0
        self.file: IO[bytes] | None = None
        self.path: str | None = None

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        if self.file is None and len(self.data) + len(chunk) <= 2 * DEFAULT_MAX_BYTES:
            self.data += chunk
            return
        if self.file is None:
            self._spill()
        assert self.file is not None
        self.file.write(chunk)
        self.data += chunk
        del self.data[: max(0, len(self.data) - _KEEP)]

    def _spill(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="sessiontree-bash-", suffix=".log")
        self.file = os.fdopen(fd, "wb")
        self.file.write(self.data)

    def snapshot(self) -> tuple[str, Truncation]:
        """The kept text and its truncation (totals over the whole output)."""
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.data), final=True)
        if self.file is not None and self.total > len(self.data):
            text = text.split("\n", 1)[1] if "\n" in text else text  # the kept end starts mid-line
        cut = truncate_tail(text)
        lines = self.newlines + (0 if self.data.endswith(b"\n") or not self.total else 1)
        if self.file is not None:
            cut = replace(
                cut,
                truncated=True,
                truncated_by=cut.truncated_by or "bytes",
                total_lines=lines,
                total_bytes=self.total,
            )
        return cut.content, cut

    def finish(self) -> tuple[str, Truncation, str | None]:
        """Close the file; a truncated output that never spilled is written to one now."""
        content, cut = self.snapshot()
        if cut.truncated and self.file is None:
            self._spill()
        if self.file is not None:
            self.file.close()
        return content, cut, self.path


def _format(content: str, cut: Truncation, path: str | None, empty: str = "(no output)") -> tuple[str, Any]:
    # The final newline ends the last line; it is not part of what the model needs to read.
    text = (content[:-1] if content.endswith("\n") else content) or empty
    if not cut.truncated:
        return text, None
    start, end = cut.total_lines - cut.output_lines + 1, cut.total_lines
    if cut.last_line_partial:
        note = f"[Showing last {format_size(cut.output_bytes)} of line {end}. Full output: {path}]"
    elif cut.truncated_by == "lines":
        note = f"[Showing lines {start}-{end} of {cut.total_lines}. Full output: {path}]"
    else:
        note = f"[Showing lines {start}-{end} of {cut.total_lines} ({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {path}]"
    return f"{text}\n\n{note}", {"truncation": cut.to_dict(), "fullOutputPath": path}


def _status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


def _kill(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signals.SIGKILL)


def _shell() -> list[str]:
    found = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    return [found, "-c"]


@dataclass(frozen=True, slots=True)
class CommandRun:
    """A finished shell command: the kept end of its output, how it ended, and where the full output is."""

    output: str
    truncation: Truncation
    full_output_path: str | None
    outcome: Literal["exit", "aborted", "timeout"]
    exit_code: int | None

    @property
    def shown_output(self) -> str:
        """The output without its final newline (what a ``bashExecution`` message records)."""
        return self.output[:-1] if self.output.endswith("\n") else self.output

    def message(self, command: str, *, timestamp: int, exclude_from_context: bool = False) -> dict[str, Any]:
        """The ``bashExecution`` message that records this run of ``command`` (``!cmd``; ``!!cmd`` excludes it
        from the context)."""
        return bash_execution_message(
            command,
            self.shown_output,
            exit_code=self.exit_code,
            cancelled=self.outcome != "exit",
            truncated=self.truncation.truncated,
            full_output_path=self.full_output_path,
            timestamp=timestamp,
            exclude_from_context=True if exclude_from_context else None,
        )


async def run_command(
    cwd: str | os.PathLike[str],
    command: str,
    *,
    timeout: float = 0,
    signal: AbortSignal | None = None,
    on_update: ToolUpdate | None = None,
) -> CommandRun:
    """Run ``command`` in a shell in ``cwd`` (stdout and stderr together, its own process group), killed on
    abort and after ``timeout`` seconds (0: no limit); the output is truncated as the ``bash`` tool does."""
    root = Path(cwd)
    if signal is not None and signal.aborted:
        raise RuntimeError(ABORTED)
    if not root.is_dir():
        raise FileNotFoundError(f"Working directory does not exist: {root}\nCannot execute bash commands.")
    output = _Output()
    process = await anyio.open_process(
        [*_shell(), command],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    outcome: Literal["exit", "aborted", "timeout"] = "exit"
    last_update = last_data = time.monotonic()
    read_all = anyio.Event()

    async def read() -> None:
        nonlocal last_update, last_data
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                output.add(chunk)
                last_data = time.monotonic()
                if on_update is not None and last_data - last_update >= _UPDATE_EVERY:
                    last_update = last_data
                    await on_update(text_result(output.snapshot()[0]))
        finally:
            read_all.set()

    async def wait_then_stop_reading(group: anyio.abc.TaskGroup) -> None:
        await process.wait()
        # A background child can keep the pipe open after the shell exited: stop once the output goes quiet.
        while not read_all.is_set():
            with anyio.move_on_after(_DRAIN_GRACE):
                await read_all.wait()
            if not read_all.is_set() and time.monotonic() - last_data >= _DRAIN_GRACE:
                group.cancel_scope.cancel()
                return

    try:
        with anyio.CancelScope() as scope:
            if timeout > 0:
                scope.deadline = anyio.current_time() + timeout

            def on_abort() -> None:
                nonlocal outcome
                outcome = "aborted"
                _kill(process)
                scope.cancel()

            remove = signal.add_callback(on_abort) if signal is not None else None
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(read)
                    group.start_soon(wait_then_stop_reading, group)
            finally:
                if remove is not None:
                    remove()
        if scope.cancelled_caught and outcome == "exit":
            outcome = "timeout"
        if outcome != "exit":
            _kill(process)
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
    content, cut, path = output.finish()
    code = process.returncode if outcome == "exit" else None
    return CommandRun(content, cut, path, outcome, code)


async def _run(
    ws: Workspace, command: str, timeout: float, signal: AbortSignal | None, on_update: ToolUpdate | None
) -> ToolResult:
    run = await run_command(ws.root, command, timeout=timeout, signal=signal, on_update=on_update)
    text, details = _format(
        run.output, run.truncation, run.full_output_path, "" if run.outcome != "exit" else "(no output)"
    )
    if run.outcome == "aborted":
        raise RuntimeError(_status(text, "Command aborted"))
    if run.outcome == "timeout":
        raise TimeoutError(_status(text, f"Command timed out after {timeout:g} seconds"))
    if run.exit_code:
        raise RuntimeError(_status(text, f"Command exited with code {run.exit_code}"))
    return text_result(text, details)


def bash_tool(ws: Workspace) -> AgentTool:
    """pi's ``bash`` in ``ws``'s directory."""

    async def execute(
        _call_id: str, args: dict[str, Any], signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> ToolResult:
        timeout = args.get("timeout")
        seconds = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        if seconds < 0:
            raise ValueError("Invalid timeout: must be a finite number of seconds, or 0 to disable the timer")
        return await _run(ws, args["command"], seconds, signal, on_update)

    return AgentTool(
        "bash",
        DESCRIPTION,
        SCHEMA,
        execute,
        label="bash",
        prompt_snippet=SNIPPET,
        prompt_guidelines=GUIDELINES,
    )
