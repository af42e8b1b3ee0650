"""Which model ``sessiontree chat`` uses: --model, then $SESSIONTREE_MODEL, then the settings file, then pi's
settings, then a provider with a key; --base-url for a local server; with nothing configured, a message
saying what to set and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree.agent.host import choose_model, load_settings
from sessiontree.errors import SessionError
from sessiontree.llm.models import ModelRegistry


def registry(keys: dict[str, str] | None = None) -> ModelRegistry:
    return ModelRegistry(api_keys=keys or {}, environ={})


def settings(tmp_path: Path, own: dict[str, object] | None = None, pi: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    own_path, pi_dir = tmp_path / "own.json", tmp_path / "pi"
    pi_dir.mkdir(exist_ok=True)
    if own is not None:
        own_path.write_text(json.dumps(own))
    if pi is not None:
        (pi_dir / "settings.json").write_text(json.dumps(pi))
    return load_settings(own_path, environ={"PI_CODING_AGENT_DIR": str(pi_dir)})


def test_the_flag_wins_then_the_environment_then_the_settings_then_pi(tmp_path: Path) -> None:
    both = settings(
        tmp_path,
        {"model": "openai/gpt-5-mini", "thinkingLevel": "low"},
        {"defaultProvider": "anthropic", "defaultModel": "claude-haiku-4-5", "defaultThinkingLevel": "high"},
    )
    keys = registry({"openai": "sk-o", "anthropic": "sk-a"})
    env = {"SESSIONTREE_MODEL": "anthropic/claude-opus-4-5"}
    chosen = choose_model("openai/gpt-4.1", settings=both, registry=keys, environ=env)
    assert (chosen.model.id, chosen.source, chosen.api_key, chosen.thinking_level) == (
        "gpt-4.1",
        "--model",
        "sk-o",
        "low",
    )
    chosen = choose_model(settings=both, registry=keys, environ=env)
    assert (chosen.model.id, chosen.source) == ("claude-opus-4-5", "$SESSIONTREE_MODEL")
    chosen = choose_model(settings=both, registry=keys, environ={})
    assert chosen.model.id == "gpt-5-mini" and chosen.source.endswith("own.json")
    (tmp_path / "pi-only").mkdir()
    pi_default = {
        "defaultProvider": "anthropic",
        "defaultModel": "claude-haiku-4-5",
        "defaultThinkingLevel": "high",
    }
    only_pi = settings(tmp_path / "pi-only", None, pi_default)
    chosen = choose_model(settings=only_pi, registry=keys, environ={})
    assert (chosen.model.id, chosen.thinking_level) == ("claude-haiku-4-5", "high")
    assert chosen.source.endswith("settings.json")


def test_a_provider_with_a_key_gives_its_default_model(tmp_path: Path) -> None:
    chosen = choose_model(settings=settings(tmp_path), registry=registry({"openai": "sk-o"}), environ={})
    assert (chosen.model.provider, chosen.model.id, chosen.api_key) == ("openai", "gpt-5", "sk-o")


def test_base_url_sends_a_known_model_or_a_bare_name_to_that_server(tmp_path: Path) -> None:
    empty = settings(tmp_path)
    local = choose_model(
        "llama3.2", "http://localhost:11434/v1", settings=empty, registry=registry(), environ={}
    )
    assert (local.model.id, local.model.api, local.model.base_url) == (
        "llama3.2",
        "openai-completions",
        "http://localhost:11434/v1",
    )
    anthropic = choose_model(
        "anthropic/claude-sonnet-4-5", "http://127.0.0.1:9/", settings=empty, registry=registry(), environ={}
    )
    assert anthropic.model.api == "anthropic-messages" and anthropic.model.base_url == "http://127.0.0.1:9/"
    assert anthropic.api_key == "not-needed"  # the SDK insists on a key; a server of one's own needs none
    bare = choose_model(None, "http://localhost:8080/v1", settings=empty, registry=registry(), environ={})
    assert bare.model.id == "default"


def test_a_named_model_without_its_key_says_which_variable_to_set(tmp_path: Path) -> None:
    with pytest.raises(SessionError) as caught:
        choose_model("openai/gpt-5", settings=settings(tmp_path), registry=registry(), environ={})
    assert "OPENAI_API_KEY" in str(caught.value) and "--base-url" in str(caught.value)
    assert caught.value.kind == "invalid_argument"
    with pytest.raises(SessionError, match="Unknown model 'nope/never'"):
        choose_model("nope/never", settings=settings(tmp_path), registry=registry(), environ={})
    with pytest.raises(SessionError, match="Unknown thinking level"):
        choose_model(
            "openai/gpt-5", thinking_flag="max", settings=settings(tmp_path), registry=registry(), environ={}
        )


def test_a_damaged_settings_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "own.json").write_text("{not json")
    with pytest.raises(SessionError, match=r"own\.json: not valid JSON"):
        load_settings(tmp_path / "own.json", environ={"PI_CODING_AGENT_DIR": str(tmp_path)})


def test_with_nothing_configured_the_command_says_what_to_set_and_exits_2(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_OAUTH_TOKEN")) and k != "SESSIONTREE_MODEL"
    }
    env |= {
        "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
        "SESSIONTREE_SETTINGS": str(tmp_path / "settings.json"),
        "SESSIONTREE_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", "chat"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "No model is configured" in done.stderr
    assert (
        "ANTHROPIC_API_KEY" in done.stderr
        and "OPENAI_API_KEY" in done.stderr
        and "--base-url URL" in done.stderr
    )
    assert str(tmp_path / "settings.json") in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", "chat", "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2 and "needs a terminal" in done.stderr  # configured; but no terminal here


def test_other_commands_load_neither_the_chat_nor_textual(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from sessiontree.cli.app import main\n"
        "sys.argv = ['sessiontree', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('textual', 'prompt_toolkit') or "
        "m.startswith(('sessiontree.agent', 'sessiontree.cli.chat.app', 'sessiontree.cli.tui'))]\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "LOADED []" in done.stderr and "chat" in done.stdout


def test_retry_settings_come_from_the_settings_file_or_pis(tmp_path: Path) -> None:
    from sessiontree.agent import RetrySettings

    assert settings(tmp_path).retry == RetrySettings()
    pi_only = settings(tmp_path, None, {"retry": {"maxRetries": 5}})
    assert pi_only.retry == RetrySettings(max_retries=5)
    own = settings(tmp_path, {"retry": {"enabled": False}}, {"retry": {"maxRetries": 5}})
    assert own.retry == RetrySettings(enabled=False)
    with pytest.raises(SessionError, match=r"own\.json: bad 'retry' settings .*maxRetries"):
        settings(tmp_path, {"retry": {"maxRetries": "many"}})
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(SessionError, match=r"settings\.json: 'retry' must be an object"):
        settings(fresh, None, {"retry": 3})
