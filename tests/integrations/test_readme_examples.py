"""The README's adapter examples run as written and do what their comments say: the Agents SDK example
against a loopback HTTP server speaking the OpenAI Responses API with persistent connections, as a real
one does (and, offline, with its model line replaced by a ScriptedModel); the LangChain ones as they are.
The README's list of upstream tests left out is the one the upstream runner leaves out."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, set_default_openai_client
from agents.models import _openai_shared
from agents.testing import ScriptedModel, assistant_message
from openai import AsyncOpenAI

from sessiontree import SessionManager
from tests.integrations.test_upstream_suites import SUITES
from tests.llm.fake_servers import FakeServer, JsonReply, fake_server, responses_sse

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
MODEL_LINE = 'model = "gpt-4.1"                                      # any Agents SDK model\n'


def block_with(name: str) -> str:
    found = [b for b in BLOCKS if name in b]
    assert len(found) == 1, f"one README example uses {name}"
    assert len(found[0].strip().splitlines()) <= 16
    return found[0]


def responses_reply(text: str) -> JsonReply:
    """A Responses API reply (not streamed), as the OpenAI server sends it."""
    usage = {
        "input_tokens": 20,
        "output_tokens": 5,
        "total_tokens": 25,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    final = responses_sse(text=[text], usage=usage, model="gpt-4.1").events[-1][1]["response"]
    return JsonReply(200, final)


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A keep-alive loopback server that the SDK's default client talks to (restored afterwards)."""
    with fake_server(keep_alive=True) as server:
        monkeypatch.setattr(_openai_shared, "_default_openai_client", None)
        set_default_openai_client(AsyncOpenAI(base_url=f"{server.url}/v1", api_key="sk-test"), False)
        yield server


def input_texts(body: Any) -> list[str]:
    out: list[str] = []
    for item in body["input"]:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(part["text"] for part in content if "text" in part)
    return out


def test_agents_sdk_example_against_an_http_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server: FakeServer
) -> None:
    monkeypatch.chdir(tmp_path)
    source = block_with("TreeSession")
    openai_server.replies += [responses_reply(t) for t in ("Day 1: Louvre", "Day 1: parks", "Day 1 to 5")]
    namespace: dict[str, Any] = {}
    exec(compile(source, "README.md", "exec"), namespace)  # as written, model line included
    assert [r.path for r in openai_server.requests] == ["/v1/responses"] * 3
    last = openai_server.requests[-1].body
    assert last["model"] == "gpt-4.1" and last["instructions"] == "Be brief."
    assert input_texts(last) == ["Plan a trip to Paris", "Day 1: Louvre", "Make it longer"]
    namespace["session"].close()
    manager = SessionManager.open(tmp_path / "trip.jsonl", read_only=True)
    assert len(manager.get_entries()) >= 6  # both branches are in the file
    manager.close()


def test_the_server_keeps_the_sdk_client_bound_to_its_first_loop(
    tmp_path: Path, openai_server: FakeServer
) -> None:
    """Why the example keeps its runs on one loop: run_sync after an asyncio.run fails against this server,
    as against the real one (if the SDK stops binding its client, the README's warning can go)."""
    openai_server.replies += [responses_reply("one"), responses_reply("two")]
    agent = Agent(name="planner", model="gpt-4.1")
    Runner.run_sync(agent, "first")
    asyncio.run(asyncio.sleep(0))
    with pytest.raises(RuntimeError, match="different event loop"):
        Runner.run_sync(agent, "second")


def test_agents_sdk_example_with_a_scripted_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = block_with("TreeSession")
    assert MODEL_LINE in source
    model = ScriptedModel([[assistant_message(t)] for t in ("Day 1: Louvre", "Day 1: parks", "Day 1 to 5")])
    namespace: dict[str, Any] = {"model": model}
    exec(compile(source.replace(MODEL_LINE, ""), "README.md", "exec"), namespace)
    texts = [i["content"] for i in model.calls[-1].input if isinstance(i.get("content"), str)]
    assert texts == ["Plan a trip to Paris", "Make it longer"]
    namespace["session"].close()
    manager = SessionManager.open(tmp_path / "trip.jsonl", read_only=True)
    assert len(manager.get_entries()) >= 6  # both branches are in the file
    manager.close()


def test_langchain_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(block_with("TreeChatMessageHistory"), "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.strip() == str(
        ["Plan a trip to Paris", "Day 1: the Louvre", "Make it longer", "Day 1 to day 5"]
    )
    assert namespace["history"].messages == []
    namespace["history"].close()
    manager = SessionManager.open(tmp_path / "chat.jsonl", read_only=True)
    assert sum(e["type"] == "message" for e in manager.get_entries()) == 6
    manager.close()


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_langchain_session_factory_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block_with("get_session_history("), "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "3 messages so far"
    (path,) = (tmp_path / "sessions").glob("*_alice.jsonl")
    manager = SessionManager.open(path, read_only=True)
    contents = [e["message"]["content"] for e in manager.get_entries()]
    assert [c if isinstance(c, str) else c[0]["text"] for c in contents] == [
        "Plan a trip to Paris",
        "1 messages so far",
        "Make it cheaper",
        "3 messages so far",
    ]
    manager.close()


def test_the_readme_lists_every_upstream_test_left_out() -> None:
    excluded = SUITES["openai-agents"].excluded
    assert f"Left out are the {len(excluded)} SDK tests" in README
    for name in excluded:
        assert f"`…{name.removeprefix('test_sqlite_session')}`" in README, name
