"""Lenient parsing of a JSON object that is still arriving (tool-call arguments streamed in pieces).

Returns the largest complete prefix as a dict; it never raises and never guesses values that have not arrived.
"""

from __future__ import annotations

import re
from typing import Any

from sessiontree.format.pi_json import loads

__all__ = ["parse_partial_object"]

_TOKEN_END = frozenset(",]}: \t\r\n")
_DANGLING_UNICODE = re.compile(r"\\u[0-9a-fA-F]{0,3}$")


def _closers(stack: list[str] | tuple[str, ...]) -> str:
    return "".join("}" if c == "{" else "]" for c in reversed(stack))


def _is_scalar(token: str) -> bool:
    try:
        loads(token)
    except ValueError:
        return False
    return True


def _as_object(text: str) -> dict[str, Any] | None:
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_partial_object(text: str) -> dict[str, Any]:
    """Parse ``text`` as a JSON object, completing a cut-off tail; ``{}`` when nothing usable has arrived."""
    text = text.strip()
    if not text:
        return {}
    whole = _as_object(text)
    if whole is not None:
        return whole
    stack: list[str] = []
    safe_len, safe_stack = 0, ()  # type: int, tuple[str, ...]
    in_string = is_key = expect_key = False
    string_start = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
                if not is_key:
                    safe_len, safe_stack = i + 1, tuple(stack)
            i += 1
            continue
        if c == '"':
            in_string, string_start = True, i
            is_key = bool(stack) and stack[-1] == "{" and expect_key
        elif c in "{[":
            stack.append(c)
            expect_key = c == "{"
            safe_len, safe_stack = i + 1, tuple(stack)
        elif c in "}]":
            if stack:
                stack.pop()
            expect_key = False
            safe_len, safe_stack = i + 1, tuple(stack)
        elif c == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        elif c == ":":
            expect_key = False
        elif c not in " \t\r\n":
            j = i
            while j < n and text[j] not in _TOKEN_END:
                j += 1
            if _is_scalar(text[i:j]):
                safe_len, safe_stack = j, tuple(stack)
            i = j
            continue
        i += 1
    if in_string and not is_key:
        body = text[string_start + 1 :]
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2:
            body = body[:-1]
        body = _DANGLING_UNICODE.sub("", body) if trailing % 2 == 0 else body
        candidate = _as_object(text[: string_start + 1] + body + '"' + _closers(stack))
        if candidate is not None:
            return candidate
    if safe_len == 0:
        return {}
    return _as_object(text[:safe_len] + _closers(safe_stack)) or {}
