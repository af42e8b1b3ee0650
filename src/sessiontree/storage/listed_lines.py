"""What a session listing takes from one entry line, decoded without building the entry.

A listing needs an entry's type, a ``session_info``'s name, a message's role and timestamps, and the text
blocks of user and assistant messages; the rest of a line (tool output, thinking, tool-call arguments,
usage) is skipped by msgspec without making Python objects of it, which is most of a session's bytes. Any
line this cannot read exactly as the dict path would (not an object, a field of another shape, nesting
near the depth limit) gives ``None``, and the caller decodes it whole.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from sessiontree.format.pi_json import MAX_DEPTH

__all__ = ["ListedParts", "listed_parts"]

ListedParts = tuple[Any, Any, bool, Any, str | None, Any, Any]
"""``(type, name, has_message, role, text, message_timestamp, entry_timestamp)``: ``has_message`` is whether
the entry's ``message`` is an object, and ``text`` the joined text blocks when asked for, else ``None``."""


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    content: msgspec.Raw = msgspec.Raw(b"null")  # decoded only for the messages whose text is taken
    timestamp: Any = None


class _Entry(msgspec.Struct, gc=False):
    type: Any = None
    name: Any = None
    timestamp: Any = None
    message: _Message | None = None  # any other value fails validation: the dict path decides then


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None


_ENTRY = msgspec.json.Decoder(_Entry)

_CONTENT = msgspec.json.Decoder(str | list[_Block] | None)
_FAILED = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
_TEXT_ROLES = ("user", "assistant")


def _depth_is_bounded() -> bool:
    """Whether msgspec fails on every value nested deeper than ``MAX_DEPTH`` by itself: before Python 3.12
    its limit is the interpreter's recursion limit (1,000 by default); from 3.12 it is the C stack's."""
    return sys.version_info < (3, 12) and sys.getrecursionlimit() <= MAX_DEPTH


def _deep(line: bytes) -> bool:
    """Whether ``line`` may nest deeper than ``MAX_DEPTH``, which the dict path refuses."""
    return len(line) > 2 * MAX_DEPTH and line.count(b"[") + line.count(b"{") > MAX_DEPTH


def listed_parts(line: bytes, want_text: bool) -> ListedParts | None:
    """The parts of the entry on ``line`` (``want_text``: join the text blocks of a user or assistant
    message), or ``None`` when only decoding the whole line can tell."""
    if not _depth_is_bounded() and _deep(line):
        return None
    try:
        return _parts(_ENTRY.decode(line), want_text)
    except _FAILED:
        return None


def _parts(entry: _Entry, want_text: bool) -> ListedParts:
    message = entry.message
    if message is None:
        return entry.type, entry.name, False, None, None, None, entry.timestamp
    role = message.role
    text = None
    if want_text and role in _TEXT_ROLES:
        content = _CONTENT.decode(message.content)
        if content is None:
            text = ""
        elif type(content) is str:
            text = content
        else:
            text = " ".join([b.text for b in content if b.type == "text" and isinstance(b.text, str)])
    return entry.type, entry.name, True, role, text, message.timestamp, entry.timestamp
