"""``sessiontree run``'s driver (pi's print mode): send the prompts one after another over an
``AgentSession``, then print the last reply's text (text mode) or every event as a JSON line after the
session header (json mode); tool activity goes to stderr with ``--verbose``. SIGTERM and SIGHUP abort the
run, write the session and end with 143 / 129.

Knows output and exit codes only; the session work is ``agent.host``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import IO, TYPE_CHECKING, Any, TextIO

from sessiontree.format.pi_json import dumps_bytes
from sessiontree.format.safe_text import one_line, safe_text

if TYPE_CHECKING:
    from ..agent.host import AgentSession
    from .run_input import RunInput

__all__ = ["run_prompts"]

_SIGNALS = ((signal.SIGTERM, 143), (signal.SIGHUP, 129))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text") or "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"
    )


class _Verbose:
    """Tool activity, retries and compactions as short lines on stderr."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "tool_execution_start":
            args = dumps_bytes(event.get("args")).decode("utf-8", "replace")
            self._line(f"→ {event.get('toolName')} {one_line(args, 200)}")
        elif kind == "tool_execution_end":
            result = event.get("result") or {}
            first = _text_of(result.get("content")).strip().split("\n", 1)[0]
            mark = "✗" if event.get("isError") else "←"
            self._line(f"{mark} {event.get('toolName')}: {one_line(first, 200) or '(no output)'}")
        elif kind == "auto_retry_start":
            self._line(f"retrying (attempt {event.get('attempt')}): {event.get('errorMessage')}")
        elif kind == "compaction_start":
            self._line(f"compacting ({event.get('reason')})")

    def _line(self, text: str) -> None:
        self.err.write(safe_text(text) + "\n")
        self.err.flush()


def _final_text(session: AgentSession, out: IO[bytes], err: TextIO) -> int:
    """pi's text result: the last message's text blocks, or its error on stderr (exit 1)."""
    messages = session.session.build_session_context().messages
    last = messages[-1] if messages else None
    if last is None or last.get("role") != "assistant":
        return 0
    stop = last.get("stopReason")
    if stop in ("error", "aborted"):
        err.write(f"{last.get('errorMessage') or f'Request {stop}'}\n")
        return 1
    for block in last.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            out.write(str(block.get("text") or "").encode("utf-8", "replace") + b"\n")
    out.flush()
    if stop == "length":
        err.write("Response was truncated: the model reached its output token limit.\n")
        return 1
    return 0


async def run_prompts(
    session: AgentSession,
    run_input: RunInput,
    *,
    mode: str,
    verbose: bool = False,
    out: IO[bytes] | None = None,
    err: TextIO | None = None,
) -> int:
    """Send every prompt (each after the previous run settled) and report; returns the exit code."""
    stdout = out if out is not None else sys.stdout.buffer
    stderr = err if err is not None else sys.stderr
    stopped: list[int] = []

    def write(event: dict[str, Any]) -> None:
        stdout.write(dumps_bytes(event) + b"\n")
        stdout.flush()

    def on_signal(code: int) -> None:
        if stopped:  # a second signal: no more waiting
            raise SystemExit(code)
        stopped.append(code)
        asyncio.get_running_loop().create_task(session.abort())

    loop = asyncio.get_running_loop()
    for sig, code in _SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, code)
    if mode == "json":
        header = session.session.get_header()
        if header is not None:
            write(header)
        session.subscribe(write)
    elif verbose:
        session.subscribe(_Verbose(stderr))
    code = 0
    try:
        for index, prompt in enumerate(run_input.prompts):
            if stopped:
                break
            await session.prompt(prompt, run_input.images if index == 0 else None)
        if mode == "text" and not stopped:
            code = _final_text(session, stdout, stderr)
    except Exception as error:
        stderr.write(f"{error}\n")
        code = 1
    finally:
        await session.close()
        for sig, _code in _SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
    return stopped[0] if stopped else code
