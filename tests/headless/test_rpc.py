"""``sessiontree rpc`` driven line by line from Python against the loopback model: bad input of every kind
gets a failed response and the process goes on; every command answers with pi's data; the event order of
a run, of a tool call and of steering plus a follow-up; EOF and SIGTERM end it with the session written."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from sessiontree.format.pi_json import loads
from tests.headless.model_rules import answer_by_rules
from tests.headless.support import RpcProcess, agent_env
from tests.llm.fake_servers import FakeServer, fake_server


def pi_setup(root: Path, server: FakeServer) -> None:
    """pi's agent dir with two models on the loopback server and compaction keeping almost nothing."""
    pi = root / "pi"
    pi.mkdir(exist_ok=True)
    provider = {
        "baseUrl": f"{server.url}/v1",
        "api": "openai-completions",
        "apiKey": "loop-key",
        "models": [{"id": "m1", "contextWindow": 64000}, {"id": "m2", "reasoning": True}],
    }
    (pi / "models.json").write_text(json.dumps({"providers": {"loop": provider}}))
    (pi / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))


@pytest.fixture
def rpc(tmp_path: Path) -> Any:
    work = tmp_path / "project"
    work.mkdir()
    with fake_server() as raw:
        server = answer_by_rules(raw)
        pi_setup(tmp_path, server)
        process = RpcProcess(
            ["--mode", "rpc", "--provider", "loop", "--model", "m1"], agent_env(tmp_path), work
        )
        process.server = server  # type: ignore[attr-defined]
        process.work = work  # type: ignore[attr-defined]
        try:
            yield process
        finally:
            process.kill()


def kinds(lines: list[dict[str, Any]]) -> list[str]:
    return [line["type"] for line in lines if line["type"] != "response"]


def seen(rpc: RpcProcess, kind: str) -> list[dict[str, Any]]:
    """The events of ``kind`` so far (an event a command causes comes before its response)."""
    return [line for line in rpc.seen if line["type"] == kind]


def file_entries(path: str) -> list[dict[str, Any]]:
    return [loads(line) for line in Path(path).read_bytes().split(b"\n") if line]


def test_bad_input_gets_failed_responses_and_the_process_goes_on(rpc: RpcProcess) -> None:
    rpc.send_raw(b"this is not json\n")
    parse = rpc.next_line()
    assert parse["command"] == "parse" and not parse["success"] and "id" not in parse
    assert parse["error"].startswith("Failed to parse command: ")
    rpc.send_raw(b"\n[1, 2]\n")
    assert [rpc.next_line()["command"], rpc.next_line()["command"]] == ["parse", "parse"]
    unknown = rpc.request({"type": "make_coffee"})
    assert unknown == {"id": unknown["id"], "type": "response", "command": "make_coffee", "success": False,
                       "error": "Unknown command: make_coffee"}  # fmt: skip
    missing = rpc.request({"type": "set_model", "provider": "loop"})
    assert (missing["command"], missing["success"]) == ("set_model", False) and "modelId" in missing["error"]
    wrong = rpc.request({"type": "set_auto_compaction", "enabled": "yes"})
    assert not wrong["success"] and "enabled" in wrong["error"]
    no_model = rpc.request({"type": "set_model", "provider": "loop", "modelId": "m9"})
    assert no_model["error"] == "Model not found: loop/m9"
    empty_name = rpc.request({"type": "set_session_name", "name": "   "})
    assert empty_name["error"] == "Session name cannot be empty"
    nowhere = rpc.request({"type": "get_entries", "since": "nope"})
    assert nowhere["error"] == "Entry not found: nope"
    no_id = {"type": "get_state"}
    rpc.send(no_id)
    state = rpc.wait_for(lambda line: line.get("command") == "get_state")
    assert state["success"] and "id" not in state
    # CRLF ends a line too; U+2028 inside a string does not
    rpc.send_raw(b'{"type":"set_session_name","name":"a\xe2\x80\xa8b","id":"crlf"}\r\n')
    named = rpc.wait_for(lambda line: line.get("id") == "crlf")
    assert named["success"]
    assert rpc.ok({"type": "get_state"})["sessionName"] == "a\u2028b"
    # a command not allowed now: fork and an unqueued prompt while the agent works
    assert rpc.ok({"type": "prompt", "message": "slow"}) == {"disposition": "started"}
    rpc.wait_for(lambda line: line.get("type") == "tool_execution_start")
    busy = rpc.request({"type": "prompt", "message": "again"})
    assert busy["error"].startswith("Agent is already processing. Specify streamingBehavior")
    fork = rpc.request({"type": "fork", "entryId": "whatever"})
    assert (fork["command"], fork["success"]) == ("fork", False) and "abort it first" in fork["error"]
    rpc.events_until("agent_settled")
    assert rpc.ok({"type": "get_state"})["isStreaming"] is False
    # every line on stdout was a protocol line: one JSON object, LF-terminated, no CR
    assert all(raw.endswith(b"\n") and not raw.endswith(b"\r\n") for raw in rpc.raw)
    assert all(isinstance(line, dict) and "type" in line for line in rpc.seen)
    assert rpc.close() == 0


