"""The names both directions of the Agents SDK mapping share (``mapping`` writes items as pi messages,
``restore`` reads them back): where a message keeps its items' residuals, the custom types, the ``api`` and
``provider`` of stored replies, and the JSON text of tool-call arguments. Pure; no I/O.
"""

from __future__ import annotations

from typing import Any

import orjson

from sessiontree.format.pi_json import dumps

__all__ = [
    "API",
    "EXTRA_KEY",
    "INSTRUCTION_ROLES",
    "INSTRUCTION_TYPES",
    "ITEM_CUSTOM_TYPE",
    "PROVIDER",
    "TEXT_PARTS",
    "Item",
    "arguments_text",
    "compact_json",
    "instruction_custom_type",
]

Item = dict[str, Any]

EXTRA_KEY = "openaiAgents"
"""The key of a stored pi message that holds its items' residuals."""
ITEM_CUSTOM_TYPE = "openai-agents.item"
"""``customType`` of the custom entries that hold items pi has no message for."""
API = "openai-responses"
PROVIDER = "openai-agents"

INSTRUCTION_ROLES = ("system", "developer")
TEXT_PARTS = ("input_text", "output_text")


def instruction_custom_type(role: str) -> str:
    """The ``customType`` of the custom message a ``system`` / ``developer`` item becomes."""
    return f"openai-agents.{role}"


INSTRUCTION_TYPES = {instruction_custom_type(role): role for role in INSTRUCTION_ROLES}
"""The role each instruction custom type stands for."""


def compact_json(value: Any) -> str | None:
    """Compact JSON text (orjson: fast; None for what it cannot encode). Arguments are only left to it when
    it and the JavaScript encoder agree, so the text comes back whatever the store did to the numbers."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None


def arguments_text(arguments: Any) -> str:
    """The arguments string of a function call whose stored arguments were not kept verbatim."""
    value = arguments if arguments is not None else {}
    text = compact_json(value)
    return text if text is not None else dumps(value)
