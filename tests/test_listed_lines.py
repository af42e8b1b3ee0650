"""A listing reads each entry line without building the entry (``SessionInfoBuilder.add_line``): it must
describe every session exactly as decoding each line whole (``add(loads(line))``) does, whatever the lines
hold."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from sessiontree.format import pi_json
from sessiontree.storage.listed_lines import listed_parts
from sessiontree.storage.session_dirs import SessionInfoBuilder, build_session_info

_MESSAGE = '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-02T03:04:05.000Z","message":%s}'
_ODD_MESSAGES = [
    '{"role":"user","content":"plain text","timestamp":1767323045000}',
    '{"role":"user","content":[{"type":"text","text":"one"},{"type":"image","data":"AAAA"},'
    '{"type":"text","text":"two"}]}',
    '{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c",'
    '"name":"bash","arguments":{"command":"ls"}},{"type":"text","text":"done"}],"timestamp":1.5e12}',
    '{"role":"assistant","content":[{"type":"text","text":5},{"type":"text"},"bare",null,7]}',
    '{"role":"user","content":5}',
    '{"role":"user","content":{"type":"text","text":"an object"}}',
    '{"role":"user","content":null}',
    '{"role":"user"}',
    '{"role":"user","content":"x","timestamp":"not a number"}',
    '{"role":"user","content":"x","timestamp":true}',
    '{"role":"user","content":"x","timestamp":123456789012345678901234567890}',
    '{"role":"user","content":"x","timestamp":-1e300}',
    '{"role":"user","content":"x","timestamp":1e400}',
    '{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"output"}]}',
    '{"role":["user"],"content":"a role that is a list"}',
    '{"role":"user","role":"assistant","content":"duplicate keys: the last wins"}',
    '{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}',
    '{"role":"user","content":"lone \\ud800 surrogate"}',
    '{"role":"user","content":"escapes \\n \\t \\u00e9 \\"quoted\\""}',
    '"a message that is a string"',
    "null",
    "[1,2]",
]
_ODD_LINES = [
    *(_MESSAGE % m for m in _ODD_MESSAGES),
    '{"type":"session_info","id":"s","name":"  a name  "}',
    '{"type":"session_info","id":"s","name":"   "}',
    '{"type":"session_info","id":"s","name":7}',
    '{"type":"session_info","id":"s"}',
    '{"type":"message","id":"m"}',
    '{"type":["message"],"message":{"role":"user","content":"x"}}',
    '{"type":"model_change","id":"x","provider":"p","modelId":"m"}',
    '{"type":"custom_message","content":"not listed"}',
    "[]",
    '"text"',
    "42",
    "{not json",
    '{"type":"message","message":{"role":"user","content":"x"}} trailing',
    '{"type":"message","message":{"role":"user","content":"x"}}{"type":"message"}',
    '{"type":"message","message":{"role":"user","content":NaN}}',
    '{"type":"message","message":{"role":"user","content":"raw\ttab"}}',
    '{"type":"message","message":{"role":"user","content":"raw\x01control"}}',
    '{"type":"message","message":{"role":"user","content":"bad escape \\q"}}',
]


def _deep(depth: int) -> str:
    return _MESSAGE % ('{"role":"user","content":"deep","extra":' + "[" * depth + "]" * depth + "}")


_ODD_LINES += [_deep(n) for n in (10, 900, 1000, 1023, 1024, 1025, 1500, 5000)]


def _by_dicts(lines: list[bytes]) -> SessionInfoBuilder:
    builder = SessionInfoBuilder()
    for line in lines:
        try:
            entry = pi_json.loads(line)
        except ValueError:
            continue
        builder.add(entry)
    return builder


def _by_lines(lines: list[bytes], keep_texts: bool = True) -> SessionInfoBuilder:
    builder = SessionInfoBuilder(keep_texts=keep_texts)
    for line in lines:
        builder.add_line(line)
    return builder


def _state(builder: SessionInfoBuilder) -> tuple[object, ...]:
    return (
        builder.message_count,
        builder.first_message,
        builder.texts,
        builder.name,
        builder.last_activity,
    )


@pytest.mark.parametrize("line", _ODD_LINES, ids=range(len(_ODD_LINES)))
def test_each_odd_line_is_described_as_its_whole_decoding_describes_it(line: str) -> None:
    raw = line.encode("utf-8", "surrogatepass")
    assert _state(_by_lines([raw])) == _state(_by_dicts([raw]))


def test_invalid_utf8_and_every_line_together_are_described_alike() -> None:
    lines = [line.encode("utf-8", "surrogatepass") for line in _ODD_LINES]
    lines.insert(3, _MESSAGE.encode() % b'{"role":"user","content":"bad \xff byte"}')
    assert _state(_by_lines(lines)) == _state(_by_dicts(lines))
    # keep_texts=False takes the first user message only, as add() does
    alone = SessionInfoBuilder(keep_texts=False)
    for line in lines:
        try:
            alone.add(pi_json.loads(line))
        except ValueError:
            continue
    assert _state(_by_lines(lines, keep_texts=False)) == _state(alone)


def test_the_fast_path_reads_plain_messages_and_hands_odd_ones_back() -> None:
    plain = (_MESSAGE % _ODD_MESSAGES[1]).encode()
    parts = listed_parts(plain, True)
    assert parts is not None and parts[4] == "one two"
    assert listed_parts((_MESSAGE % _ODD_MESSAGES[4]).encode(), True) is None  # content 5: the dict path
    assert listed_parts(_deep(1025).encode(), True) is None  # maybe too deep: the dict path decides


def test_lines_deeper_than_the_limit_are_refused_whatever_the_recursion_limit() -> None:
    """msgspec's own depth limit follows the interpreter's (raised here, as 3.12's C limit is higher): a
    line the dict path refuses as too deep is still not counted."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        for depth in (1025, 1500):
            raw = _deep(depth).encode()
            assert listed_parts(raw, True) is None
            assert _state(_by_lines([raw])) == _state(_by_dicts([raw])) == (0, None, [], None, None)
    finally:
        sys.setrecursionlimit(limit)


def _reference_info(path: Path) -> dict[str, object] | None:
    """``build_session_info`` as it was: every line decoded whole (the first JSON line is the header)."""
    lines = [raw.strip() for raw in path.read_bytes().split(b"\n")]
    values = []
    for line in lines:
        if not line:
            continue
        try:
            values.append(pi_json.loads(line))
        except ValueError:
            continue
    if not values or not isinstance(values[0], dict) or values[0].get("type") != "session":
        return None
    builder = SessionInfoBuilder()
    for value in values[1:]:
        builder.add(value)
    from datetime import UTC, datetime

    return builder.info(path, values[0], datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)).to_dict()


