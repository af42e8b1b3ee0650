"""The agent session layer's rules, one by one: pi's thinking levels and clamping, the model choice with
``--provider`` and ``P/ID:LEVEL``, which session a reference names, which tools are active, and pi's wire
form of the harness's events."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree.agent.host import (
    SessionSpec,
    choose_model,
    choose_tools,
    clamp_thinking_level,
    load_settings,
    looks_like_path,
    open_session,
    supported_thinking_levels,
    wire_event,
)
from sessiontree.errors import SessionError
from sessiontree.format.pi_json import dumps
from sessiontree.llm.models import ModelRegistry, openai_compatible_model
from sessiontree.llm.types import Model


def model(reasoning: bool, compat: dict[str, object] | None = None) -> Model:
    return openai_compatible_model("m", "http://127.0.0.1:1/v1", reasoning=reasoning, compat=compat)


def test_thinking_levels_and_pi_s_clamping() -> None:
    assert supported_thinking_levels(model(False)) == ["off"]
    assert supported_thinking_levels(model(True)) == ["off", "minimal", "low", "medium", "high"]
    mapped = model(True, {"thinkingLevelMap": {"xhigh": "max", "minimal": None}})
    assert supported_thinking_levels(mapped) == ["off", "low", "medium", "high", "xhigh"]
    assert clamp_thinking_level(model(False), "high") == "off"
    assert clamp_thinking_level(model(True), "xhigh") == "high"  # nothing above: the next one down
    assert clamp_thinking_level(mapped, "minimal") == "low"  # the next one up first


def test_provider_and_level_suffix(tmp_path: Path) -> None:
    registry = ModelRegistry(api_keys={"anthropic": "sk-a", "openai": "sk-o"}, environ={})
    settings = load_settings(tmp_path / "none.json", environ={"PI_CODING_AGENT_DIR": str(tmp_path)})
    chosen = choose_model(
        "claude-haiku-4-5", provider="anthropic", settings=settings, registry=registry, environ={}
    )
    assert (chosen.model.provider, chosen.model.id, chosen.source) == (
        "anthropic",
        "claude-haiku-4-5",
        "--model",
    )
    chosen = choose_model(provider="openai", settings=settings, registry=registry, environ={})
    assert (chosen.model.provider, chosen.model.id) == ("openai", "gpt-5")
    chosen = choose_model("openai/gpt-5:high", settings=settings, registry=registry, environ={})
    assert (chosen.model.id, chosen.thinking_level) == ("gpt-5", "high")
    local = choose_model(
        "ollama/llama3:8b", "http://127.0.0.1:1/v1", settings=settings, registry=registry, environ={}
    )
    assert local.model.id == "llama3:8b"  # a colon that is not a level stays in the id
    with pytest.raises(SessionError, match="Unknown provider 'nowhere'"):
        choose_model(provider="nowhere", settings=settings, registry=registry, environ={})


def test_which_session_a_reference_names(tmp_path: Path) -> None:
    assert looks_like_path("a/b") and looks_like_path("x.jsonl") and not looks_like_path("01a2b3")
    created = open_session(SessionSpec(ref="new.jsonl"), tmp_path)  # pi: a missing file starts one there
    assert created.get_session_file() == str(tmp_path / "new.jsonl")
    created.append_message({"role": "user", "content": "hi", "timestamp": 1})
    session_id = created.get_session_id()
    created.close()
    moved = tmp_path / "dir"
    again = open_session(SessionSpec(ref=str(tmp_path / "new.jsonl"), session_dir=str(moved)), tmp_path)
    assert again.get_session_id() == session_id
    again.close()
    memory = open_session(SessionSpec(in_memory=True), tmp_path)
    assert memory.get_session_file() is None
    with pytest.raises(SessionError, match="--session and --continue"):
        open_session(SessionSpec(ref="x", continue_recent=True), tmp_path)
    with pytest.raises(SessionError, match="is a directory"):
        open_session(SessionSpec(ref=str(moved.parent)), tmp_path)


def test_active_tools(tmp_path: Path) -> None:
    assert choose_tools(tmp_path)[1] == ["read", "bash", "edit", "write"]
    assert choose_tools(tmp_path, ["ls", "read"])[1] == ["read", "ls"]  # in the tools' order
    assert choose_tools(tmp_path, ["*"])[1] == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert choose_tools(tmp_path, no_tools=True)[1] == []
    with pytest.raises(SessionError, match="Unknown tool"):
        choose_tools(tmp_path, ["rm"])


def test_wire_form_of_harness_events() -> None:
    steer = {"role": "user", "content": [{"type": "text", "text": "S"}], "timestamp": 1}
    queued = wire_event({"type": "queue_update", "steer": [steer], "followUp": [], "nextTurn": []})
    assert queued == {"type": "queue_update", "steering": ["S"], "followUp": []}
    assert wire_event({"type": "thinking_level_update", "level": "low", "previousLevel": "low"}) is None
    changed = wire_event({"type": "thinking_level_update", "level": "high", "previousLevel": "low"})
    assert changed == {"type": "thinking_level_changed", "level": "high"}
    entry = {"type": "compaction", "id": "c1", "parentId": "p", "timestamp": "t", "summary": "S",
             "firstKeptEntryId": "k", "tokensBefore": 10, "details": {"readFiles": []}}  # fmt: skip
    ended = wire_event({"type": "compaction_end", "reason": "manual", "result": entry, "aborted": False,
                        "willRetry": False})  # fmt: skip
    assert ended is not None and ended["result"] == {"summary": "S", "firstKeptEntryId": "k", "tokensBefore": 10,
                                                     "details": {"readFiles": []}}  # fmt: skip
    failed = wire_event({"type": "compaction_end", "reason": "threshold", "result": None, "aborted": True,
                         "willRetry": False})  # fmt: skip
    assert dumps(failed) == '{"type":"compaction_end","reason":"threshold","aborted":true,"willRetry":false}'
    partial = {"content": [{"type": "text", "text": "a"}, {"type": "toolCall", "id": "c9", "name": "ls"}]}
    update = wire_event({"type": "message_update", "message": {"usage": {"input": 1}},
                         "assistantMessageEvent": {"type": "toolcall_start", "contentIndex": 1, "partial": partial}})  # fmt: skip
    assert update == {"type": "message_update", "usage": {"input": 1},
                      "assistantMessageEvent": {"type": "toolcall_start", "contentIndex": 1, "id": "c9",
                                                "toolName": "ls"}}  # fmt: skip
    for private in ("save_point", "tools_update", "model_update", "session_tree", "abort", "resume"):
        assert wire_event({"type": private}) is None
