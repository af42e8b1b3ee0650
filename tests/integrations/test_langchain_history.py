"""TreeChatMessageHistory under LangChain's RunnableWithMessageHistory (a fake chat model that calls a tool),
read back from the file, branched and cleared; and random messages of every mapped class round-trip."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool

from sessiontree import SessionManager
from sessiontree.compaction import CompactionSettings
from sessiontree.format.pi_json import dumps_bytes, loads
from sessiontree.integrations.langchain import TreeChatMessageHistory
from sessiontree.llm import Context, StreamOptions, convert_to_llm
from sessiontree.llm.providers import anthropic, openai_completions, openai_responses
from sessiontree.llm.types import Model
from tests.integrations.conftest import Backend
from tests.integrations.item_strategies import json_values, text


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def chain(history: TreeChatMessageHistory, replies: list[BaseMessage], seen: list[list[BaseMessage]]) -> Any:
    """A tool-calling loop as a runnable: the model's calls are run and answered until it replies in text."""
    model = FakeMessagesListChatModel(responses=replies)

    def agent(messages: list[BaseMessage]) -> list[BaseMessage]:
        new: list[BaseMessage] = []
        while True:
            seen.append([*messages, *new])
            reply = model.invoke([*messages, *new])
            new.append(reply)
            if not reply.tool_calls:
                return new
            for call in reply.tool_calls:
                new.append(
                    ToolMessage(str(add.invoke(call["args"])), tool_call_id=call["id"], name=call["name"])
                )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return RunnableWithMessageHistory(RunnableLambda(agent), lambda _session_id: history)


def replies() -> list[BaseMessage]:
    return [
        AIMessage("", id="ai-1", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1"}]),
        AIMessage("2 + 3 = 5.", id="ai-2", response_metadata={"model_name": "fake"}),
        AIMessage("You're welcome.", id="ai-3"),
        AIMessage("Hello again.", id="ai-4"),
    ]


def test_a_conversation_with_a_tool_call_reopens_with_the_same_messages(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    history = TreeChatMessageHistory.open(path)
    seen: list[list[BaseMessage]] = []
    runnable = chain(history, replies(), seen)
    config = {"configurable": {"session_id": "s"}}
    runnable.invoke([HumanMessage("What is 2 + 3?")], config=config)
    runnable.invoke([HumanMessage("Thanks!")], config=config)
    messages = history.messages
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "HumanMessage", "AIMessage",
    ]  # fmt: skip
    assert seen[-1] == messages[:-1]  # the second turn's model input is the stored history
    assert messages[1].tool_calls[0]["args"] == {"a": 2, "b": 3} and messages[2].content == "5"
    history.close()

    reopened = TreeChatMessageHistory.open(path)
    assert reopened.messages == messages
    assert anyio.run(reopened.aget_messages) == messages
    entries = reopened.manager.get_entries()
    assert [e["message"]["role"] for e in entries] == [
        "user", "assistant", "toolResult", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert entries[2]["message"]["toolName"] == "add"
    lines = [line for line in path.read_bytes().split(b"\n") if line]
    assert all(dumps_bytes(loads(line)) == line for line in lines)

    turns = reopened.list_turns()
    assert [t for _, t in turns] == ["What is 2 + 3?", "Thanks!"]
    assert reopened.branch_to_turn(turns[1][0]) == "Thanks!"
    assert reopened.messages == messages[:4]
    reopened.add_messages([HumanMessage("Hi"), AIMessage("Hello again.")])
    assert [m.content for m in reopened.messages][-2:] == ["Hi", "Hello again."]
    before = {e["id"] for e in entries}
    reopened.clear()
    assert reopened.messages == []
    assert before <= {e["id"] for e in reopened.manager.get_entries()}  # branching and clearing keep it all
    reopened.close()
    assert TreeChatMessageHistory.open(path).messages == []


def test_async_twins_and_a_summarized_branch(tmp_path: Path) -> None:
    async def scenario() -> None:
        history = TreeChatMessageHistory.open(tmp_path / "chat.jsonl")
        await history.aadd_messages(
            [HumanMessage("one"), AIMessage("1"), HumanMessage("two"), AIMessage("2")]
        )
        turns = history.list_turns()
        with pytest.raises(RuntimeError, match="abranch_to_turn"):
            history.branch_to_turn(turns[1][0])
        await history.abranch_to_turn(turns[1][0], summarize=True)
        kinds = [e["type"] for e in history.manager.get_entries()]
        assert kinds[-1] == "branch_summary"
        messages = await history.aget_messages()
        assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "HumanMessage"]
        assert "<branch_exploration_summary>" in str(messages[-1].content)
        await history.aclear()
        assert await history.aget_messages() == []
        history.close()

    anyio.run(scenario)


def test_compaction_keeps_the_recent_messages(tmp_path: Path) -> None:
    history = TreeChatMessageHistory.open(
        tmp_path / "chat.jsonl", compaction_settings=CompactionSettings(keep_recent_tokens=300)
    )
    messages: list[BaseMessage] = []
    for n in range(6):
        messages += [
            HumanMessage(f"question {n} " + "word " * 200),
            AIMessage(f"answer {n} " + "word " * 200),
        ]
    history.add_messages(messages)
    history.compact()
    after = history.messages
    assert str(after[0].content).startswith("The conversation history before this point was compacted")
    assert after[1:] == messages[-(len(after) - 1) :] and len(after) < len(messages)
    history.close()


BUILDERS: dict[str, Any] = {
    "openai-completions": openai_completions,
    "openai-responses": openai_responses,
    "anthropic-messages": anthropic,
}


@pytest.mark.parametrize("api", sorted(BUILDERS))
def test_langchain_only_fields_never_reach_a_provider_request(api: str) -> None:
    history = TreeChatMessageHistory(SessionManager.in_memory("/proj"))
    secret = "LANGCHAIN-ONLY"
    history.add_messages([
        SystemMessage("Be exact.", id=secret),
        HumanMessage("What is 2 + 3?", additional_kwargs={"k": secret}),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2}, "id": "call_1"}], response_metadata={"x": secret}),
        ToolMessage("five", tool_call_id="call_1", artifact=secret),
        ChatMessage(role="critic", content=secret),
    ])  # fmt: skip
    model = Model(id="m", api=api, provider="p")  # type: ignore[arg-type]
    messages = convert_to_llm(history.manager.build_session_context().messages)
    body = json.dumps(
        BUILDERS[api].build_request(model, Context(messages=messages), StreamOptions(api_key="k"))
    )
    assert secret not in body
    for shown in ("Be exact.", "What is 2 + 3?", "five", "call_1"):
        assert shown in body


