"""Strings into SQL text columns and back: lone UTF-16 surrogates and NUL (which pi's files can hold, and
which PostgreSQL's text type refuses; SQLite's refuses the surrogates) are escaped reversibly in key columns
and replaced by U+FFFD in display-only columns. The entry's exact line is kept as bytes either way.
"""

from __future__ import annotations

import re

__all__ = ["display", "key", "unkey"]

_SURROGATE = re.compile("[\ud800-\udfff\x00]")
_MARK = "\ufffd\u2060surrogates:"  # a prefix no pi id starts with


def _plain(value: str) -> bool:
    """Whether ``value`` holds neither a lone surrogate nor a NUL (ASCII without a NUL: no scan needed)."""
    return (value.isascii() and "\x00" not in value) or not _SURROGATE.search(value)


def key(value: str | None) -> str | None:
    """``value`` as stored in an id column: itself, unless it holds a lone surrogate (then escaped)."""
    if value is None or _plain(value):
        return value
    return _MARK + value.encode("utf-8", "surrogatepass").hex()


def unkey(value: str | None) -> str | None:
    """The string ``key`` was given."""
    if value is None or not value.startswith(_MARK):
        return value
    return bytes.fromhex(value[len(_MARK) :]).decode("utf-8", "surrogatepass")


def display(value: str | None) -> str | None:
    """``value`` for a column that is only shown or searched (lone surrogates become U+FFFD)."""
    if value is None or _plain(value):
        return value
    return _SURROGATE.sub("\ufffd", value)
