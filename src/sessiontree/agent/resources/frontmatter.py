"""Front matter of skills and prompt templates as pi reads it: after CRLF/CR→LF and BOM stripping, YAML
between a leading ``---`` and the next ``\\n---``; the body after it is trimmed. Text without front matter is
returned whole (normalised, not trimmed).

The YAML is read with YAML 1.2's core schema, as pi's parser does: only ``true``/``false`` are booleans
(``yes``/``on`` stay strings), dates stay strings, and a repeated key is an error.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

from ...errors import ResourceError
from ._text import js_trim, normalize_newlines, strip_bom

__all__ = ["parse_frontmatter", "split_frontmatter", "strip_frontmatter"]


class _CoreSchemaLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalars and unique mapping keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            try:
                repeated = key in seen
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if repeated:
                raise ConstructorError(None, None, f"repeated key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_REPLACED = {
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
}
_CoreSchemaLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _pattern, _firsts in (
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (
        "float",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        "-+.0123456789",
    ),
):
    _CoreSchemaLoader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_pattern})$"), list(_firsts)
    )


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """``(yaml, body)``: ``yaml`` is None without front matter (then ``body`` is the whole normalised text)."""
    normalized = normalize_newlines(strip_bom(text))
    if not normalized.startswith("---"):
        return None, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return None, normalized
    return normalized[4:end], js_trim(normalized[end + 4 :])


def parse_frontmatter(text: str, path: str) -> tuple[dict[str, Any], str]:
    """``(fields, body)``. A mapping is returned as is; empty or non-mapping YAML gives ``{}``. Broken YAML
    raises ResourceError naming ``path`` and the file's line."""
    source, body = split_frontmatter(text)
    if not source:
        return {}, body
    try:
        # The closing newline: pi's parser ends a last block scalar (``>``, ``|``) with one, as if it were there.
        parsed = yaml.load(
            source + "\n", Loader=_CoreSchemaLoader
        )  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else None  # +1 for 1-based, +1 for the opening ---
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f"{path}:{line}" if line is not None else path
        raise ResourceError(f"{where}: invalid front matter: {problem}", path=path, line=line) from exc
    except RecursionError as exc:
        raise ResourceError(f"{path}: invalid front matter: nested too deeply", path=path) from exc
    return (parsed if isinstance(parsed, dict) else {}), body


def strip_frontmatter(text: str, path: str) -> str:
    """The body after the front matter (raises like ``parse_frontmatter``)."""
    return parse_frontmatter(text, path)[1]
