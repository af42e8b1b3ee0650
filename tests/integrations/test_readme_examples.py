"""The README's adapter examples run as written (offline: the Agents SDK example's model line is replaced
by a ScriptedModel) and do what their comments say."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message

from sessiontree import SessionManager

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
MODEL_LINE = 'model = "gpt-4.1"                                      # any Agents SDK model\n'


def block_with(name: str) -> str:
    found = [b for b in BLOCKS if name in b]
    assert len(found) == 1, f"one README example uses {name}"
    assert len(found[0].strip().splitlines()) <= 13
    return found[0]


def test_agents_sdk_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
