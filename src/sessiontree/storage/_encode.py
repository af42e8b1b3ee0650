"""Fast byte-exact serialization of entries for appends: orjson, checked against JavaScript's number rules.

Falls back to ``_json.dumps_bytes`` (the reference encoder) whenever orjson's output could differ from
``JSON.stringify``; it must never produce bytes the reference encoder would not.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from sessiontree.format import pi_json as _json

__all__ = ["encode_entry"]

_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)

# Where orjson and JSON.stringify can disagree, and the token shapes that reveal it in orjson's output:
#   integral floats ("100.0", "-0.0"; JS writes "100", "0"), exponent forms (orjson always writes "e+"/"e-";
#   JS uses fixed notation for 1e-7 < |x| < 1e21), integers beyond 2**53 (JS rounds them: 16+ digits),
#   array-index keys (JS puts them first). Text inside strings can trigger a probe too: that only costs a
#   call of the reference encoder. Probes start with a literal so the regex engine can skip ahead quickly.
_INTEGRAL_FLOAT = re.compile(rb"\.0(?:[,}\]]|$)")
_EXPONENT = re.compile(rb"e[-+][0-9]+(?:[,}\]]|$)")
_DIGIT_KEY = re.compile(rb'"0+":')  # searched with every digit mapped to "0"
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_SIXTEEN = b"0" * 16


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _differs(out: bytes) -> bool:
    if _INTEGRAL_FLOAT.search(out):
        return True
    match = _EXPONENT.search(out)
    while match is not None:
        at = match.start()
        if at and 48 <= out[at - 1] <= 57:
            return True
        match = _EXPONENT.search(out, at + 1)
    zeros = out.translate(_DIGITS_TO_ZERO)
    if _DIGIT_KEY.search(zeros):
        return True
    at = zeros.find(_SIXTEEN)
    while at >= 0:  # a run of 16+ digits that is not a fraction's tail: an integer JavaScript rounds
        start = at
        while start and zeros[start - 1] == 48:
            start -= 1
        if not start or zeros[start - 1] != 46:
            return True
        end = at + 16
        while end < len(zeros) and zeros[end] == 48:
            end += 1
        at = zeros.find(_SIXTEEN, end)
    return False


_SAFE_INT = 2**53


def _integral_floats_as_ints(value: Any) -> Any:
    """``value`` with integral floats below 2**53 as ints (JavaScript prints them so); copies only what changes."""
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() and -_SAFE_INT < value < _SAFE_INT else value
    if kind is dict:
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            new = _integral_floats_as_ints(item)
            if new is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = new
        return value if changed is None else changed
    if kind is list or kind is tuple:
        items = [_integral_floats_as_ints(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def encode_entry(entry: Any) -> bytes:
    """``_json.dumps_bytes(entry)``, computed by orjson when that is provably the same bytes."""
    try:
        out = orjson.dumps(entry, default=_refuse, option=_OPTIONS)
        if not _differs(out):
            return out
        if _INTEGRAL_FLOAT.search(out):  # Python code often hands over 0.0 where JavaScript has 0
            normalized = _integral_floats_as_ints(entry)
            if normalized is not entry:
                out = orjson.dumps(normalized, default=_refuse, option=_OPTIONS)
                if not _differs(out):
                    return out
    except (TypeError, RecursionError):  # lone surrogates, UNDEFINED markers, non-str keys, other types
        pass
    return _json.dumps_bytes(entry)
