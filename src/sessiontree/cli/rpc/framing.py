"""pi's RPC framing: one JSON object per line, LF only (a CR before it is dropped; U+2028 / U+2029 inside
strings are not line ends), on stdin and stdout; responses with the command's name and echoed ``id``.

``LineReader`` hands stdin's lines to the event loop from a thread (stdin may be a pipe, a file or a
terminal); ``Output`` writes protocol lines to stdout and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import IO, Any

from sessiontree.format.pi_json import UNDEFINED, dumps_bytes

__all__ = ["LineReader", "Output", "failure", "success"]


def success(command_id: Any, command: str, data: Any = UNDEFINED) -> dict[str, Any]:
    """``{id?, type: "response", command, success: true, data?}``."""
    return {
        "id": command_id if isinstance(command_id, str) else UNDEFINED,
        "type": "response",
        "command": command,
        "success": True,
        "data": data,
    }


def failure(command_id: Any, command: Any, message: str) -> dict[str, Any]:
    """``{id?, type: "response", command, success: false, error}``."""
    return {
        "id": command_id if isinstance(command_id, str) else UNDEFINED,
        "type": "response",
        "command": command if isinstance(command, str) else UNDEFINED,
        "success": False,
        "error": message,
    }


class Output:
    """Protocol lines on ``stream`` (binary), one ``JSON.stringify(obj) + "\\n"`` each, flushed."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.broken = False

    def __call__(self, obj: dict[str, Any]) -> None:
        if self.broken:
            return
        try:
            self._stream.write(dumps_bytes(obj) + b"\n")
            self._stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.broken = True  # the reader went away: nothing more can be said


class LineReader:
    """stdin's lines (decoded, CR-stripped) into an asyncio queue; ``None`` marks the end of input.

    Reads the file descriptor itself (no buffered reader: a thread still blocked in one when the process
    ends would hold its lock through the interpreter's shutdown)."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._fd = fd
        self._loop = loop
        self._thread = threading.Thread(target=self._read, name="rpc-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _put(self, line: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the process is ending
            self._loop.call_soon_threadsafe(self.queue.put_nowait, line)

    def _line(self, raw: bytes) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        self._put(raw.decode("utf-8", "replace"))

    def _read(self) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")  # LF only
                for raw in lines:
                    self._line(raw)
        except OSError:
            pass
        if pending:
            self._line(pending)
        self._put(None)
