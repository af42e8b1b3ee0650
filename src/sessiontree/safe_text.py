"""Any string a session holds, made safe to show: control characters, escape sequences, lone surrogates and
bidirectional overrides become visible escapes; display width is measured in terminal cells.

Pure string functions with no terminal or markup library behind them; it must not print, and it must not
change what a value means where the value is data (JSON output escapes, it never rewrites).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["cell_width", "cut_to_width", "json_for_terminal", "one_line", "safe_text"]

# C0 and C1 controls, DEL, lone surrogates, line/paragraph separators and the bidirectional embeddings,
# overrides and isolates (which can reorder what a reader sees): never written raw to a terminal.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_KEEP_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# In JSON text these characters can only occur inside strings, so escaping them keeps every value the same.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` (``str()`` of any value) with every unsafe character shown as a visible escape (``\\x1b``).

    With ``keep_newlines`` a newline and a tab stay as they are (for multi-line bodies); anything else that
    could move the cursor, change colours, clear the screen or reorder the text is escaped.
    """
    value = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_KEEP_LINES if keep_newlines else _UNSAFE
    return pattern.sub(_escape, value) if pattern.search(value) else value


def json_for_terminal(json_text: str) -> str:
    """JSON text with the characters JavaScript's ``JSON.stringify`` leaves raw but a terminal obeys (DEL, C1
    controls, line separators, bidirectional controls) written as ``\\u`` escapes: the same JSON values."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


@lru_cache(maxsize=4096)
def _char_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """The number of terminal cells ``text`` takes (wide East Asian characters count 2, combining marks 0)."""
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


def cut_to_width(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``width`` cells, ending in ``ellipsis`` when something was cut."""
    if width <= 0:
        return ""
    if text.isascii():
        if len(text) <= width:
            return text
        return text[: max(0, width - cell_width(ellipsis))] + ellipsis
    if cell_width(text) <= width:
        return text
    room = width - cell_width(ellipsis)
    used = 0
    for i, char in enumerate(text):
        used += _char_width(char)
        if used > room:
            return text[:i] + ellipsis
    return text


def one_line(text: str, width: int, *, lookahead: int = 4) -> str:
    """The start of ``text`` made safe (``safe_text``), whitespace runs collapsed, cut to ``width`` cells.

    Only a prefix of a long text is looked at (``lookahead`` × ``width`` characters, more while collapsing
    whitespace leaves it narrower than the width), so previews of megabyte tool outputs stay cheap.
    """
    if width <= 0:
        return ""
    take = max(64, width * lookahead)
    while True:
        head = text[:take]
        flat = safe_text(" ".join(head.split()))
        if len(head) == len(text) or cell_width(flat) > width:
            return cut_to_width(flat, width)
        take *= 4
