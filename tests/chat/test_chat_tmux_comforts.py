"""The chat's comforts in a real terminal (tmux) on the loopback server: Ctrl+O shows a collapsed tool
output, the exit says how to continue, a 40×12 terminal keeps the context figure, the thinking level shows
only for a model that reasons, a keyless model picked with /model is named as picked there, and the
/resume picker keeps rows with wide characters on one line."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.format.safe_text import cell_width
from tests.chat.tmux_support import call, chat_env, chat_terminal, lines, require_tmux, start
from tests.llm.fake_servers import chat_completions_sse, fake_server

pytestmark = pytest.mark.usefixtures("_tmux")


@pytest.fixture
def _tmux() -> None:
    require_tmux()


def test_ctrl_o_shows_a_collapsed_output_and_the_exit_says_how_to_continue(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    command = "printf 'alpha\\nbeta\\ngamma\\n'"
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(
                tool_calls=[call("c1", "bash", {"command": command})], finish_reason="tool_calls"
            ),
            chat_completions_sse(text=["Printed three words."]),
        ]
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("print three words")
            term.send("Enter")
            # (both lines: a capture can land while the terminal is still drawing the turn's frame)
            collapsed = "↳ alpha (+2 lines, ctrl+o shows them)"
            screen = term.wait_for(lambda s: "Printed three words." in s and collapsed in s)
            assert "  gamma" not in screen
            term.wait_idle()
            term.send("C-o")
            screen = term.wait_for("  gamma")
            assert f"── [bash: {command}]: 3 lines ──" in screen
            assert screen.index("  alpha") < screen.index("  beta") < screen.index("  gamma")
            term.send("C-d")  # exit on an empty line
            screen = term.wait_exit(0)
    (session,) = (tmp_path / "pi" / "sessions").glob("*/*.jsonl")
    session_id = lines(session)[0]["id"]
    assert f"Continue with: sessiontree chat {session_id}" in screen
    assert "sessiontree chat -c" in screen


def test_a_narrow_terminal_keeps_the_context_figure_in_the_footer(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    with fake_server() as server, start(server, tmp_path, work, size=(40, 12)) as term:
        screen = term.wait_ready()
        (footer,) = [row for row in screen.split("\n") if " · ctx " in row]
        assert "ctx 0/128k" in footer and footer.startswith("local/") and len(footer.rstrip()) <= 40
        term.type("/quit")
        term.send("Enter")
        screen = term.wait_exit(0)
    assert "Continue with" not in screen  # nothing was written: nothing to continue


def test_the_thinking_level_shows_for_a_reasoning_model_and_a_keyless_pick_names_model(
    tmp_path: Path,
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    env = chat_env(tmp_path)
    with fake_server() as server:
        pi = Path(env["PI_CODING_AGENT_DIR"])
        pi.mkdir(parents=True)
        models = {
            "baseUrl": f"{server.url}/v1",
            "api": "openai-completions",
            "models": [{"id": "thinker", "reasoning": True}],
        }
        (pi / "models.json").write_text(json.dumps({"providers": {"loopback": models}}))
        args = ["--model", "loopback/thinker", "--thinking", "high", "--cwd", str(work)]
        with chat_terminal(args, env, work) as term:
            screen = term.wait_ready()
            assert "loopback/thinker · thinking high · " in screen
            term.type("/model openai/gpt-4o")
            term.send("Enter")
            screen = term.wait_for("No API key for provider 'openai'")
            assert "(model from /model)" in screen and "--model" not in screen.split("No API key")[-1]
            term.type("/quit")
            term.send("Enter")
            term.wait_exit(0)


def test_resume_rows_with_wide_characters_stay_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    env = chat_env(tmp_path)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", env["PI_CODING_AGENT_DIR"])
    names = ["日本語のセッション名前をここに書きます" * 3, "🚀 rocket launch 🚀 plan 🚀" * 4]
    for name in names:
        with SessionManager.create(str(work)) as manager:
            now = int(time.time() * 1000)
            manager.append_message({"role": "user", "content": f"about {name[:3]}", "timestamp": now})
            manager.append_session_info(name)
    with fake_server() as server:
        args = [
            "--base-url",
            f"{server.url}/v1",
            "--model",
            "local/test-model",
            "--cwd",
            str(work),
            "--resume",
        ]
        with chat_terminal(args, env, work) as term:
            screen = term.wait_for("Resume a session")
            rows = term.wait_for(lambda s: names[0][:6] in s and names[1][:6] in s).split("\n")
            for name in names:
                (row,) = [r for r in rows if name[:6] in r]
                assert re.search(r" 1 (now|\d+m)$", row.rstrip()), row  # its count and age on the same row
                assert cell_width(row.rstrip()) <= 120, row
            assert screen
            term.send("Escape")
            term.wait_exit(0)


def test_the_provider_sdk_loads_while_the_first_line_is_typed(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    with fake_server() as server, start(server, tmp_path, work) as term:
        term.wait_ready()
        maps = Path(f"/proc/{term.command_pid()}/maps")
        # the OpenAI SDK's compiled dependency is mapped with no request sent yet
        term.wait_for(lambda _s: "_pydantic_core" in maps.read_text(), timeout=60)
        assert not server.requests
        term.type("/quit")
        term.send("Enter")
        term.wait_exit(0)
