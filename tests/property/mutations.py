"""A seeded mutator over pi session files: the damage files meet in the wild and the values a hostile file can
hold (byte flips, truncation, lost/duplicated/swapped/glued/blank lines, CRLF, BOM, invalid UTF-8, NUL, huge
numbers, deep nesting, cycles, duplicate ids, odd header versions, odd field types and timestamps).

Pure functions of ``(random.Random, bytes)``; the fuzz test and the long-run script share them.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable

Mutation = Callable[[random.Random, bytes], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines)


def _entry_lines(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if i and line.startswith(b"{")]


def byte_flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def delete_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    return _join(lines)


def duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[at])
    return _join(lines)


def duplicate_every_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    return _join([lines[0], *(x for line in lines[1:] for x in (line, line))])


def swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if len(lines) > 2:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    return _join(lines)


def glue_lines(rng: random.Random, data: bytes) -> bytes:
    newlines = [m.start() for m in re.finditer(b"\n", data)]
    if not newlines:
        return data
    at = rng.choice(newlines)
    out = data[:at] + data[at + 1 :]
    if rng.random() < 0.5:  # the adversarial case: a blank line elsewhere keeps the line count
        lines = _lines(out)
        lines.insert(rng.randrange(len(lines) + 1), b"")
        out = _join(lines)
    return out


def blank_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, 4)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"  ", b"\t", b"\r", b" \r"]))
    return _join(lines)


def crlf(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.5:
        return data.replace(b"\n", b"\r\n")
    lines = _lines(data)
    return _join([line + b"\r" if rng.random() < 0.3 else line for line in lines])


def bom(rng: random.Random, data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def invalid_utf8(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]) + data[at:]


def nul(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + b"\x00" * rng.randint(1, 3) + data[at:]


_NUMBER = re.compile(rb"(?<=[:,\[])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=[,}\]])")


def huge_number(rng: random.Random, data: bytes) -> bytes:
    found = list(_NUMBER.finditer(data))
    if not found:
        return data
    m = rng.choice(found)
    value = rng.choice([b"9" * 400, b"-" + b"9" * 400, b"1e400", b"-1e400", b"1e16", b"1e-400", b"0.1e999"])
    return data[: m.start()] + value + data[m.end() :]


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    targets = _entry_lines(lines)
    if not targets:
        return data
    at = rng.choice(targets)
    depth = rng.choice([200, 600, 1000, 1023, 1030, 3000, 50_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"k":', b"}")])
    value = opener * depth + b"1" + closer * depth
    line = lines[at]
    if line.endswith(b"}"):
        lines[at] = line[:-1] + b',"deep":' + value + b"}"
    return _join(lines)


_ID = re.compile(rb'"id":"([^"\\]*)"')
_PARENT = re.compile(rb'"parentId":(null|"[^"\\]*")')


def cycle(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    targets = _entry_lines(lines)
    if len(targets) < 1:
        return data
    a = rng.choice(targets)
    later = [t for t in targets if t >= a]
    b = rng.choice(later)
    found = _ID.search(lines[b])
    if found is None:
        return data
    # a's parent becomes b, at or below a: a self-parent or a longer cycle
    lines[a] = _PARENT.sub(b'"parentId":"' + found.group(1) + b'"', lines[a], count=1)
    return _join(lines)


def duplicate_id(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    targets = _entry_lines(lines)
    if len(targets) < 2:
        return data
    a, b = rng.sample(targets, 2)
    found = _ID.search(lines[a])
    if found is None:
        return data
    lines[b] = _ID.sub(b'"id":"' + found.group(1) + b'"', lines[b], count=1)
    return _join(lines)


def header_version(rng: random.Random, data: bytes) -> bytes:
    value = rng.choice([b'"abc"', b"null", b'"3"', b"true", b"1e400", b"9" * 400, b"2", b"1", b"-1", b"3.5"])
    head, sep, rest = data.partition(b"\n")
    if b'"version":' in head:
        head = re.sub(rb'"version":[^,}]*', b'"version":' + value, head, count=1)
    elif head.endswith(b"}"):
        head = head[:-1] + b',"version":' + value + b"}"
    return head + sep + rest


_ODD_VALUES = [b"5", b"null", b"true", b'"x"', b"[]", b"{}", b"[1,{}]", b'{"a":[]}', b"-0", b"1e308"]
_FIELDS = [
    b"timestamp",
    b"parentId",
    b"activeToolNames",
    b"message",
    b"content",
    b"role",
    b"type",
    b"targetId",
    b"label",
    b"name",
    b"summary",
    b"firstKeptEntryId",
    b"retainedTail",
    b"usage",
    b"arguments",
    b"thinkingLevel",
    b"provider",
    b"modelId",
    b"customType",
    b"display",
    b"fromId",
    b"stopReason",
]


def odd_field(rng: random.Random, data: bytes) -> bytes:
    """Replace the value of one occurrence of a known field (any JSON value, objects included)."""
    field = rng.choice(_FIELDS)
    found = [m.end() for m in re.finditer(rb'"' + field + rb'":', data)]
    if not found:
        return data
    start = rng.choice(found)
    try:
        text = data[start:].decode("utf-8", "surrogateescape")
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return data
    stop = start + len(text[:end].encode("utf-8", "surrogateescape"))
    return data[:start] + rng.choice(_ODD_VALUES) + data[stop:]


def odd_timestamp(rng: random.Random, data: bytes) -> bytes:
    value = rng.choice(
        [
            b'"0001-01-01T00:00:00"',
            b'"9999-12-31T23:59:59"',
            b'"0000-00-00T00:00:00Z"',
            b'"2025-02-30T25:61:61Z"',
            b'"2025-01-01T00:00:00+99:99"',
            b"1e16",
            b"1e400",
            b"9" * 400,
            b"-1",
        ]
    )
    found = list(re.finditer(rb'"timestamp":("[^"]*"|-?\d+)', data))
    if not found:
        return data
    m = rng.choice(found)
    return data[: m.start(1)] + value + data[m.end(1) :]


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (
        byte_flip,
        truncate,
        delete_line,
        duplicate_line,
        duplicate_every_line,
        swap_lines,
        glue_lines,
        blank_lines,
        crlf,
        bom,
        invalid_utf8,
        nul,
        huge_number,
        deep_nesting,
        cycle,
        duplicate_id,
        header_version,
        odd_field,
        odd_timestamp,
    )
}


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, list[str]]:
    """One to three random mutations of ``data``, and their names."""
    names = [rng.choice(list(MUTATIONS)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    for name in names:
        data = MUTATIONS[name](rng, data)
    return data, names
