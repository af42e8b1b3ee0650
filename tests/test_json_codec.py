"""The JS-compatible JSON codec (``sessiontree.format.pi_json``) against pi's own bytes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.format import pi_json as _json
from sessiontree.storage._encode import encode_entry
from tests.conftest import require_conformance

CASE = "edge-json-numbers-unicode"


def _lines(path: Path) -> list[bytes]:
    out = []
    for line in path.read_bytes().split(b"\n"):
        raw = line[:-1] if line.endswith(b"\r") else line
        if raw.strip():
            out.append(raw)
    return out


def test_every_parseable_conformance_line_reserializes_to_the_same_bytes() -> None:
    root = require_conformance()
    files = sorted(root.rglob("*.jsonl"))
    assert files, "no .jsonl files under the conformance directory"
    checked = 0
    mismatches: list[str] = []
    for path in files:
        for raw in _lines(path):
            try:
                value = _json.loads(raw)
            except ValueError:
                continue
            checked += 1
            if _json.dumps_bytes(value) != raw:
                mismatches.append(f"{path}: {raw[:120]!r}")
    assert checked > 1000
    assert mismatches == []


def test_input_literals_are_written_as_javascript_writes_them() -> None:
    case = require_conformance() / "cases" / CASE
    ops = _json.loads((case / "ops.input.json").read_bytes())["ops"]
    lines = _lines(case / "session.jsonl")[1:]  # entries, one per append op
    assert len(lines) == len(ops)
    compared = 0
    for op, line in zip(ops, lines, strict=True):
        for key in ("message", "data"):
            if key in op:
                assert b'"' + key.encode() + b'":' + _json.dumps_bytes(op[key]) in line
                compared += 1
    assert compared >= 5


def test_session_lines_of_the_edge_case_roundtrip() -> None:
    case = require_conformance() / "cases" / CASE
    for raw in _lines(case / "session.jsonl"):
        assert _json.dumps_bytes(_json.loads(raw)) == raw


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (2.5, "2.5"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (5e-324, "5e-324"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (-0.0, "0"),
        (9007199254740993, "9007199254740992"),
        (123456789012345678901234567890, "1.2345678901234568e+29"),
        (-1.5e3, "-1500"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.30000000000000004, "0.30000000000000004"),
        (math.inf, "null"),
        (math.nan, "null"),
    ],
)
def test_numbers_follow_javascript(value: float, text: str) -> None:
    assert _json.dumps(value) == text


def test_lone_surrogates_are_read_and_written_as_escapes() -> None:
    raw = b'{"a":"x\\ud800y\\udc00","b":"\\ud83d\\ude00"}'
    value = _json.loads(raw)
    assert value == {"a": "x\ud800y\udc00", "b": "\U0001f600"}
    assert _json.dumps_bytes(value) == '{"a":"x\\ud800y\\udc00","b":"😀"}'.encode()


def test_unicode_line_separators_stay_raw_and_controls_are_escaped() -> None:
    value = {"t": "a\u2028b\u2029c\x00d\x1fe\x7f"}
    assert _json.dumps(value) == '{"t":"a\u2028b\u2029c\\u0000d\\u001fe\x7f"}'


def test_array_index_keys_come_first_in_ascending_order() -> None:
    value = {
        "b": 1,
        "2": "two",
        "a": 2,
        "1": "one",
        "-1": "neg",
        "01": "lz",
        "4294967295": "x",
        "4294967294": "y",
    }
    assert _json.dumps(value) == (
        '{"1":"one","2":"two","4294967294":"y","b":1,"a":2,"-1":"neg","01":"lz","4294967295":"x"}'
    )


def test_undefined_values_are_omitted() -> None:
    assert _json.dumps({"a": 1, "b": _json.UNDEFINED, "c": [_json.UNDEFINED]}) == '{"a":1,"c":[null]}'


def test_invalid_json_raises_a_value_error() -> None:
    for bad in (b'{"a":1', b'{"a":1}{"b":2}', b"{'a':1}", b'{"a":NaN}'):
        with pytest.raises(ValueError):
            _json.loads(bad)


# -- the append fast path (orjson checked against the reference encoder) ------------------------------------
_keys = st.one_of(
    st.text(max_size=6),
    st.integers(min_value=0, max_value=2**32 + 5).map(str),
    st.sampled_from(["01", "-1", "1.5", "4294967294", "4294967295", "type", "id"]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-7, 1e-6, 1e16, 1e20, 1e21, 100.0, -0.0, 0.5, 5e-324, 2.0**53, 2.0**53 + 2]),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12),
    st.sampled_from(["\ud800", "a\udc00b", "1e+5,", "x.0]", "12345678901234567", '"1":']),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=25,
)


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6))
def test_fast_entry_encoder_gives_the_reference_bytes(value: dict[str, object]) -> None:
    assert encode_entry(value) == _json.dumps_bytes(value)


def test_fast_entry_encoder_on_every_conformance_line() -> None:
    root = require_conformance()
    count = 0
    for path in sorted(root.rglob("*.jsonl")):
        for raw in _lines(path):
            try:
                value = _json.loads(raw)
            except ValueError:
                continue
            assert encode_entry(value) == raw
            count += 1
    assert count > 1000


def test_fast_entry_encoder_refuses_what_the_reference_refuses() -> None:
    for bad in ({"a": object()}, {"a": {1, 2}}):
        with pytest.raises(TypeError):
            encode_entry(bad)
    assert encode_entry({"a": _json.UNDEFINED, "b": [1.0]}) == b'{"b":[1]}'


def test_loads_objects_parses_objects_at_once_and_declines_what_only_loads_parses() -> None:
    from sessiontree.format.pi_json import loads, loads_objects

    lines = [b'{"a":1}', memoryview(b'{"b":[1.5,"x"]}'), b'{"c":123456789012345678901234}']
    assert loads_objects(lines) == [loads(line) for line in lines]
    assert loads_objects([]) == []
    for odd in (b'{"a":"\\ud800"}', b"[1]", b'"text"', b"{"):
        assert loads_objects([b'{"a":1}', odd]) is None


def test_a_bulk_decode_with_a_line_only_the_fallback_parses_gives_what_one_by_one_decoding_gives(
    tmp_path: Path,
) -> None:
    from sessiontree.storage import JsonlStore

    path = tmp_path / "s.jsonl"
    header = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
    entries = [
        '{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x","data":1}',
        '{"type":"custom","id":"b","parentId":"a","timestamp":"t","customType":"x","data":"\\ud800"}',
        '{"type":"custom","id":"c","parentId":"b","timestamp":"t","customType":"x","data":1e400}',
    ]
    path.write_text("\n".join([header, *entries]) + "\n")
    bulk = JsonlStore.open(path, read_only=True)
    bulk.preload(range(3))
    one = JsonlStore.open(path, read_only=True)
    assert [bulk.entry_at(i) for i in range(3)] == [one._decode(i) for i in range(3)]
    assert bulk.entry_at(1)["data"] == "\ud800" and bulk.entry_at(2)["data"] == float("inf")