def test_a_first_prompt_and_a_tool_call_in_pi_s_event_order(rpc: RpcProcess) -> None:
    assert rpc.ok({"type": "prompt", "message": "hello"}) == {"disposition": "started"}
    first = kinds(rpc.events_until("agent_settled"))
    updates = ["message_update"] * 4  # text_start, two deltas, text_end
    assert first == ["agent_start", "turn_start", "message_start", "message_end", "message_start", *updates,
                     "message_end", "turn_end", "agent_end", "agent_settled"]  # fmt: skip
    rpc.ok({"type": "prompt", "message": "tool"})
    lines = rpc.events_until("agent_settled")
    events = [line for line in lines if line["type"] != "response"]
    order = [
        e["type"] if e["type"] != "message_update" else e["assistantMessageEvent"]["type"] for e in events
    ]
    start = order.index("toolcall_start")
    assert order[start - 2 : start] == ["text_start", "text_delta"] or "text_delta" in order[:start]
    tail = order[order.index("toolcall_end") :]
    assert tail[:5] == ["toolcall_end", "message_end", "tool_execution_start", "tool_execution_end",
                        "message_start"]  # fmt: skip
    assert order[-4:] == ["message_end", "turn_end", "agent_end", "agent_settled"]
    assert order.count("turn_start") == 2 and order.count("agent_settled") == 1
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["toolName"] == "bash" and not end["isError"] and "from-tool" in json.dumps(end["result"])
    assert rpc.ok({"type": "get_last_assistant_text"}) == {"text": "Tool said: from-tool"}


def test_steer_and_follow_up_during_a_reply(rpc: RpcProcess) -> None:
    start = len(rpc.seen)
    rpc.ok({"type": "prompt", "message": "slow"})
    rpc.wait_for(lambda line: line.get("type") == "tool_execution_start")
    assert rpc.ok({"type": "steer", "message": "S"}) == {"disposition": "queued"}
    assert rpc.ok({"type": "prompt", "message": "F", "streamingBehavior": "followUp"}) == {
        "disposition": "queued"
    }
    state = rpc.ok({"type": "get_state"})
    assert (state["isStreaming"], state["pendingMessageCount"]) == (True, 2)
    rpc.events_until("agent_settled")
    lines = rpc.seen[start:]
    queues = [(e["steering"], e["followUp"]) for e in lines if e["type"] == "queue_update"]
    assert queues[:2] == [(["S"], []), (["S"], ["F"])] and queues[-1] == ([], [])
    users = [e["message"]["content"][0]["text"] for e in lines
             if e["type"] == "message_end" and e["message"]["role"] == "user"]  # fmt: skip
    assert users == ["slow", "S", "F"]
    assert kinds(lines).count("agent_settled") == 1 and kinds(lines).count("agent_end") == 1
    assert rpc.ok({"type": "get_last_assistant_text"}) == {"text": "Echo: F"}


