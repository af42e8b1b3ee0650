"""``sessiontree run`` (pi's print and json modes) as a process against the loopback model server: the reply
on stdout and nothing else, tool calls, failures with exit 1, prompts from stdin and ``@file`` arguments
(text and images), several prompts in order, the json event stream a reader can rebuild the run from, and
the session options."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree.format.pi_json import loads
from tests.headless.model_rules import answer_by_rules, text_of
from tests.headless.support import agent_env, json_lines, run_cli, server_args
from tests.llm.fake_servers import FakeServer, fake_server

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@pytest.fixture
def server() -> Any:
    with fake_server() as started:
        yield answer_by_rules(started)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def run(server: FakeServer, tmp_path: Path, work: Path, *args: str, stdin: str | None = None) -> Any:
    return run_cli(["run", *server_args(server), *args], agent_env(tmp_path), work, stdin=stdin)


def session_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "pi" / "sessions").rglob("*.jsonl"))


def entries(path: Path) -> list[dict[str, Any]]:
    return [loads(line) for line in path.read_bytes().split(b"\n") if line]


def user_texts(server: FakeServer, index: int) -> list[str]:
    return [text_of(m) for m in server.requests[index].body["messages"] if m["role"] == "user"]


def test_text_mode_prints_the_reply_and_saves_the_session(
    server: FakeServer, tmp_path: Path, work: Path
) -> None:
    done = run(server, tmp_path, work, "hello there")
    assert (done.returncode, done.stdout, done.stderr) == (0, "Echo: hello there\n", "")
    [file] = session_files(tmp_path)
    roles = [e["message"]["role"] for e in entries(file) if e["type"] == "message"]
    assert roles == ["user", "assistant"]
    assert entries(file)[0]["cwd"] == str(work)


def test_prompts_go_one_after_another_and_only_the_last_reply_is_printed(
    server: FakeServer, tmp_path: Path, work: Path
) -> None:
    done = run(server, tmp_path, work, "first", "second")
    assert (done.returncode, done.stdout) == (0, "Echo: second\n")
    assert len(server.requests) == 2
    assert user_texts(server, 1) == ["first", "second"]  # the second request carries the first exchange


def test_tool_calls_run_silently_and_verbose_shows_them_on_stderr(
    server: FakeServer, tmp_path: Path, work: Path
) -> None:
    done = run(server, tmp_path, work, "tool")
    assert (done.returncode, done.stdout, done.stderr) == (0, "Tool said: from-tool\n", "")  # the last reply
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and "from-tool" in text_of(tool_message)
    loud = run(server, tmp_path, work, "--verbose", "tool")
    assert loud.returncode == 0 and loud.stdout == done.stdout
    assert '→ bash {"command":"echo from-tool"}' in loud.stderr and "← bash: from-tool" in loud.stderr


def test_a_failed_reply_goes_to_stderr_with_exit_1(server: FakeServer, tmp_path: Path, work: Path) -> None:
    done = run(server, tmp_path, work, "broken")
    assert done.returncode == 1 and done.stdout == ""
    assert "Invalid API key given" in done.stderr


def test_the_prompt_from_stdin_a_pipe_or_dash(server: FakeServer, tmp_path: Path, work: Path) -> None:
    piped = run(server, tmp_path, work, stdin="fix it\n")
    assert (piped.returncode, piped.stdout) == (0, "Echo: fix it\n")
    before = run(server, tmp_path, work, "and this", stdin="the log\n")  # pi: stdin leads the first message
    assert before.returncode == 0 and user_texts(server, 1) == ["the log\n\nand this"]
    dash = run(server, tmp_path, work, "-", "then this", stdin="  from stdin \n")  # -: stdin is that prompt
    assert (dash.returncode, dash.stdout) == (0, "Echo: then this\n")
    assert user_texts(server, 3) == ["from stdin", "then this"]
    nothing = run(server, tmp_path, work)
    assert nothing.returncode == 2 and "no prompt" in nothing.stderr


def test_at_file_attaches_text_and_images(tmp_path: Path, work: Path) -> None:
    (work / "notes.txt").write_text("\ufeffremember the milk\n")
    (work / "dot.png").write_bytes(PNG)
    (work / "empty.txt").write_text("")
    pi = tmp_path / "pi"
    pi.mkdir()
    with fake_server() as raw:
        server = answer_by_rules(raw)
        models = {"loop": {"baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "k",
                           "models": [{"id": "vision", "input": ["text", "image"]}]}}  # fmt: skip
        (pi / "models.json").write_text(json.dumps({"providers": models}))
        done = run_cli(
            ["run", "--model", "loop/vision", "@notes.txt", "@dot.png", "@empty.txt", "what is this?"],
            agent_env(tmp_path),
            work,
        )
        assert done.returncode == 0, done.stderr
        content = server.requests[0].body["messages"][-1]["content"]
    texts = [p["text"] for p in content if p["type"] == "text"]
    assert "".join(texts) == (
        f'<file name="{work / "notes.txt"}">\nremember the milk\n\n</file>\n'
        f'<file name="{work / "dot.png"}"></file>\nwhat is this?'
    )
    [image] = [p for p in content if p["type"] == "image_url"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    missing = run_cli(["run", "--model", "loop/vision", "@nowhere.txt", "hi"], agent_env(tmp_path), work)
    assert missing.returncode == 1 and f"File not found: {work / 'nowhere.txt'}" in missing.stderr


def test_json_mode_prints_the_header_then_every_event(server: FakeServer, tmp_path: Path, work: Path) -> None:
    done = run(server, tmp_path, work, "--mode", "json", "tool")
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    header, events = lines[0], lines[1:]
    [file] = session_files(tmp_path)
    assert header == entries(file)[0] and header["type"] == "session" and header["version"] == 3
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["agent_start", "turn_start"] and kinds[-2:] == ["agent_end", "agent_settled"]
    assert kinds.count("agent_settled") == 1 and events[-1] == {"type": "agent_settled", "aborted": False}
    assert {"tool_execution_start", "tool_execution_end", "turn_end"} <= set(kinds)
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all(set(e) == {"type", "usage", "assistantMessageEvent"} for e in updates)
    assert all("partial" not in e["assistantMessageEvent"] for e in updates)
    [start] = [
        e["assistantMessageEvent"] for e in updates if e["assistantMessageEvent"]["type"] == "toolcall_start"
    ]
    assert (start["id"], start["toolName"]) == ("call_1", "bash")
    # a reader rebuilds the run: the finished messages are the session's messages, in order
    finished = [e["message"] for e in events if e["type"] == "message_end"]
    stored = [e["message"] for e in entries(file) if e["type"] == "message"]
    assert finished == stored
    deltas = "".join(
        e["assistantMessageEvent"].get("delta", "")
        for e in updates
        if e["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert deltas == "Running it.\nTool said: from-tool"


def test_json_mode_without_a_session_still_has_a_header_and_writes_nothing(
    server: FakeServer, tmp_path: Path, work: Path
) -> None:
    done = run(server, tmp_path, work, "--mode", "json", "--no-session", "broken")
    assert done.returncode == 0  # a failed reply is an event, not a crash
    lines = json_lines(done.stdout)
    assert lines[0]["type"] == "session" and lines[0]["cwd"] == str(work)
    [failed] = [
        e["message"] for e in lines if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert failed["stopReason"] == "error"
    assert session_files(tmp_path) == []


def test_session_options_continue_a_file_the_latest_or_a_directory(
    server: FakeServer, tmp_path: Path, work: Path
) -> None:
    file = tmp_path / "mine.jsonl"
    assert run(server, tmp_path, work, "--session", str(file), "one").returncode == 0
    assert run(server, tmp_path, work, "--session", str(file), "two").returncode == 0
    assert [e["message"]["role"] for e in entries(file) if e["type"] == "message"] == [
        "user",
        "assistant",
    ] * 2
    session_id = entries(file)[0]["id"]
    elsewhere = tmp_path / "sessions"
    assert run(server, tmp_path, work, "--session-dir", str(elsewhere), "three").returncode == 0
    assert run(server, tmp_path, work, "--session-dir", str(elsewhere), "-c", "four").returncode == 0
    [kept] = sorted(elsewhere.glob("*.jsonl"))
    assert [text_of(e["message"]) for e in entries(kept) if e["type"] == "message"][::2] == ["three", "four"]
    bad = run(server, tmp_path, work, "--session", session_id[:8], "-c", "x")
    assert bad.returncode == 2 and "cannot be used together" in bad.stderr


def test_tools_choose_what_the_model_is_offered(server: FakeServer, tmp_path: Path, work: Path) -> None:
    assert run(server, tmp_path, work, "--no-session", "hi").returncode == 0
    assert run(server, tmp_path, work, "--no-session", "--tools", "read,gr*", "hi").returncode == 0
    assert run(server, tmp_path, work, "--no-session", "--no-tools", "hi").returncode == 0
    offered = [[t["function"]["name"] for t in r.body.get("tools") or ()] for r in server.requests]
    assert offered == [["read", "bash", "edit", "write"], ["read", "grep"], []]
    unknown = run(server, tmp_path, work, "--tools", "read,nope", "hi")
    assert unknown.returncode == 2 and "nope" in unknown.stderr


def test_the_model_and_settings_as_pi_finds_them(tmp_path: Path, work: Path) -> None:
    pi = tmp_path / "pi"
    pi.mkdir()
    with fake_server() as raw:
        server = answer_by_rules(raw)
        models = {"loop": {"baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "k",
                           "models": [{"id": "m1"}, {"id": "m2", "reasoning": True}]}}  # fmt: skip
        (pi / "models.json").write_text(json.dumps({"providers": models}))
        (pi / "settings.json").write_text(json.dumps({"defaultProvider": "loop", "defaultModel": "m2"}))
        env = agent_env(tmp_path)
        assert run_cli(["run", "--no-session", "hi"], env, work).returncode == 0
        assert (
            run_cli(
                ["run", "--no-session", "--provider", "loop", "--model", "m1", "hi"], env, work
            ).returncode
            == 0
        )
        assert run_cli(["run", "--no-session", "--model", "loop/m2:high", "hi"], env, work).returncode == 0
        bodies = [r.body for r in server.requests]
    assert [b["model"] for b in bodies] == ["m2", "m1", "m2"]
    assert "reasoning_effort" not in bodies[0] and bodies[2].get("reasoning_effort") == "high"


def test_sigterm_aborts_the_run_writes_the_session_and_exits_143(
    server: FakeServer, tmp_path: Path, work: Path
) -> None:
    args = [sys.executable, "-m", "sessiontree", "run", "--mode", "json", *server_args(server), "long"]
    proc = subprocess.Popen(
        args, env=agent_env(tmp_path), cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # until the tool (sleep 30) runs
            if json.loads(line)["type"] == "tool_execution_start":
                break
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    [file] = session_files(tmp_path)
    messages = [e["message"] for e in entries(file) if e["type"] == "message"]
    assert messages[-1]["role"] == "assistant" and messages[-1]["stopReason"] == "aborted"
    assert messages[-2]["role"] == "toolResult" and messages[-2]["isError"]
