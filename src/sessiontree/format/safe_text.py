"""Any string a session holds, made safe to show: control characters, escape sequences, lone surrogates and
bidirectional overrides become visible escapes; display width is measured in terminal cells.

Pure string functions with no terminal or markup library behind them; it must not print, and it must not
change what a value means where the value is data (JSON output escapes, it never rewrites).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from itertools import accumulate

__all__ = ["cell_width", "cut_to_width", "json_for_terminal", "one_line", "safe_text", "short_repr"]

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


# Characters that may not take exactly one cell: combining marks, zero-width and format characters, and the
# wide East Asian and emoji blocks. Text without any of them is as wide as it is long (the common case).
# Compiled on first use (3-4 ms: a command that only prints ASCII never pays it).
_NOT_ONE_CELL_CLASS = (
    "[\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u0900-\u0903\u093a-\u094f\u0e31-\u0e3a\u1100-\u115f\u1ab0-\u1aff\u1dc0-\u1dff\u200b-\u200f"
    "\u2060-\u2064\u20d0-\u20ff\u231a\u231b\u23e9-\u23ec\u2614\u2615\u2648-\u2653\u26a1\u26bd\u26be"
    "\u26c4\u26c5\u26d4\u26ea\u26f5\u26fa\u26fd\u2705\u270a\u270b\u2728\u274c\u2753-\u2755\u2795-\u2797"
    "\u2b1b\u2b1c\u2b50\u2b55\u2e80-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe00-\ufe0f"
    "\ufe10-\ufe19\ufe20-\ufe6f\ufeff\uff00-\uff60\uffe0-\uffe6\U0001f000-\U0001faff\U00020000-\U0003fffd]"
)


@lru_cache(maxsize=1)
def _not_one_cell() -> re.Pattern[str]:
    return re.compile(_NOT_ONE_CELL_CLASS)


def cell_width(text: str) -> int:
    """The number of terminal cells ``text`` takes (wide East Asian characters count 2, combining marks 0)."""
    if text.isascii() or not _not_one_cell().search(text):
        return len(text)
    return sum(map(_char_width, text))


def cut_to_width(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``width`` cells, ending in ``ellipsis`` when something was cut."""
    if width <= 0:
        return ""
    if 2 * len(text) <= width:
        return text  # fits even if every character were wide
    room = max(0, width - cell_width(ellipsis))
    first = None if text.isascii() else _not_one_cell().search(text)
    if first is None:  # one cell per character
        return text if len(text) <= width else text[:room] + ellipsis
    start = first.start()  # the characters before it take a cell each
    if start > width:
        return text[:room] + ellipsis
    used = start  # the cells taken before ``i``; widths summed a block at a time, in C, not char by char
    cut = room if start > room else None
    for i in range(start, len(text), _CUT_BLOCK):
        after = list(accumulate(map(_char_width, text[i : i + _CUT_BLOCK]), initial=used))
        if cut is None and after[-1] > room:
            cut = i + bisect_right(after, room, 1) - 1  # the first character that would not leave room
        if after[-1] > width:
            return text[:cut] + ellipsis
        used = after[-1]
    return text


_CUT_BLOCK = 256


def one_line(text: str, width: int) -> str:
    """The start of ``text`` made safe (``safe_text``), whitespace runs collapsed, cut to ``width`` cells.

    Only a prefix of a long text is looked at (a little more than ``width`` characters, more while collapsing
    whitespace leaves it narrower than the width), so previews of megabyte tool outputs stay cheap. Collapsing
    a prefix gives a prefix of the collapsed text, so the result is the same as for the whole text.
    """
    if width <= 0:
        return ""
    if (
        len(text) <= width
        and text.isascii()
        and text.isprintable()
        and "  " not in text
        and text[:1] != " " != text[-1:]
    ):
        return text  # already one clean line (isprintable is false for every control character)
    take = max(32, width + (width >> 2))
    while True:
        head = text[:take]
        flat = " ".join(head.split())
        if flat.isascii() and flat.isprintable():  # the common case: nothing to escape, one cell each
            if len(flat) > width:
                return flat[: width - 1] + "…" if width > 1 else "…"
        else:
            flat = safe_text(flat)
            if not _not_one_cell().search(flat):  # still one cell per character
                if len(flat) > width:
                    return flat[: width - 1] + "…" if width > 1 else "…"
            else:
                cut = cut_to_width(flat, width)
                if cut is not flat:  # cut_to_width gives back the very same string when it all fits
                    return cut
        if len(head) == len(text):
            return flat
        take *= 4


MAX_SHOWN_DEPTH = 16
"""How deep ``short_repr`` shows nested values; deeper ones are abbreviated ``[…]`` / ``{…}``."""


def short_repr(value: object, limit: int = 4000, max_depth: int = MAX_SHOWN_DEPTH) -> str:
    """``repr(value)`` of a JSON value, cut to ``limit`` characters (``…`` marks the cut), with containers
    nested deeper than ``max_depth`` shown as ``[…]`` / ``{…}``.

    Iterative, and it stops as soon as ``limit`` characters are out, so a value nested a thousand deep (which
    valid JSON allows) or a megabyte list costs no more than the text shown, never a ``RecursionError``.
    """
    parts: list[str] = []
    size = 0
    # Each frame: the rest of a container's items, its closing bracket, whether an item was shown yet.
    stack: list[tuple[Iterator[tuple[object, object]], str, list[bool]]] = [
        (iter(((None, value),)), "", [False])
    ]
    _none = object()
    while stack and size < limit:
        items, closer, shown = stack[-1]
        pair = next(items, _none)
        if pair is _none:
            parts.append(closer)
            size += len(closer)
            stack.pop()
            continue
        key: object = pair[0]  # type: ignore[index]
        item: object = pair[1]  # type: ignore[index]
        text = ", " if shown[0] else ""
        shown[0] = True
        if key is not None:
            text += repr(key) + ": "
        if isinstance(item, dict | list | tuple):
            is_dict = isinstance(item, dict)
            opener, end = ("{", "}") if is_dict else ("[", "]")
            if len(stack) > max_depth:
                text += f"{opener}…{end}" if item else opener + end
            else:
                text += opener
                children = iter(item.items()) if is_dict else ((None, v) for v in item)  # type: ignore[union-attr]
                stack.append((children, end, [False]))
        elif isinstance(item, str):
            text += repr(item[: limit + 1])
        else:
            text += repr(item)
        parts.append(text)
        size += len(text)
    out = "".join(parts)
    if len(out) > limit or stack:
        return out[: max(0, limit - 1)] + "…"
    return out
