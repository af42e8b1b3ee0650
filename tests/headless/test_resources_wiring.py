"""The headless modes send pi's system prompt built from the project's resources (``agent.resources``): the
context files of the agent dir and every parent, outermost first; a skill listed; a template and
``/skill:name`` expanded; ``.pi/`` resources used only with ``--approve`` (a warning on stderr otherwise);
``--no-context-files``, ``--system-prompt`` and ``--append-system-prompt``; rpc's ``get_commands``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.headless.model_rules import answer_by_rules, text_of
from tests.headless.support import RpcProcess, agent_env, run_cli, server_args
from tests.llm.fake_servers import FakeServer, fake_server


@pytest.fixture
def server() -> Any:
    with fake_server() as started:
        yield answer_by_rules(started)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """pi's worked example: AGENTS.md in the agent dir, the repository and the package; a skill and a
    template in the package's .pi/."""
    (tmp_path / "pi").mkdir()
    (tmp_path / "pi" / "AGENTS.md").write_text("Always answer in English.\n")
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Run `make test` before committing.\n")
    pkg = repo / "pkg"
    (pkg / ".pi" / "skills" / "pdf-tools").mkdir(parents=True)
    (pkg / "AGENTS.md").write_text("This package targets Python 3.11.\n")
    (pkg / ".pi" / "skills" / "pdf-tools" / "SKILL.md").write_text(
        "---\nname: pdf-tools\ndescription: Extract text & tables from PDFs.\n---\nUse pdftotext.\n"
    )
    (pkg / ".pi" / "prompts").mkdir()
    (pkg / ".pi" / "prompts" / "review.md").write_text(
        "---\ndescription: Review a file\n---\nReview $1. Focus on: ${@:2}\n"
    )
    return pkg


def system_of(server: FakeServer, index: int = -1) -> str:
    first = server.requests[index].body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def last_user(server: FakeServer, index: int = -1) -> str:
    return text_of(server.requests[index].body["messages"][-1])


def test_run_sends_pi_s_prompt_and_expands_templates_for_a_trusted_project(
    server: FakeServer, tmp_path: Path, project: Path
) -> None:
    env = agent_env(tmp_path)
    done = run_cli(
        ["run", *server_args(server), "--no-session", "--approve", "/review src/a.py errors tests"],
        env,
        project,
    )
    assert done.returncode == 0, done.stderr
    assert last_user(server) == "Review src/a.py. Focus on: errors tests"
    prompt = system_of(server)
    paths = [tmp_path / "pi" / "AGENTS.md", tmp_path / "proj" / "AGENTS.md", project / "AGENTS.md"]
    places = [prompt.index(f'<project_instructions path="{p}">\n') for p in paths]
    assert places == sorted(places)
    assert "Always answer in English.\n\n</project_instructions>" in prompt
    assert "<name>pdf-tools</name>" in prompt and "Extract text &amp; tables from PDFs." in prompt
    assert prompt.index("<tools>") < prompt.index("<project_context>") < prompt.index("<skills>")
    assert prompt.rstrip().endswith(f"<cwd>\n{project}\n</cwd>")
    skill = run_cli(
        ["run", *server_args(server), "--no-session", "-a", "/skill:pdf-tools a.pdf"], env, project
    )
    assert skill.returncode == 0, skill.stderr
    expanded = last_user(server)
    assert expanded.startswith(f'<skill name="pdf-tools" location="{project}/.pi/skills/pdf-tools/SKILL.md">')
    assert "Use pdftotext." in expanded and expanded.endswith("\n\na.pdf")


def test_an_untrusted_project_keeps_its_context_files_but_not_its_pi_folder(
    server: FakeServer, tmp_path: Path, project: Path
) -> None:
    done = run_cli(
        ["run", *server_args(server), "--no-session", "/review src/a.py"], agent_env(tmp_path), project
    )
    assert done.returncode == 0
    assert last_user(server) == "/review src/a.py"  # no template
    prompt = system_of(server)
    assert "<skills>" not in prompt and prompt.count("<project_instructions path=") == 3
    assert "warning:" in done.stderr and "not trusted" in done.stderr


def test_prompt_options_replace_append_and_drop(server: FakeServer, tmp_path: Path, project: Path) -> None:
    (project / "custom.md").write_text("You are a terse reviewer.")
    args = ["run", *server_args(server), "--no-session", "--system-prompt", "custom.md",
            "--append-system-prompt", "Mind the tests.", "--no-context-files", "hi"]  # fmt: skip
    done = run_cli(args, agent_env(tmp_path), project)
    assert done.returncode == 0, done.stderr
    prompt = system_of(server)
    assert prompt.startswith("You are a terse reviewer.") and "<tools>" not in prompt
    assert "<addendum>\nMind the tests.\n</addendum>" in prompt and "<project_context>" not in prompt


def test_rpc_lists_the_commands_and_expands_them(server: FakeServer, tmp_path: Path, project: Path) -> None:
    rpc = RpcProcess([*server_args(server), "--no-session", "--approve"], agent_env(tmp_path), project)
    try:
        commands = rpc.ok({"type": "get_commands"})["commands"]
        assert [(c["name"], c["source"]) for c in commands] == [
            ("review", "prompt"),
            ("skill:pdf-tools", "skill"),
        ]
        assert commands[0]["description"] == "Review a file"
        assert commands[1]["sourceInfo"]["path"] == str(project / ".pi" / "skills" / "pdf-tools" / "SKILL.md")
        rpc.ok({"type": "prompt", "message": "/review x.py style"})
        rpc.events_until("agent_settled")
        assert last_user(server) == "Review x.py. Focus on: style"
        assert rpc.close() == 0
    finally:
        rpc.kill()
