"""``get_session_history(store)`` under ``RunnableWithMessageHistory``: one pi session per session id in a
directory, a SQLite or a PostgreSQL store; the same history for the same id; kept across factories;
opened on first use without blocking the event loop; closed histories refuse further use."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from sessiontree import SessionManager
from sessiontree.errors import SessionError
from sessiontree.integrations.langchain import TreeChatMessageHistory, get_session_history

pytestmark = pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")


@pytest.fixture(params=["directory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "directory":
        return str(tmp_path / "sessions")
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/sessions.db"
    return str(request.getfixturevalue("postgres_url"))


def echo_chain(histories: Any) -> RunnableWithMessageHistory:
    def reply(messages: list[BaseMessage]) -> AIMessage:
        said = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
        return AIMessage("you said: " + ", ".join(said))

    return RunnableWithMessageHistory(RunnableLambda(reply), histories)


def config(session_id: str) -> Any:
    return {"configurable": {"session_id": session_id}}


def test_one_session_per_id_kept_in_the_store(store: str) -> None:
    with get_session_history(store) as histories:
        chain = echo_chain(histories)
        assert chain.invoke([HumanMessage("hello")], config("alice")).content == "you said: hello"
        assert chain.invoke([HumanMessage("hi")], config("bob")).content == "you said: hi"
        assert chain.invoke([HumanMessage("again")], config("alice")).content == "you said: hello, again"
        assert histories("alice") is histories("alice")
    with get_session_history(store) as later:  # a new process, the same store
        assert [m.content for m in later("alice").messages] == [
            "hello",
            "you said: hello",
            "again",
            "you said: hello, again",
        ]
        assert later("bob").session_id == "bob"
        assert later("bob").manager.get_session_id() == "bob"
        assert len(later("bob").messages) == 2


def test_the_directory_holds_a_pi_file_per_session(tmp_path: Path) -> None:
    with get_session_history(tmp_path / "sessions") as histories:
        echo_chain(histories).invoke([HumanMessage("hello")], config("alice"))
    (path,) = (tmp_path / "sessions").glob("*_alice.jsonl")
    manager = SessionManager.open(path, read_only=True)
    assert [e["message"]["role"] for e in manager.get_entries()] == ["user", "assistant"]
    manager.close()


def test_async_turns_open_and_write_without_blocking_the_loop(store: str) -> None:
    async def main() -> list[str]:
        with get_session_history(store) as histories, blockbuster_ctx(["sessiontree", "langchain_core"]):
            chain = echo_chain(histories)
            await chain.ainvoke([HumanMessage("one")], config("carol"))
            await asyncio.gather(
                chain.ainvoke([HumanMessage("two")], config("dave")),
                chain.ainvoke([HumanMessage("three")], config("erin")),
            )
            reply = await chain.ainvoke([HumanMessage("four")], config("carol"))
            return [str(reply.content), *(str(m.content) for m in await histories("carol").aget_messages())]

    assert asyncio.run(main()) == [
        "you said: one, four",
        "one",
        "you said: one",
        "four",
        "you said: one, four",
    ]


def test_a_history_is_not_opened_until_used(tmp_path: Path) -> None:
    histories = get_session_history(tmp_path / "sessions")
    histories("alice")
    assert not (tmp_path / "sessions").exists()
    histories("alice").add_messages([HumanMessage("now")])
    assert len(list((tmp_path / "sessions").glob("*_alice.jsonl"))) == 1
    histories.close()


def test_closed_histories_refuse_further_use(tmp_path: Path) -> None:
    histories = get_session_history(tmp_path / "sessions")
    used, unused = histories("alice"), histories("bob")
    used.add_messages([HumanMessage("x")])
    histories.close()
    for history in (used, unused):
        with pytest.raises(SessionError, match="the session is closed"):
            history.add_messages([HumanMessage("y")])
        with pytest.raises(SessionError, match="the session is closed"):
            asyncio.run(history.aadd_messages([]))
        with pytest.raises(SessionError, match="the session is closed"):
            _ = history.messages


@pytest.mark.parametrize("target", ["one.jsonl", "sqlite:///x.db#abc"])
def test_a_store_of_one_session_is_refused(tmp_path: Path, target: str) -> None:
    with pytest.raises(SessionError, match="holds many sessions") as refused:
        get_session_history(target)
    assert refused.value.kind == "invalid_argument"


def test_a_history_built_on_an_opener_opens_it_once(tmp_path: Path) -> None:
    opened: list[SessionManager] = []

    def opener() -> SessionManager:
        opened.append(SessionManager.create(str(tmp_path), tmp_path))
        return opened[-1]

    history = TreeChatMessageHistory(opener)
    assert opened == []

    async def use() -> None:
        await asyncio.gather(*(history.aadd_messages([HumanMessage(str(n))]) for n in range(5)))

    asyncio.run(use())
    assert len(opened) == 1
    assert len(history.messages) == 5
    history.close()


def test_a_batch_that_cannot_be_stored_writes_nothing(tmp_path: Path) -> None:
    history = TreeChatMessageHistory.open(tmp_path / "chat.jsonl")
    history.add_messages([HumanMessage("kept")])
    bad = AIMessage("reply", additional_kwargs={"handle": object()})
    with pytest.raises(TypeError, match="cannot be stored as JSON"):
        history.add_messages([HumanMessage("question"), bad])
    assert [m.content for m in history.messages] == ["kept"]
    history.close()
    reopened = SessionManager.open(tmp_path / "chat.jsonl", read_only=True)
    assert len(reopened.get_entries()) == 1
    reopened.close()
