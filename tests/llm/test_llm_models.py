"""Model registry: built-ins, pi-style user model files (JSON and TOML), API keys from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.llm.models import (
    BUILTIN_MODELS,
    ModelRegistry,
    default_models_path,
    get_env_api_key,
    load_models_file,
    openai_compatible_model,
)

USER_FILE = {
    "providers": {
        "ollama": {
            "baseUrl": "http://localhost:11434/v1",
            "api": "openai-completions",
            "apiKey": "ollama",
            "models": [{"id": "qwen3:8b", "reasoning": True, "contextWindow": 40960, "maxTokens": 8192}],
        },
        "anthropic": {
            "apiKey": "MY_ANTHROPIC_KEY",
            "models": [
                {"id": "claude-sonnet-4-5", "api": "anthropic-messages", "name": "Sonnet via proxy",
                 "baseUrl": "http://127.0.0.1:9999", "input": ["text", "image"],
                 "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                 "contextWindow": 200000, "maxTokens": 64000, "compat": {"thinking": "adaptive"}}
            ],
        },
    }
}  # fmt: skip


def test_builtins_are_consistent() -> None:
    ids = [(m.provider, m.id) for m in BUILTIN_MODELS]
    assert len(ids) == len(set(ids))
    for model in BUILTIN_MODELS:
        assert model.context_window > model.max_tokens > 0
        assert model.cost.output >= model.cost.input > 0
        assert model.api in ("openai-responses", "anthropic-messages")


def test_json_user_file_overrides_builtin_and_resolves_keys(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(USER_FILE))
    registry = ModelRegistry.load(path, environ={"MY_ANTHROPIC_KEY": "sk-from-env"})
    local = registry.get("ollama", "qwen3:8b")
    assert local is not None
    assert (local.api, local.base_url, local.reasoning, local.context_window) == (
        "openai-completions",
        "http://localhost:11434/v1",
        True,
        40960,
    )
    sonnet = registry.find("anthropic/claude-sonnet-4-5")
    assert (
        sonnet is not None and sonnet.name == "Sonnet via proxy" and sonnet.compat["thinking"] == "adaptive"
    )
    assert sonnet.supports_images
    assert registry.api_key("anthropic") == "sk-from-env"  # the value named an environment variable
    assert registry.api_key("ollama") == "ollama"  # a literal key
    assert registry.find("gpt-4o") is not None


def test_toml_user_file(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[providers.vllm]\nbaseUrl = "http://127.0.0.1:8000/v1"\napi = "openai-completions"\n'
        '[[providers.vllm.models]]\nid = "Qwen/Qwen3-8B"\ncontextWindow = 32768\nmaxTokens = 4096\n'
        'compat = { maxTokensField = "max_tokens" }\n'
    )
    models, keys = load_models_file(path, environ={})
    assert keys == {}
    assert models[0].id == "Qwen/Qwen3-8B" and models[0].compat == {"maxTokensField": "max_tokens"}


def test_bad_user_file(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"providers": {"x": {"models": [{"id": "m", "api": "google"}]}}}))
    with pytest.raises(ValueError, match="unsupported api"):
        load_models_file(path)


def test_env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_env_api_key("openai", {"OPENAI_API_KEY": "sk-1"}) == "sk-1"
    assert get_env_api_key("anthropic", {"ANTHROPIC_OAUTH_TOKEN": "tok"}) == "tok"
    assert get_env_api_key("my-proxy", {"MY_PROXY_API_KEY": "k"}) == "k"
    assert get_env_api_key("openai", {}) is None
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/tmp/pi-agent")
    assert default_models_path() == Path("/tmp/pi-agent/models.json")


def test_openai_compatible_model() -> None:
    model = openai_compatible_model("llama", "http://127.0.0.1:8080/v1", images=True)
    assert model.api == "openai-completions" and model.supports_images and model.cost.input == 0


# -- spellings, suggestions and pi's auth.json ---------------------------------------------------------------
def test_find_accepts_dotted_and_cased_spellings() -> None:
    from sessiontree.llm.models import ModelRegistry

    registry = ModelRegistry()
    sonnet = registry.get("anthropic", "claude-sonnet-4-5")
    assert sonnet is not None
    for ref in ("anthropic/claude-sonnet-4.5", "claude-sonnet-4.5", "Anthropic/Claude_Sonnet_4.5"):
        assert registry.find(ref) is sonnet, ref
    assert registry.find("openai/claude-sonnet-4.5") is None  # the provider still has to match


def test_require_names_the_closest_models() -> None:
    import pytest

    from sessiontree.llm.models import ModelRegistry

    with pytest.raises(LookupError) as raised:
        ModelRegistry().require("anthropic/claude-sonet-4.6")
    assert "did you mean anthropic/claude-sonnet-4-5" in str(raised.value)


def test_api_keys_come_from_auth_json_before_the_environment(tmp_path: Path) -> None:
    import json

    from sessiontree.llm.models import ModelRegistry, load_auth_file

    auth = tmp_path / "auth.json"
    auth.write_text(
        json.dumps(
            {
                "anthropic": {"type": "api_key", "key": "from-file"},
                "openai": "bare-string",
                "github-copilot": {"type": "oauth", "access": "x", "refresh": "y", "expires": 1},
            }
        ),
        "utf-8",
    )
    assert load_auth_file(auth) == {"anthropic": "from-file", "openai": "bare-string"}
    env = {"ANTHROPIC_API_KEY": "from-env", "GROQ_API_KEY": "groq-env"}
    registry = ModelRegistry.load(environ=env, auth_path=auth)
    assert registry.api_key("anthropic") == "from-file"
    assert registry.api_key("groq") == "groq-env"
    assert load_auth_file(tmp_path / "missing.json") == {}


def test_auth_json_is_found_under_pi_coding_agent_dir(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from sessiontree.llm.models import ModelRegistry, default_auth_path

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    (tmp_path / "auth.json").write_text('{"xai": {"type": "api_key", "key": "k"}}', "utf-8")
    assert default_auth_path() == tmp_path / "auth.json"
    assert ModelRegistry.load(environ={}).api_key("xai") == "k"
