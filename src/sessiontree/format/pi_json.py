"""JSON the way pi reads and writes it: JavaScript's ``JSON.parse`` / ``JSON.stringify`` semantics.

Owns byte-exact serialization (JS number formatting, lone surrogates escaped as ``\\udXXX``, raw UTF-8,
array-index keys first) and tolerant parsing (orjson, stdlib fallback). Knows nothing about entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "JSONDecodeError",
    "dumps",
    "dumps_bytes",
    "first_object",
    "js_number",
    "loads",
    "loads_objects",
    "utf16_len",
]

JSONDecodeError = json.JSONDecodeError

_MAX_SAFE = 2**53
_MAX_INDEX = 2**32 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")
_encode_str: Any = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_stdlib_decoder = json.JSONDecoder(parse_constant=_reject_constant)


MAX_DEPTH = 1024
"""Deepest nesting ``loads`` accepts (orjson's own limit); deeper text is rejected as not JSON."""


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text as ``JSON.parse`` would (lone-surrogate escapes and huge numbers included).

    Raises ``JSONDecodeError`` (a ``ValueError``) when the text is not JSON, and also when it nests deeper
    than ``MAX_DEPTH`` levels (JavaScript would parse it; sessiontree refuses it rather than recursing).
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc):  # orjson's fixed limit: the same verdict on every stack depth
            raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", "", 0) from None
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "surrogateescape")
    try:
        return _stdlib_decoder.decode(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to decode", text[:80], 0) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        raise json.JSONDecodeError(str(exc), text, 0) from None


def loads_objects(texts: Sequence[bytes | bytearray | memoryview]) -> list[dict[str, Any]] | None:
    """Each of ``texts`` parsed as ``loads`` would, when every one is a JSON object orjson takes (one loop in
    C: most lines of a session); else ``None``, and the caller parses them one by one (with ``loads``)."""
    try:
        values = list(map(orjson.loads, texts))
    except orjson.JSONDecodeError:
        return None
    return values if set(map(type, values)) <= {dict} else None


def first_object(block: bytes) -> dict[str, Any] | None:
    """The value on the first non-blank line of ``block`` (a session's header block, a UTF-8 BOM allowed)
    when it is an object, else ``None``."""
    text = block[3:] if block.startswith(b"\xef\xbb\xbf") else block
    for line in text.split(b"\n"):
        if line.strip():
            value = loads(line)
            return value if isinstance(value, dict) else None
    return None


def js_number(value: float | int) -> str:
    """Format a number exactly as JavaScript's ``Number.prototype.toString`` (and JSON.stringify) does."""
    if isinstance(value, int):
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) <= _MAX_SAFE:
        return str(int(value))
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    k = len(digits)
    n = len("".join(map(str, digit_tuple))) + exponent  # value = 0.digits * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _string(value: str) -> str:
    out: str = _encode_str(value)
    if not value.isascii() and _SURROGATE.search(out):
        out = _SURROGATE.sub(_escape_surrogate, out)
    return out


def _is_index_key(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < _MAX_INDEX


_END = object()


def _ordered_items(value: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """A mapping's items in ``JSON.stringify`` order: array-index keys first (ascending), then insertion."""
    items = list(value.items())
    if any(_is_index_key(k) for k, _ in items if isinstance(k, str)):
        index_items = sorted((kv for kv in items if _is_index_key(kv[0])), key=lambda kv: int(kv[0]))
        items = index_items + [kv for kv in items if not _is_index_key(kv[0])]
    return items


def _encode(value: Any, parts: list[str]) -> None:
    # Iterative (an explicit stack of open containers), so any nesting depth encodes without RecursionError.
    out = parts.append
    stack: list[list[Any]] = []  # [iterator, is_mapping, items written so far]
    while True:
        if isinstance(value, str):
            out(_string(value))
        elif value is None:
            out("null")
        elif value is True:
            out("true")
        elif value is False:
            out("false")
        elif isinstance(value, (int, float)):
            out(js_number(value))
        elif isinstance(value, Mapping):
            out("{")
            stack.append([iter(_ordered_items(value)), True, 0])
        elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            out("[")
            stack.append([iter(value), False, 0])
        else:
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        while stack:
            state = stack[-1]
            if state[1]:
                for pair in state[0]:
                    if pair[1] is not _UNDEFINED:
                        break
                else:
                    out("}")
                    stack.pop()
                    continue
                if state[2]:
                    out(",")
                state[2] += 1
                out(_string(str(pair[0])))
                out(":")
                value = pair[1]
                break
            item = next(state[0], _END)
            if item is _END:
                out("]")
                stack.pop()
                continue
            if state[2]:
                out(",")
            state[2] += 1
            value = None if item is _UNDEFINED else item
            break
        else:
            return


class _Undefined:
    """Marker for a JavaScript ``undefined`` value: the key is omitted when written."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"


_UNDEFINED = _Undefined()
UNDEFINED: Any = _UNDEFINED


def dumps(value: Any) -> str:
    """Serialize exactly as JavaScript's ``JSON.stringify(value)`` (compact, raw UTF-8)."""
    parts: list[str] = []
    _encode(value, parts)
    return "".join(parts)


def dumps_bytes(value: Any) -> bytes:
    """``dumps`` encoded as UTF-8 (lone surrogates are already escaped, so this cannot fail)."""
    return dumps(value).encode("utf-8")


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units: JavaScript's ``string.length``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
