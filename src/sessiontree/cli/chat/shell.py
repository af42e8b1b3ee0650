"""``!cmd`` and ``!!cmd`` (pi's user bash, SPEC B§3.5): run a shell command in the chat's directory, show
the end of its output and record a ``bashExecution`` message (``!!``: kept out of the model's context).

Runs through the bash tool's runner and appends through the harness, which holds the message back while a
turn runs so it never lands between a tool call and its result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sessiontree.format.safe_text import safe_text

from ...agent.tools.bash import run_command
from ...llm.types import AbortSignal

if TYPE_CHECKING:
    from ...agent import AgentHarness
    from .render import Transcript

__all__ = ["SHOWN_LINES", "parse_shell", "run_shell"]

SHOWN_LINES = 20
"""Lines of a command's output shown in the chat (all of it, up to the tool's limit, goes to the session)."""


def parse_shell(text: str) -> tuple[str, bool] | None:
    """``(command, exclude_from_context)`` for ``!cmd`` / ``!!cmd``, None for anything else."""
    if not text.startswith("!"):
        return None
    exclude = text.startswith("!!")
    return text[2 if exclude else 1 :].strip(), exclude


async def run_shell(
    harness: AgentHarness,
    command: str,
    exclude: bool,
    cwd: Path,
    transcript: Transcript,
    signal: AbortSignal,
) -> None:
    """Run ``command`` and record it; Ctrl+C (the ``signal``) kills it and records it as cancelled."""
    transcript.line(f"{'!!' if exclude else '!'} {safe_text(command)}", "bold")
    run = await run_command(cwd, command, signal=signal)
    output = run.shown_output
    lines = output.split("\n") if output else []
    if len(lines) > SHOWN_LINES:
        transcript.notice(f"… {len(lines) - SHOWN_LINES} earlier lines")
    for line in lines[-SHOWN_LINES:]:
        transcript.line(safe_text(line), "grey62")
    if run.outcome == "aborted":
        transcript.line("(cancelled)", "yellow")
    elif run.exit_code:
        transcript.line(f"exit code {run.exit_code}", "red")
    message = run.message(command, timestamp=harness.session.clock(), exclude_from_context=exclude)
    await harness.append_message(message)
