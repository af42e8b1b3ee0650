"""Stores at an older schema version, built and filled by the code of that version: the migrations up to it,
and the search-text insert schema 2 and 3 used (the text, the session id and the entry id in one row)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from sessiontree.storage.sql import repository, schema, session
from sessiontree.storage.sql.text import display

V3_INSERT_TEXT = "INSERT INTO st_entry_text (text, session_id, entry_id) VALUES (?, ?, ?)"


def _v3_params(dialect: str, session_id: str, seq: int, entry_key: str | None, text: str) -> tuple[Any, ...]:
    return (display(text), session_id, entry_key)


@contextlib.contextmanager
def schema_at(version: int) -> Iterator[None]:
    """Inside: stores are created and written as sessiontree at schema ``version`` (2 or 3) did."""
    assert version in (2, 3)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:version])
        patch.setattr(schema, "SCHEMA_VERSION", version)
        patch.setattr(repository, "SCHEMA_VERSION", version)
        patch.setattr(session, "insert_text_sql", lambda dialect: V3_INSERT_TEXT)
        patch.setattr(session, "text_params", _v3_params)
        yield