def test_every_conformance_file_is_listed_as_decoding_every_line_lists_it(
    tmp_path: Path, conformance_dir: Path
) -> None:
    files = sorted(conformance_dir.rglob("*.jsonl"))
    assert len(files) > 20
    for n, source in enumerate(files):
        path = tmp_path / f"{n}.jsonl"
        shutil.copyfile(source, path)
        info = build_session_info(path)
        assert (info.to_dict() if info is not None else None) == _reference_info(path), source


def test_a_file_with_damaged_lines_is_listed_as_before(tmp_path: Path) -> None:
    header = json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z"})
    body = "\n".join(["garbage first", header, *_ODD_LINES, "", "   ", _MESSAGE % _ODD_MESSAGES[0]])
    path = tmp_path / "odd.jsonl"
    path.write_bytes(body.encode("utf-8", "surrogatepass") + b"\r\n{torn")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    info = build_session_info(path)
    assert info is not None
    assert info.to_dict() == _reference_info(path)
    assert info.first_message == "plain text"


@pytest.mark.parametrize("final_newline", [True, False])
def test_lines_across_read_blocks_and_longer_than_one_are_listed_whole(
    tmp_path: Path, final_newline: bool
) -> None:
    """The file is read a block at a time: lines cut by a block's end, and a line of several blocks, are
    put together again."""
    header = json.dumps({"type": "session", "version": 3, "id": "s2", "timestamp": "2026-01-01T00:00:00Z"})
    lines = [header]
    for n in range(400):
        size = 300_000 if n == 7 else 150 + (n * 37) % 900
        text = f"message {n} " + "x" * size
        role = "user" if n % 2 else "assistant"
        lines.append(_MESSAGE % json.dumps({"role": role, "content": [{"type": "text", "text": text}]}))
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""), "utf-8")
    assert path.stat().st_size > 4 * (1 << 16)
    info = build_session_info(path)
    assert info is not None
    assert info.to_dict() == _reference_info(path)
    assert info.message_count == 400 and len(info.all_messages_text) > 300_000


@pytest.mark.parametrize(
    "items",
    [
        [],
        [{"a": 1}],
        [{"text": "bidi \u202e and \u0085 and \u2028 and \x7f", "n": [1.5, None, True]}, "x", 3, [], {}],
        [{"lone": "\ud800"}, {"emoji": "🧹"}],
    ],
)
def test_a_json_list_written_an_item_at_a_time_is_the_list_written_whole(
    items: list[object], capsys: pytest.CaptureFixture[str]
) -> None:
    """``list --json`` writes its sessions one by one (a gigabyte's texts are never one string)."""
    from sessiontree.cli._common import emit_json, emit_json_list

    emit_json(items)
    whole = capsys.readouterr().out
    emit_json_list(iter(items))
    assert capsys.readouterr().out == whole
    assert json.loads(whole) == json.loads(json.dumps(items))
