"""The README's "Run an agent" section stays true: the offline example runs as written, and the
real-provider example runs against a loopback server speaking Anthropic's wire format: it prints the reply,
and a failed run or a missing key stops it with the error (never exit 0 with nothing printed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def section_blocks() -> list[str]:
    section = README.split("## Run an agent", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_offline_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    offline, _ = section_blocks()
    namespace: dict[str, object] = {}
    exec(compile(offline, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[:4] == ["save_point False"] * 4
    assert printed[4:] == ['Fixed: it prints Hello, world. print("Hello, world") 4']


def _run_provider_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, provider = section_blocks()
    monkeypatch.chdir(tmp_path)  # the example works on "." and its session goes to pi's directory
    exec(compile(provider, "README.md", "exec"), {})


def _with_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    from tests.test_readme import _agent_dir_with_fake_anthropic

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    _agent_dir_with_fake_anthropic(tmp_path / "agent", url)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))


def test_the_provider_example_prints_the_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.llm.fake_servers import anthropic_sse, fake_server

    with fake_server() as server:
        server.replies.append(anthropic_sse(text=["All tests ", "pass already."]))
        _with_server(tmp_path, monkeypatch, server.url)
        _run_provider_example(tmp_path, monkeypatch)
        assert len(server.requests) == 1
    assert capsys.readouterr().out == "All tests pass already.\n"
    (session,) = (tmp_path / "agent" / "sessions").glob("*/*.jsonl")
    assert "All tests pass already." in session.read_text("utf-8")


def test_the_provider_example_stops_with_the_error_of_a_failed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.llm.fake_servers import JsonReply, fake_server

    with fake_server() as server:
        error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        server.replies.append(JsonReply(401, error))
        _with_server(tmp_path, monkeypatch, server.url)
        with pytest.raises(SystemExit) as stopped:
            _run_provider_example(tmp_path, monkeypatch)
    assert str(stopped.value).startswith("error: ") and "invalid x-api-key" in str(stopped.value)


def test_the_provider_example_stops_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as stopped:
        _run_provider_example(tmp_path, monkeypatch)
    assert "No API key for anthropic" in str(stopped.value)
    assert not (tmp_path / "agent").exists()  # stopped before a session was made
