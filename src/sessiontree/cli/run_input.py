"""What ``sessiontree run`` sends: its PROMPT arguments, stdin (``-``, or a pipe), and ``@file`` arguments
turned into text (``<file name="…">`` blocks) and images, as pi's print mode builds its first message.

Reads files and stdin only; a file that is missing or unreadable is a ``SessionError`` naming it.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import SessionError

__all__ = ["RunInput", "build_input", "image_type"]


@dataclass(frozen=True, slots=True)
class RunInput:
    """The prompts in order (the first with the files' text and stdin) and the first one's images."""

    prompts: list[str]
    images: list[dict[str, Any]] = field(default_factory=list)


def image_type(head: bytes) -> str | None:
    """The MIME type of an image pi attaches (JPEG, PNG, GIF, WebP, BMP), from its first bytes."""
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        return "image/png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:2] == b"BM" and len(head) >= 26:
        return "image/bmp"
    return None


def _attach(name: str, cwd: Path) -> tuple[str, dict[str, Any] | None]:
    path = (cwd / Path(name).expanduser()).absolute()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"File not found: {path}", kind="not_found", path=str(path)) from None
    except OSError as exc:
        raise SessionError(f"Could not read file {path}: {exc.strerror or exc}", path=str(path)) from None
    if not data:
        return "", None
    mime = image_type(data[:32])
    if mime is not None:
        image = {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}
        return f'<file name="{path}"></file>\n', image
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise SessionError(f"Could not read file {path}: not UTF-8 text", path=str(path)) from None
    return f'<file name="{path}">\n{text}\n</file>\n', None


def build_input(arguments: Sequence[str], cwd: Path, stdin: TextIO | None = None) -> RunInput:
    """pi's prompts: a ``-`` argument is stdin's text, in its place; without one, a stdin that is not a
    terminal is read and put before the first prompt (pi's first message: stdin, then the ``@file`` blocks,
    then the first prompt); the other prompts follow as they are."""
    stream = stdin if stdin is not None else sys.stdin
    files = [a[1:] for a in arguments if a.startswith("@") and len(a) > 1]
    prompts = [a for a in arguments if not (a.startswith("@") and len(a) > 1)]
    piped: str | None = None
    if "-" in prompts:
        text = stream.read().strip()
        prompts = [text if p == "-" else p for p in prompts]
        prompts = [p for p in prompts if p]
    elif not stream.isatty():
        piped = stream.read().strip() or None
    attached = [_attach(name, cwd) for name in files]
    file_text = "".join(text for text, _ in attached)
    images = [image for _, image in attached if image is not None]
    rest = file_text + (prompts.pop(0) if prompts else "")
    # stdin is set apart from what follows it (pi runs them together)
    message = f"{piped}\n\n{rest}" if piped and rest else (piped or rest)
    return RunInput([message, *prompts] if message else prompts, images)
