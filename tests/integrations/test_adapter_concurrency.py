"""Both adapters under concurrent writers: several threads, each with its own event loop (the Agents SDK's
own ``test_sqlite_session_concurrent_access``), and tasks of one loop, on every back end. Every write lands
on the branch at the leaf: nothing ends on a side branch, nothing is taken back twice, and a compaction whose
summary is being written does not lose what is added meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, HumanMessage

from sessiontree import SessionManager
from sessiontree.compaction import CompactionSettings, OfflineSummarizer
from sessiontree.compaction.summarizer import SummaryRequest
from sessiontree.format.messages import AssistantMessage
from sessiontree.integrations.langchain import TreeChatMessageHistory
from sessiontree.integrations.openai_agents import TreeSession
from tests.integrations.conftest import Backend

T = TypeVar("T")

WRITERS = 10


def in_own_loop(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine in a new event loop of this thread, as the SDK's test does."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(make())
    finally:
        loop.close()


def from_threads(work: Callable[[int], T], count: int = WRITERS) -> list[T]:
    with ThreadPoolExecutor(max_workers=5) as pool:
        return list(pool.map(work, range(count)))


def off_the_path(manager: SessionManager) -> list[str]:
    """Ids of message entries that are not on the path to the leaf (writes that went to a side branch)."""
    on_path = {e["id"] for e in manager.get_branch()}
    return [e["id"] for e in manager.get_entries() if e["type"] == "message" and e["id"] not in on_path]


def test_add_items_from_threads_with_their_own_loops(backend: Backend) -> None:
    session = TreeSession(backend.new())
    from_threads(lambda n: in_own_loop(lambda: session.add_items([{"role": "user", "content": f"m {n}"}])))
    contents = {item["content"] for item in asyncio.run(session.get_items())}
    assert contents == {f"m {n}" for n in range(WRITERS)}
    assert off_the_path(session.manager) == []
    reopened = TreeSession(backend.reopen(session.manager))
    assert {item["content"] for item in asyncio.run(reopened.get_items())} == contents
    reopened.close()


def test_add_items_from_tasks_of_one_loop(backend: Backend) -> None:
    session = TreeSession(backend.new())

    async def main() -> None:
        await asyncio.gather(*(session.add_items([{"role": "user", "content": f"m {n}"}]) for n in range(20)))

    asyncio.run(main())
    assert len(asyncio.run(session.get_items())) == 20
    assert off_the_path(session.manager) == []
    session.close()


def test_pop_item_from_threads_takes_back_each_item_once(backend: Backend) -> None:
    session = TreeSession(backend.new())
    asyncio.run(session.add_items([{"role": "user", "content": f"m {n}"} for n in range(WRITERS)]))
    popped = from_threads(lambda _n: in_own_loop(session.pop_item))
    assert sorted(p["content"] for p in popped) == sorted(f"m {n}" for n in range(WRITERS))
    assert asyncio.run(session.get_items()) == []
    session.close()


class SlowSummarizer(OfflineSummarizer):
    """The offline summary, after a pause in which other writers get to run."""

    def __init__(self, started: threading.Event) -> None:
        super().__init__()
        self.started = started

    async def summarize(self, request: SummaryRequest) -> AssistantMessage:
        self.started.set()
        await asyncio.sleep(0.5)
        return await super().summarize(request)


def test_items_added_while_a_compaction_summarizes_stay_on_the_branch(backend: Backend) -> None:
    started = threading.Event()
    session = TreeSession(
        backend.new(),
        summarizer=SlowSummarizer(started),
        compaction_settings=CompactionSettings(keep_recent_tokens=200),
    )
    long = "word " * 200
    asyncio.run(session.add_items([{"role": "user", "content": f"q {n} {long}"} for n in range(6)]))

    def add_later() -> None:
        assert started.wait(30)
        in_own_loop(lambda: session.add_items([{"role": "user", "content": "added meanwhile"}]))

    adder = threading.Thread(target=add_later)
    adder.start()
    asyncio.run(session.run_compaction({"force": True}))
    adder.join(30)
    items = asyncio.run(session.get_items())
    assert items[0]["content"].startswith("The conversation history before this point was compacted")
    assert items[-1]["content"] == "added meanwhile"
    assert off_the_path(session.manager) == []
    session.close()


def test_langchain_history_from_threads(backend: Backend) -> None:
    history = TreeChatMessageHistory(backend.new())

    def writer(n: int) -> None:
        turn = [HumanMessage(f"q {n}"), AIMessage(f"a {n}")]
        if n % 2:
            history.add_messages(turn)
        else:
            in_own_loop(lambda: history.aadd_messages(turn))

    from_threads(writer)
    messages = history.messages
    assert len(messages) == 2 * WRITERS
    for question, answer in zip(messages[::2], messages[1::2], strict=True):
        assert answer.content == "a " + str(question.content).removeprefix("q ")  # turns stay whole
    assert off_the_path(history.manager) == []
    history.close()