def test_every_command_answers_with_pi_s_data(rpc: RpcProcess, tmp_path: Path) -> None:
    state = rpc.ok({"type": "get_state"})
    assert state["model"]["provider"] == "loop" and state["model"]["id"] == "m1"
    assert (state["thinkingLevel"], state["isStreaming"], state["messageCount"]) == ("off", False, 0)
    assert (
        state["sessionFile"].endswith(f"_{state['sessionId']}.jsonl")
        and not Path(state["sessionFile"]).exists()
    )
    models = rpc.ok({"type": "get_available_models"})["models"]
    assert [(m["provider"], m["id"], m["reasoning"], m["contextWindow"]) for m in models] == [
        ("loop", "m1", False, 64000),
        ("loop", "m2", True, 128000),
    ]
    assert rpc.ok({"type": "get_available_thinking_levels"}) == {"levels": ["off"]}
    assert rpc.ok({"type": "cycle_thinking_level"}) is None
    rpc.ok({"type": "prompt", "message": "one"})
    rpc.events_until("agent_settled")
    rpc.ok({"type": "prompt", "message": "two"})
    rpc.events_until("agent_settled")
    assert rpc.ok({"type": "set_model", "provider": "loop", "modelId": "m2"})["id"] == "m2"
    assert rpc.ok({"type": "get_available_thinking_levels"}) == {
        "levels": ["off", "minimal", "low", "medium", "high"]
    }
    assert rpc.ok({"type": "set_thinking_level", "level": "xhigh"}) is None  # clamped to high
    assert seen(rpc, "thinking_level_changed")[-1] == {"type": "thinking_level_changed", "level": "high"}
    assert rpc.ok({"type": "cycle_thinking_level"}) == {"level": "off"}
    cycled = rpc.ok({"type": "cycle_model"})
    assert (cycled["model"]["id"], cycled["thinkingLevel"], cycled["isScoped"]) == ("m1", "off", False)
    for command in ({"type": "set_steering_mode", "mode": "all"}, {"type": "set_follow_up_mode", "mode": "all"},
                    {"type": "set_auto_retry", "enabled": False}, {"type": "abort_retry"}, {"type": "abort_bash"},
                    {"type": "set_auto_compaction", "enabled": False}, {"type": "abort"}):  # fmt: skip
        response = rpc.request(command)
        assert response["success"] and "data" not in response, response
    state = rpc.ok({"type": "get_state"})
    assert (state["steeringMode"], state["followUpMode"], state["autoCompactionEnabled"]) == (
        "all",
        "all",
        False,
    )
    assert rpc.ok({"type": "clear_queue"}) == {"steering": [], "followUp": []}
    bash = rpc.ok({"type": "bash", "command": "echo out; echo err >&2; exit 3"})
    assert bash == {"output": "out\nerr", "exitCode": 3, "cancelled": False, "truncated": False}
    assert any(line.get("type") == "bash_execution_update" for line in rpc.seen)
    rpc.ok({"type": "set_session_name", "name": "  my session  "})
    assert seen(rpc, "session_info_changed")[-1]["name"] == "my session"
    stats = rpc.ok({"type": "get_session_stats"})
    assert (stats["userMessages"], stats["assistantMessages"], stats["totalMessages"]) == (2, 2, 5)
    assert stats["tokens"]["input"] == 240 and stats["contextUsage"]["contextWindow"] == 64000
    compacted = rpc.ok({"type": "compact", "customInstructions": "stress the echoes"})
    assert compacted["summary"].startswith("## Goal") and compacted["tokensBefore"] > 0
    messages = rpc.ok({"type": "get_messages"})["messages"]
    assert messages[0]["role"] == "compactionSummary"
    forks = rpc.ok({"type": "get_fork_messages"})["messages"]
    assert [m["text"] for m in forks] == ["one", "two"]
    entries = rpc.ok({"type": "get_entries"})
    assert entries["leafId"] == entries["entries"][-1]["id"]
    later = rpc.ok({"type": "get_entries", "since": forks[1]["entryId"]})["entries"]
    assert later == entries["entries"][[e["id"] for e in entries["entries"]].index(forks[1]["entryId"]) + 1 :]
    tree = rpc.ok({"type": "get_tree"})
    assert (
        tree["tree"][0]["entry"]["id"] == entries["entries"][0]["id"] and tree["leafId"] == entries["leafId"]
    )
    exported = rpc.ok({"type": "export_html"})
    first_file = rpc.ok({"type": "get_state"})["sessionFile"]
    assert exported == {"path": f"pi-session-{Path(first_file).stem}.html"}
    assert (rpc.work / exported["path"]).read_text().startswith("<!DOCTYPE html>")  # type: ignore[attr-defined]
    assert rpc.ok({"type": "get_commands"}) == {"commands": []}
    forked = rpc.ok({"type": "fork", "entryId": forks[1]["entryId"]})
    assert forked == {"text": "two", "cancelled": False}
    fork_file = rpc.ok({"type": "get_state"})["sessionFile"]
    fork_entries = file_entries(fork_file)
    assert fork_entries[0]["parentSession"] == first_file
    assert [e["message"]["content"][0]["text"] for e in fork_entries if e.get("type") == "message"][:1] == [
        "one"
    ]
    assert rpc.ok({"type": "clone"}) == {"cancelled": False}
    assert rpc.ok({"type": "get_state"})["sessionFile"] != fork_file
    assert rpc.ok({"type": "new_session", "parentSession": first_file}) == {"cancelled": False}
    fresh = rpc.ok({"type": "get_state"})
    assert fresh["messageCount"] == 0
    assert not Path(fresh["sessionFile"]).exists()  # written with its first entry, as pi does
    rpc.ok({"type": "set_model", "provider": "loop", "modelId": "m2"})
    assert file_entries(fresh["sessionFile"])[0]["parentSession"] == first_file
    rpc.ok({"type": "set_thinking_level", "level": "low"})
    assert rpc.ok({"type": "switch_session", "sessionPath": first_file}) == {"cancelled": False}
    back = rpc.ok({"type": "get_state"})
    assert (back["sessionFile"], back["sessionName"]) == (first_file, "my session")
    assert (back["model"]["id"], back["thinkingLevel"]) == ("m1", "off")  # the file's, not the last ones
    assert rpc.ok({"type": "switch_session", "sessionPath": first_file}) == {"cancelled": False}  # itself
    assert rpc.close() == 0


def test_eof_aborts_the_run_and_writes_the_session(rpc: RpcProcess) -> None:
    file = rpc.ok({"type": "get_state"})["sessionFile"]
    rpc.ok({"type": "prompt", "message": "long"})
    rpc.wait_for(lambda line: line.get("type") == "tool_execution_start")
    assert rpc.close(timeout=20) == 0
    messages = [e["message"] for e in file_entries(file) if e["type"] == "message"]
    assert [m["role"] for m in messages[:3]] == ["user", "assistant", "toolResult"]
    assert messages[2]["isError"] and messages[-1]["stopReason"] == "aborted"


def test_sigterm_ends_with_143(rpc: RpcProcess) -> None:
    assert rpc.ok({"type": "get_state"})["isStreaming"] is False
    rpc.proc.send_signal(signal.SIGTERM)
    assert rpc.proc.wait(20) == 143
