"""Streaming tool arguments: cut-off JSON objects parse to their complete prefix."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.llm._partial_json import parse_partial_object


def test_examples() -> None:
    assert parse_partial_object("") == {}
    assert parse_partial_object('{"a": "hel') == {"a": "hel"}
    assert parse_partial_object('{"a": "x\\u12') == {"a": "x"}
    assert parse_partial_object('{"a": [1, 2') == {"a": [1, 2]}
    assert parse_partial_object('{"a": {"b": "c"}, "d') == {"a": {"b": "c"}}
    assert parse_partial_object('{"a": tr') == {}
    assert parse_partial_object("[1, 2]") == {}
    assert parse_partial_object("not json") == {}


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),  # JS-exact numbers
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=5), values, max_size=4))
def test_every_prefix_parses_and_the_whole_is_exact(obj: dict[str, object]) -> None:
    text = json.dumps(obj)
    for end in range(len(text)):
        assert isinstance(parse_partial_object(text[:end]), dict)
    assert parse_partial_object(text) == obj
