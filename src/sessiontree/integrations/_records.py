"""The two shapes the adapters trade with the tree: what to append (``Record``) and what a branch holds
(``Source``), and the copy that keeps callers' data apart from stored entries. No session access here.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import orjson

from sessiontree.format.pi_json import dumps

__all__ = ["Record", "Source", "check_storable", "copy_json"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Record:
    """One entry to append: a pi ``message`` (``message``), or a ``custom`` entry (``custom_type`` and
    ``data``) for what has no pi message, which pi keeps but never sends to a model."""

    message: dict[str, Any] | None = None
    custom_type: str | None = None
    data: Any = None


@dataclass(frozen=True, slots=True)
class Source:
    """One thing on a branch that gives framework items: a runtime message (``message``, from a message,
    custom message or branch-summary entry, or from a compaction's ``retainedTail``), a compaction summary
    (``summary``) or a custom entry holding a verbatim item (``custom``).

    ``entry_id`` is the entry it comes from (``None`` for a ``retainedTail`` message); ``kept`` says it lies
    in the kept part of the latest compaction rather than after it.
    """

    kind: Literal["message", "summary", "custom"]
    payload: dict[str, Any]
    entry_id: str | None
    kept: bool = False


def copy_json(value: T) -> T:
    """A deep copy of JSON data (orjson round trip; ``copy.deepcopy`` for what orjson rejects)."""
    try:
        return orjson.loads(orjson.dumps(value))  # type: ignore[no-any-return]
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)


_STRICT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def check_storable(records: Sequence[Record]) -> None:
    """Raise ``TypeError`` unless every record can be written as JSON, before any is: a batch is stored
    whole or not at all on every back end (a file has no rollback). orjson first; pi's encoder for what it
    leaves to it."""
    for number, record in enumerate(records, 1):
        value = record.message if record.message is not None else record.data
        try:
            orjson.dumps(value, option=_STRICT)
        except (TypeError, orjson.JSONEncodeError):
            try:
                dumps(value)
            except (TypeError, ValueError, RecursionError) as error:
                raise TypeError(
                    f"entry {number} of {len(records)} cannot be stored as JSON: {error}"
                ) from None
