"""Text handling that has to match pi's JavaScript exactly: JS's ``trim`` and ``\\s`` (their whitespace set, not
Python's), lengths and cuts in UTF-16 code units, BOM stripping, newline normalising, XML escaping, and
reading a resource file the way Node's ``readFileSync(path, "utf-8")`` does (bad bytes become U+FFFD).

No resource logic here.
"""

from __future__ import annotations

import os
import stat

from ...errors import ResourceError

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "JS_SPACE",
    "escape_xml",
    "js_len",
    "js_slice",
    "js_trim",
    "normalize_newlines",
    "read_resource",
    "reason",
    "strip_bom",
]

JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The characters JavaScript's ``\\s`` and ``String.prototype.trim`` treat as whitespace."""

DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024
"""Resource files larger than this are skipped with a warning (pi reads any size; a prompt cannot hold it)."""


def js_trim(text: str) -> str:
    """``text.trim()`` in JavaScript."""
    return text.strip(JS_SPACE)


def js_len(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (characters past U+FFFF count twice)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def js_slice(text: str, units: int) -> str:
    """``text.slice(0, units)`` in JavaScript, without leaving half of a surrogate pair at the end."""
    if js_len(text) <= units:
        return text
    out: list[str] = []
    used = 0
    for ch in text:
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > units:
            break
        out.append(ch)
        used += width
    return "".join(out)


def strip_bom(text: str) -> str:
    """``text`` without one leading byte-order mark."""
    return text[1:] if text.startswith("\ufeff") else text


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR as LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def escape_xml(text: str) -> str:
    """``& < > " '`` as XML entities."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def read_resource(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str:
    """A regular file's text as UTF-8 with bad bytes replaced; raises ResourceError naming the file when it
    is not a regular file, cannot be read, or is larger than ``max_bytes``."""
    try:
        info = os.stat(path)  # before opening: opening a FIFO would block
        if not stat.S_ISREG(info.st_mode):
            raise ResourceError(f"{path}: not a regular file", path=path)
        if info.st_size > max_bytes:
            raise ResourceError(
                f"{path}: {info.st_size} bytes, over the {max_bytes}-byte limit for prompt resources; skipped",
                path=path,
            )
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise ResourceError(f"{path}: cannot be read ({exc.strerror or exc})", path=path) from exc
    if len(data) > max_bytes:
        raise ResourceError(
            f"{path}: grew past the {max_bytes}-byte limit while being read; skipped", path=path
        )
    return data.decode("utf-8", errors="replace")


def reason(exc: ResourceError) -> str:
    """The error's message without its leading ``path:`` or ``path:line:``."""
    text = str(exc)
    for where in (f"{exc.path}:{exc.line}: ", f"{exc.path}: "):
        if exc.path and text.startswith(where):
            return text[len(where) :]
    return text
