"""The README stays true: its Python tour runs, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _python_blocks() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) >= 2, "the README has a Python tour and a model example"
    return blocks


def test_python_tour_runs_without_touching_the_pi_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    namespace: dict[str, object] = {}
    exec(compile(_python_blocks()[0], "README.md", "exec"), namespace)
    assert not agent.exists(), "the tour must not write into pi's session directory"
    files = list(Path(str(namespace["sessions"])).rglob("*.jsonl"))
    assert len(files) == 1
    from sessiontree import SessionManager

    reopened = SessionManager.open(files[0], read_only=True)
    kinds = [e["type"] for e in reopened.get_entries()]
    assert kinds == ["model_change", "message", "label", "branch_summary"]
    reopened.close()


def test_model_example_stops_at_once_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as stopped:
        exec(compile(_python_blocks()[1], "README.md", "exec"), {})
    assert "No API key for anthropic" in str(stopped.value)


def _agent_dir_with_fake_anthropic(agent: Path, url: str) -> None:
    agent.mkdir(parents=True)
    models = {
        "providers": {
            "anthropic": {
                "baseUrl": url,
                "api": "anthropic-messages",
                "models": [{"id": "claude-sonnet-4-5", "contextWindow": 200_000, "maxTokens": 1000}],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models), "utf-8")
    (agent / "auth.json").write_text(
        json.dumps({"anthropic": {"type": "api_key", "key": "sk-test"}}), "utf-8"
    )


def test_model_example_prints_the_reply_with_the_key_from_auth_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.llm.fake_servers import anthropic_sse, fake_server

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with fake_server() as server:
        server.replies.append(anthropic_sse(text=["It parses ", "the arguments."]))
        _agent_dir_with_fake_anthropic(tmp_path / "agent", server.url)
        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
        exec(compile(_python_blocks()[1], "README.md", "exec"), {})
        headers = server.requests[0].headers
        assert "sk-test" in (
            headers.get("x-api-key"),
            headers.get("authorization", "").removeprefix("Bearer "),
        )
    assert "It parses the arguments." in capsys.readouterr().out


def test_model_example_prints_the_error_of_a_failed_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.llm.fake_servers import JsonReply, fake_server

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with fake_server() as server:
        error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        server.replies.append(JsonReply(401, error))
        _agent_dir_with_fake_anthropic(tmp_path / "agent", server.url)
        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
        with pytest.raises(SystemExit) as stopped:
            exec(compile(_python_blocks()[1], "README.md", "exec"), {})
    assert str(stopped.value).startswith("error: ") and "invalid x-api-key" in str(stopped.value)


def test_setup_commands_are_the_ones_ci_runs() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, flags=re.S)
    assert first_block is not None
    commands = [line for line in first_block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "sessiontree demo examples/coding-session.jsonl" in commands[0]
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert (ROOT / "examples" / "coding-session.jsonl").is_file()


def test_storage_example_runs_on_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = [b for b in _python_blocks() if "open_repo(" in b]
    monkeypatch.chdir(tmp_path)  # the example's database goes to the working directory
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert (tmp_path / "sessions.db").exists()
    hits = namespace["hits"]
    assert [h.entry_id for h in hits] == [namespace["sm"].get_leaf_id()]  # type: ignore[attr-defined]
    assert namespace["same"].get_session_id() == namespace["sm"].get_session_id()  # type: ignore[attr-defined]


def test_one_spelling_for_the_registry_and_model_ids() -> None:
    from sessiontree.llm.models import ModelRegistry

    code = "\n".join(_python_blocks())
    assert "ModelRegistry()" not in code and code.count("ModelRegistry.load()") >= 2
    assert "registry.find(" not in code  # find gives None on a typo; the examples use require
    registry = ModelRegistry()
    named = re.findall(r"\b((?:anthropic|openai)/[\w.-]+)", README)
    assert named
    for ref in named:  # every provider/id in the README as the registry spells it
        provider, _, model_id = ref.partition("/")
        assert registry.get(provider, model_id) is not None, ref


def test_the_fast_subset_the_readme_names_leaves_out_the_long_runs() -> None:
    import subprocess
    import sys

    from tests.conftest import SLOW_MODULES

    assert '`.venv/bin/pytest -m "not slow"` runs the fast subset' in README
    assert all((ROOT / module).is_file() for module in SLOW_MODULES)
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", "not slow",
         "tests/chat/test_chat_tmux.py", "tests/test_export.py", "tests/test_readme.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert ids and not [i for i in ids if "test_chat_tmux" in i], collected.stdout
    for chromium in (
        "test_the_page_shows_the_branch_and_the_tree_in_chromium",
        "test_a_hostile_session_runs_no",
    ):
        assert not [i for i in ids if chromium in i]  # the Chromium tests are slow by their fixture
    assert any("test_markdown_export" in i for i in ids)  # and the rest of the file stays
