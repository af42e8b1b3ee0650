"""Property: random item sequences of every type the SDK defines come back equal from a TreeSession, also
after the session is opened again from where it is stored, on every back end.

``SESSIONTREE_PROPERTY_EXAMPLES`` raises the number of examples (default 40 per back end).
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.integrations.openai_agents import TreeSession
from tests.integrations.conftest import Backend
from tests.integrations.item_strategies import batches


def _scribble(value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            _scribble(value[key])
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


EXAMPLES = int(os.environ.get("SESSIONTREE_PROPERTY_EXAMPLES", "40"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=batches, limit=st.integers(min_value=1, max_value=30))
def test_items_round_trip_through_the_tree(backend: Backend, calls: list[list[Any]], limit: int) -> None:
    added = [item for call in calls for item in call]

    async def scenario() -> None:
        session = TreeSession(backend.new())
        for call in calls:
            await session.add_items(call)
        got = await session.get_items()
        assert got == added
        _scribble(got)  # the caller owns what it gets: the session is unchanged
        assert await session.get_items() == added
        assert await session.get_items(limit) == added[-limit:]
        again = TreeSession(backend.reopen(session.manager))
        assert await again.get_items() == added
        popped = await again.pop_item()
        assert popped == added[-1]
        assert await again.get_items() == added[:-1]
        last = TreeSession(backend.reopen(again.manager))
        assert await last.get_items() == added[:-1]
        last.close()

    anyio.run(scenario)
