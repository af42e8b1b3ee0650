"""pop_item across a compaction: the branch keeps its summary and loses exactly the last item, whether the
kept items come from the path or only from the compaction's retainedTail."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.compaction import CompactionSettings
from sessiontree.integrations.openai_agents import TreeSession
from tests.integrations.conftest import Backend

pytestmark = pytest.mark.anyio


def conversation(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(turns):
        items.append({"role": "user", "content": f"question {n} " + "word " * 150})
        items.append(
            {"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": "hm"}]}
        )
        items.append({"role": "assistant", "content": f"answer {n} " + "word " * 150})
    return items


async def test_pop_after_a_compaction_keeps_the_summary(backend: Backend) -> None:
    session = TreeSession(backend.new(), compaction_settings=CompactionSettings(keep_recent_tokens=400))
    for n in range(6):
        await session.add_items(conversation(6)[3 * n : 3 * n + 3])
    await session.compact()
    items = await session.get_items()
    assert 1 < len(items) < 18
    entries = len(session.manager.get_entries())
    while len(items) > 1:
        assert await session.pop_item() == items[-1]
        items = items[:-1]
        assert await session.get_items() == items
        again = TreeSession(backend.reopen(session.manager))
        assert await again.get_items() == items  # the file says the same, for pi too
        session = again
    assert items[0]["content"].startswith("The conversation history before this point was compacted")
    assert await session.pop_item() == items[0]
    assert await session.get_items() == []
    assert len(session.manager.get_entries()) > entries  # nothing was deleted
    session.close()


async def test_pop_from_a_retained_tail() -> None:
    session = TreeSession.open("memory:")
    await session.add_items(conversation(2))
    manager = session.manager
    tail = [
        e["message"] for e in manager.get_entries()[-2:]
    ]  # reasoning+answer reply, second user... last two
    manager.append_compaction("earlier work", "not-on-this-path", 10, retained_tail=tail)
    items = await session.get_items()
    assert len(items) == 1 + 1 + 2  # summary, user question 1, reasoning + answer
    assert await session.pop_item() == items[-1]
    assert await session.get_items() == items[:-1]
    assert await session.pop_item() == items[-2]
    assert await session.get_items() == items[:-2]
    assert [e["type"] for e in manager.get_entries()].count("compaction") == 3
