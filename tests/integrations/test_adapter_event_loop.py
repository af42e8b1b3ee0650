"""No async method of either adapter blocks its event loop, on any back end: blockbuster (langchain-core's
own detector) raises on every blocking call made on a running loop from sessiontree's code — file reads
and writes, fsync, stat, SQLite statements, PostgreSQL's sockets. The work is done in worker threads."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message
from blockbuster import BlockingError, blockbuster_ctx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from sessiontree import SessionManager
from sessiontree.compaction import CompactionSettings
from sessiontree.format.messages import user_message
from sessiontree.integrations.langchain import TreeChatMessageHistory
from sessiontree.integrations.openai_agents import TreeSession
from tests.integrations.conftest import Backend

pytestmark = pytest.mark.anyio

LONG = "word " * 200
SETTINGS = CompactionSettings(keep_recent_tokens=200)


async def test_the_detector_sees_sessiontree_write_a_file_on_the_loop(tmp_path: Path) -> None:
    """What the adapters did before their work went to worker threads is reported."""
    manager = SessionManager.create(str(tmp_path), tmp_path)
    with blockbuster_ctx(["sessiontree"]), pytest.raises(BlockingError):
        manager.append_message(user_message("written on the loop", 0))
    manager.close()


async def test_tree_session_never_blocks_the_loop(backend: Backend) -> None:
    session = TreeSession(backend.new(), compaction_settings=SETTINGS)
    with blockbuster_ctx(["sessiontree"]):
        for n in range(4):
            await session.add_items([{"role": "user", "content": f"q {n} {LONG}"}])
            await session.add_items([{"role": "assistant", "content": f"a {n} {LONG}"}])
        assert len(await session.get_items()) == 8
        assert len(await session.get_items(limit=3)) == 3
        turns = await session.list_turns()
        await session.branch_to_turn(turns[-1][0], summarize=True)
        await session.add_items([{"role": "user", "content": "again"}])
        await session.run_compaction({"response_id": None})  # the Runner's call: not needed here
        await session.compact()
        await session.add_items([{"role": "user", "content": "more"}])
        await session.run_compaction({"force": True})
        assert (await session.pop_item())["content"] == "more"
        await session.clear_session()
        assert await session.get_items() == []
        model = ScriptedModel([[assistant_message("hi")]])
        await Runner.run(Agent(name="a", model=model), "hello", session=session)
        assert (await session.get_items())[0].get("content") == "hello"
    session.close()


def messages_runnable() -> Any:
    return RunnableLambda(lambda messages: AIMessage(f"{len(messages)} messages so far"))


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
async def test_langchain_history_never_blocks_the_loop(backend: Backend) -> None:
    history = TreeChatMessageHistory(backend.new(), compaction_settings=SETTINGS)
    with blockbuster_ctx(["sessiontree", "langchain_core"]):
        for n in range(4):
            await history.aadd_messages([HumanMessage(f"q {n} {LONG}"), AIMessage(f"a {n} {LONG}")])
        assert len(await history.aget_messages()) == 8
        turns = await history.alist_turns()
        await history.abranch_to_turn(turns[-1][0], summarize=True)
        await history.acompact()
        await history.aclear()
        assert await history.aget_messages() == []
        with_history = RunnableWithMessageHistory(messages_runnable(), lambda _session_id: history)
        config: Any = {"configurable": {"session_id": "s"}}
        for _ in range(2):
            reply = await with_history.ainvoke([HumanMessage("hello")], config)
        assert reply.content == "3 messages so far"
        stored: list[BaseMessage] = await history.aget_messages()
        assert [m.content for m in stored] == ["hello", "1 messages so far", "hello", "3 messages so far"]
    history.close()


async def test_a_cancelled_add_items_is_written_before_the_cancellation_goes_on(backend: Backend) -> None:
    """The write goes on in its worker thread; the caller's cancellation waits for its outcome."""
    session = TreeSession(backend.new())
    task = asyncio.create_task(session.add_items([{"role": "user", "content": "once"}]))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e["message"]["content"] for e in session.manager.get_branch()] == ["once"]  # already there
    assert await session.get_items() == [{"role": "user", "content": "once"}]
    session.close()
