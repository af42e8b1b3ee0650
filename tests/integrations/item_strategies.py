"""Hypothesis strategies for Responses input items, derived from the SDK's own TypedDicts.

Every member of ``ResponseInputItemParam`` (the Agents SDK's ``TResponseInputItem``) gets a strategy built
from its annotations, so a new item type in the SDK is covered without editing this file. Deep or unknown
annotations fall back to arbitrary JSON values: the mapping must be lossless for any JSON object.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

from hypothesis import strategies as st
from openai.types.responses.response_input_item_param import ResponseInputItemParam
from typing_extensions import is_typeddict

MAX_DEPTH = 4

# pi's files hold JavaScript numbers: an integral float of 2**53 or more is written as digits (1e16 as
# 10000000000000000) and read back as an int that need not equal it. Items keep numbers below that.
floats = st.floats(min_value=-(2.0**53), max_value=2.0**53, allow_nan=False)

text = st.text(max_size=12)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    floats,
    text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, max_size=4)

_LISTS = {list, Iterable, Sequence, typing.Iterable, typing.Sequence, typing.List}  # noqa: UP006


def strategy_for(tp: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of annotation ``tp`` as JSON data (TypedDicts as dicts, iterables as lists)."""
    if depth > MAX_DEPTH:
        return json_values
    origin = get_origin(tp)
    if tp is str:
        return text
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return floats | st.integers(-1000, 1000)
    if tp is type(None):
        return st.none()
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is Union or isinstance(tp, types.UnionType):
        return st.one_of([strategy_for(a, depth + 1) for a in get_args(tp)])
    if is_typeddict(tp):
        return typed_dict(tp, depth + 1)
    if origin in (dict, Mapping, typing.Dict):  # noqa: UP006
        args = get_args(tp)
        values = strategy_for(args[1], depth + 1) if len(args) == 2 else json_values
        return st.dictionaries(text, values, max_size=3)
    args = get_args(tp)
    if origin in _LISTS or (origin is not None and len(args) == 1):
        return st.lists(strategy_for(args[0], depth + 1) if args else json_values, max_size=3)
    return json_values


def _strip(hint: Any) -> Any:
    return get_args(hint)[0] if get_origin(hint) is Annotated else hint


_typed_dicts: dict[Any, st.SearchStrategy[dict[str, Any]]] = {}


def typed_dict(tp: Any, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    if tp not in _typed_dicts:
        required: dict[str, st.SearchStrategy[Any]] = {}
        optional: dict[str, st.SearchStrategy[Any]] = {}
        # The SDK's modules postpone annotations, which hides Required[...] from __required_keys__.
        for key, hint in get_type_hints(tp, include_extras=True).items():
            wrapper = get_origin(hint)
            if wrapper in (Required, NotRequired):
                hint = get_args(hint)[0]
            is_required = wrapper is Required or (wrapper is not NotRequired and tp.__total__)
            (required if is_required else optional)[key] = strategy_for(_strip(hint), depth)
        _typed_dicts[tp] = st.fixed_dictionaries(required, optional=optional)
    return _typed_dicts[tp]


ITEM_TYPES: tuple[Any, ...] = get_args(ResponseInputItemParam)
typed_items = st.one_of([typed_dict(t, 0) for t in ITEM_TYPES])
"""An item of any type the SDK defines, shaped as its TypedDict says."""

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
extras = st.dictionaries(
    st.sampled_from(["id", "status", "phase", "annotations", "detail"]), json_values, max_size=2
)
input_parts = st.one_of(
    st.builds(lambda t, x: {"type": "input_text", "text": t, **x}, text, extras),
    st.builds(
        lambda m, x: {"type": "input_image", "image_url": f"data:{m};base64,{PNG}", **x},
        st.sampled_from(["image/png", "image/jpeg"]),
        extras,
    ),
    st.builds(lambda u: {"type": "input_image", "image_url": u, "detail": "auto"}, text),
    st.builds(lambda f: {"type": "input_file", "file_id": f}, text),
)
output_parts = st.one_of(
    st.builds(lambda t: {"type": "output_text", "text": t, "annotations": [], "logprobs": []}, text),
    st.builds(lambda t: {"type": "refusal", "refusal": t}, text),
)
arguments = st.one_of(
    st.dictionaries(text, json_scalars, max_size=3).map(lambda d: json.dumps(d)),
    st.dictionaries(text, json_scalars, max_size=3).map(
        lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False)
    ),
    text,
)
mapped_items = st.one_of(
    st.builds(
        lambda r, c, x: {"role": r, "content": c, **x},
        st.sampled_from(["user", "system", "developer"]),
        text | st.lists(input_parts, max_size=3),
        st.dictionaries(st.sampled_from(["type", "id", "status"]), st.just("message"), max_size=1),
    ),
    st.builds(
        lambda c, i: {"type": "message", "role": "assistant", "id": i, "status": "completed", "content": c},
        st.lists(output_parts, max_size=3),
        text,
    ),
    st.builds(lambda c: {"role": "assistant", "content": c}, text),
    st.builds(
        lambda i, s, c, e: {"type": "reasoning", "id": i, "summary": s, **c, **e},
        text,
        st.lists(st.builds(lambda t: {"type": "summary_text", "text": t}, text), max_size=3),
        st.dictionaries(
            st.just("content"),
            st.lists(st.builds(lambda t: {"type": "reasoning_text", "text": t}, text), max_size=2),
        ),
        st.dictionaries(st.just("encrypted_content"), text),
    ),
    st.builds(
        lambda c, n, a, i: {"type": "function_call", "call_id": c, "name": n, "arguments": a, **i},
        st.sampled_from(["call_1", "call_2", "call_3"]),
        text,
        arguments,
        st.dictionaries(st.sampled_from(["id", "status"]), text, max_size=2),
    ),
    st.builds(
        lambda c, o: {"type": "function_call_output", "call_id": c, "output": o},
        st.sampled_from(["call_1", "call_2", "call_4"]),
        text | st.lists(input_parts, max_size=3),
    ),
)
"""Items of the kinds that become pi messages, with the fields that stay in the residuals."""

items = st.one_of(typed_items, mapped_items, mapped_items, json_objects)
"""Items of every type the SDK defines, the mapped kinds more often, and arbitrary objects."""

batches = st.lists(st.lists(items, min_size=1, max_size=5), min_size=1, max_size=5)
"""``add_items`` calls: lists of items."""