content = st.one_of(
    text,
    st.lists(
        st.one_of(
            text,
            st.builds(
                lambda t, x: {"type": "text", "text": t, **x}, text, st.dictionaries(st.just("id"), text)
            ),
            st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, text),
            st.builds(lambda: {"type": "text"}),  # malformed: the whole content stays in the residual
        ),
        max_size=3,
    ),
)
common = st.fixed_dictionaries(
    {},
    optional={
        "id": text,
        "name": text,
        "additional_kwargs": st.dictionaries(text, json_values, max_size=2),
        "response_metadata": st.dictionaries(text, json_values, max_size=2),
    },
)
tool_calls = st.lists(
    st.builds(
        lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"},
        text,
        st.dictionaries(text, json_values, max_size=2),
        text,
    ),
    max_size=2,
)
lc_messages = st.one_of(
    st.builds(lambda c, k: HumanMessage(content=c, **k), content, common),
    st.builds(lambda c, k: SystemMessage(content=c, **k), content, common),
    st.builds(
        lambda c, k, t, u: AIMessage(content=c, tool_calls=t, **k, **u),
        content,
        common,
        tool_calls,
        st.dictionaries(
            st.just("usage_metadata"),
            st.builds(
                lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
                st.integers(0, 99),
                st.integers(0, 99),
            ),
        ),
    ),
    st.builds(
        lambda c, k, i, s, a: ToolMessage(content=c, tool_call_id=i, status=s, artifact=a, **k),
        content,
        common,
        text,
        st.sampled_from(["success", "error"]),
        json_values,
    ),
    st.builds(lambda c, r: ChatMessage(content=c, role=r), content, text),
    st.builds(lambda c, n: FunctionMessage(content=c, name=n), content, text),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.lists(lc_messages, min_size=1, max_size=4), min_size=1, max_size=4))
def test_messages_round_trip_through_the_tree(backend: Backend, calls: list[list[BaseMessage]]) -> None:
    added = [m for call in calls for m in call]
    history = TreeChatMessageHistory(backend.new())
    for call in calls:
        history.add_messages(call)
    assert history.messages == added
    again = TreeChatMessageHistory(backend.reopen(history.manager))
    assert again.messages == added
    again.close()
