"""Tool-argument checks against a tool's JSON schema (the subset tools use), with the coercions models need.

Pure: takes arguments and a schema, returns checked arguments or raises ``ToolArgumentError`` with every
problem listed; it never runs a tool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sessiontree.format.pi_json import dumps

__all__ = ["ToolArgumentError", "validate_arguments"]


class ToolArgumentError(ValueError):
    """Arguments that do not fit the tool's schema; the message lists each problem and the arguments."""


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _coerce(value: Any, kind: str) -> Any:
    """Values a model commonly sends in the wrong JSON type ("5" for 5, "true" for true, 2.0 for 2)."""
    if isinstance(value, str):
        text = value.strip()
        if kind in ("number", "integer"):
            try:
                number = float(text)
            except ValueError:
                return value
            if not math.isfinite(number):
                return value
            if number.is_integer():
                return int(number)
            return number if kind == "number" else value
        if kind == "boolean" and text in ("true", "false"):
            return text == "true"
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _matches(value: Any, kind: str) -> bool:
    if kind in ("number", "integer") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(kind, (object,)))


def _check(value: Any, schema: Mapping[str, Any], where: str, problems: list[str]) -> Any:
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []
    if kinds and not any(_matches(value, k) for k in kinds):
        for k in kinds:
            coerced = _coerce(value, k)
            if _matches(coerced, k):
                value = coerced
                break
        else:
            problems.append(f"{where}: must be {' or '.join(kinds)}")
            return value
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        problems.append(f"{where}: must be one of {', '.join(dumps(v) for v in enum)}")
    if isinstance(value, dict):
        properties = schema.get("properties")
        props: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        for name in schema.get("required") or ():
            if name not in value:
                problems.append(f"{where}: must have required property '{name}'")
        checked: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key)
            if isinstance(sub, Mapping):
                checked[key] = _check(item, sub, f"{where}/{key}" if where != "root" else key, problems)
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}: must not have additional property '{key}'")
            else:
                checked[key] = item
        return checked
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_check(item, items, f"{where}/{i}", problems) for i, item in enumerate(value)]
    return value


def validate_arguments(tool_name: str, schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """``arguments`` checked against ``schema`` (coerced where a model sent a string for a number or boolean)."""
    problems: list[str] = []
    if not isinstance(arguments, dict):
        problems.append("root: must be object")
        checked: Any = arguments
    else:
        checked = _check(arguments, schema, "root", problems)
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise ToolArgumentError(
            f'Validation failed for tool "{tool_name}":\n{listing}\n\nReceived arguments:\n{dumps(arguments)}'
        )
    return checked  # type: ignore[no-any-return]
