"""TreeSession under the Agents SDK's own Runner, with its offline ScriptedModel and a function tool.

The model input the Runner builds from a TreeSession is compared with the input it builds from the SDK's
own SQLiteSession for the same script; the session file is then read by the CLI and byte-checked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app
from sessiontree.compaction import CompactionSettings
from sessiontree.format.pi_json import dumps_bytes, loads
from sessiontree.integrations.openai_agents import TreeSession
from sessiontree.llm import estimate_context_tokens

pytestmark = pytest.mark.anyio


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_script() -> list[Any]:
    """Run 1: a tool call, its answer; run 2: a plain answer."""
    return [
        [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
        [assistant_message("It is sunny in Paris.", item_id="msg_1")],
        [assistant_message("You're welcome!", item_id="msg_2")],
    ]


async def run_turns(session: Any, prompts: Sequence[str], steps: list[Any]) -> ScriptedModel:
    model = ScriptedModel(steps)
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    for prompt in prompts:
        await Runner.run(agent, prompt, session=session)
    model.assert_complete()
    return model


def texts(model_input: Any) -> list[str]:
    """Every text in a model input, in order (user strings and output_text parts)."""
    out: list[str] = []
    for item in model_input:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return out


def entry_ids(path: Path) -> list[str]:
    return [loads(line)["id"] for line in path.read_bytes().split(b"\n")[1:] if line]


async def test_two_runs_give_the_model_what_sqlite_session_gives_it(tmp_path: Path) -> None:
    path = tmp_path / "agents.jsonl"
    tree = TreeSession.open(path)
    sqlite = SQLiteSession("side-by-side")
    prompts = ["What's the weather in Paris?", "Thanks!"]
    tree_model = await run_turns(tree, prompts, weather_script())
    sqlite_model = await run_turns(sqlite, prompts, weather_script())

    assert len(tree_model.calls) == 3
    assert tree_model.calls[-1].input == sqlite_model.calls[-1].input  # the second run's input
    assert [c.input for c in tree_model.calls] == [c.input for c in sqlite_model.calls]
    assert await tree.get_items() == await sqlite.get_items()
    tree.close()

    cli = CliRunner()
    shown = cli.invoke(app, ["tree", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "What's the weather in Paris?" in shown.output
    context = cli.invoke(app, ["context", str(path), "--json"])
    assert context.exit_code == 0, context.output
    roles = [m["role"] for m in json.loads(context.output)["messages"]]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]

    lines = [line for line in path.read_bytes().split(b"\n") if line]
    assert all(dumps_bytes(loads(line)) == line for line in lines)  # pi's bytes, line for line
    reopened = TreeSession.open(path)
    assert await reopened.get_items() == await sqlite.get_items()
    reopened.close()


async def test_branch_to_the_second_turn_continues_from_the_first_run(tmp_path: Path) -> None:
    path = tmp_path / "agents.jsonl"
    session = TreeSession.open(path)
    steps = [[assistant_message(f"answer {n}", item_id=f"msg_{n}")] for n in range(1, 5)]
    model = await run_turns(session, ["first", "second", "third"], steps[:3])
    turns = await session.list_turns()
    assert [text for _, text in turns] == ["first", "second", "third"]
    before = entry_ids(path)

    assert await session.branch_to_turn(turns[1][0]) == "second"
    model.extend(steps[3:])
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    await Runner.run(agent, "fourth", session=session)
    assert texts(model.calls[-1].input) == ["first", "answer 1", "fourth"]

    ids = entry_ids(path)
    assert set(before) <= set(ids)  # both branches are in the file
    children: dict[str | None, int] = {}
    for line in path.read_bytes().split(b"\n")[1:]:
        if line:
            parent = loads(line)["parentId"]
            children[parent] = children.get(parent, 0) + 1
    fork = SessionManager.open(path, read_only=True).get_entry(turns[1][0])
    assert fork is not None and children[fork["parentId"]] == 2
    session.close()


async def test_pop_item_and_clear_session_keep_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "agents.jsonl"
    session = TreeSession.open(path)
    await run_turns(session, ["What's the weather in Paris?", "Thanks!"], weather_script())
    items = await session.get_items()
    before = entry_ids(path)

    popped = await session.pop_item()
    assert popped == items[-1]
    assert await session.get_items() == items[:-1]
    assert await session.pop_item() == items[-2]
    assert set(before) <= set(entry_ids(path))

    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    assert set(before) <= set(entry_ids(path))
    session.close()

    reopened = TreeSession.open(path)  # the moves are recorded: the session is still empty
    assert await reopened.get_items() == []
    assert len(await reopened.list_turns()) == 0
    reopened.close()


def long_script(runs: int) -> list[Any]:
    return [[assistant_message(f"Answer {n}: " + "details " * 300, item_id=f"msg_{n}")] for n in range(runs)]


async def test_run_compaction_gives_summary_and_kept_items_and_keeps_the_originals(tmp_path: Path) -> None:
    path = tmp_path / "agents.jsonl"
    settings = CompactionSettings(keep_recent_tokens=1500)
    session = TreeSession.open(path, compaction_settings=settings)
    prompts = [f"Question {n}: " + "context " * 200 for n in range(8)]
    model = await run_turns(session, prompts, long_script(8))
    full = await session.get_items()
    assert len(full) == 16

    await session.run_compaction()  # the SDK's hook, as a manual call: compact now
    model.extend(long_script(1))
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    await Runner.run(agent, "Next question", session=session)
    compacted_input = model.calls[-1].input
    first = compacted_input[0]
    assert first["role"] == "user"
    assert first["content"].startswith("The conversation history before this point was compacted")
    kept = compacted_input[1:-1]
    assert kept and kept == full[-len(kept) :]  # the kept items, verbatim
    assert len(kept) < len(full)
    assert len(json.dumps(compacted_input)) < len(json.dumps(full))

    raw = path.read_text(encoding="utf-8")
    for item in full:  # every original item is still in the file
        assert json.dumps(texts([item])[0])[1:-1][:60] in raw
    session.close()


async def test_the_runner_compacts_when_the_context_window_fills(tmp_path: Path) -> None:
    settings = CompactionSettings(reserve_tokens=1000, keep_recent_tokens=800)
    session = TreeSession.open(tmp_path / "agents.jsonl", compaction_settings=settings, context_window=4000)
    prompts = [f"Question {n}: " + "context " * 150 for n in range(6)]
    model = await run_turns(session, prompts, long_script(6))
    flat = await run_turns(SQLiteSession("uncompacted"), prompts, long_script(6))
    kinds = [e["type"] for e in session.manager.get_entries()]
    assert "compaction" in kinds  # the Runner called run_compaction after a turn and the threshold held
    last, uncompacted = model.calls[-1].input, flat.calls[-1].input
    assert last[0]["content"].startswith("The conversation history before this point was compacted")
    assert last[1:] == uncompacted[-(len(last) - 1) :]  # then the most recent items, as the SDK has them
    assert len(json.dumps(last)) < len(json.dumps(uncompacted))
    session.close()


async def test_a_measured_reply_stores_its_usage(tmp_path: Path) -> None:
    session = TreeSession.open(tmp_path / "agents.jsonl", model="gpt-test")
    usage = Usage(requests=1, input_tokens=120, output_tokens=7, total_tokens=127)
    await run_turns(session, ["hi"], [ModelStep(output=[assistant_message("hello")], usage=usage)])
    reply = session.manager.get_entries()[-1]["message"]
    assert reply["model"] == "gpt-test"
    assert (
        reply["usage"]["input"] == 120
        and reply["usage"]["output"] == 7
        and reply["usage"]["totalTokens"] == 127
    )
    assert estimate_context_tokens(session.manager.build_session_context().messages).tokens == 127
    session.close()


async def test_runs_choose_their_branch_from_the_run_context(tmp_path: Path) -> None:
    def branch_for_run(wrapper: Any) -> str | None:
        return wrapper.context.get("continue_from") if isinstance(wrapper.context, dict) else None

    session = TreeSession.open(tmp_path / "agents.jsonl", branch_for_run=branch_for_run)
    await run_turns(
        session, ["first", "second"], [[assistant_message("answer 1")], [assistant_message("answer 2")]]
    )
    turns = await session.list_turns()
    fork = session.manager.get_entry(turns[1][0])
    assert fork is not None

    async def rerun(prompt: str) -> ScriptedModel:
        model = ScriptedModel([[assistant_message(f"re: {prompt}")]])
        agent = Agent(name="assistant", instructions="Be brief.", model=model)
        await Runner.run(agent, prompt, session=session, context={"continue_from": fork["parentId"]})
        return model

    left, right = await asyncio.gather(rerun("second, take two"), rerun("second, take three"))
    assert texts(left.calls[0].input) == ["first", "answer 1", "second, take two"]
    assert texts(right.calls[0].input) == ["first", "answer 1", "second, take three"]
    children = session.manager.get_children(fork["parentId"])
    assert len(children) == 3  # the original second turn and the two new branches
    assert texts(await session.get_items())[-1] in ("re: second, take two", "re: second, take three")
    session.close()
