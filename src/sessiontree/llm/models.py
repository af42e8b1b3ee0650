"""Which models exist and how to reach them: a small built-in table, user model files, API keys from pi's
``auth.json`` and the environment.

Holds data and lookups only; it never opens a network connection and never writes the user's files.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from sessiontree.format.pi_json import loads

from .types import Api, Model, ModelCost

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_BASE_URLS",
    "ENV_API_KEYS",
    "ModelRegistry",
    "default_auth_path",
    "default_models_path",
    "get_env_api_key",
    "load_auth_file",
    "load_models_file",
    "openai_compatible_model",
    "parse_models_config",
]

ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "zai": ("ZAI_API_KEY",),
}
"""Environment variables holding each provider's key, first set one wins (pi's names)."""

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "xai": "https://api.x.ai/v1",
    "mistral": "https://api.mistral.ai/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llama.cpp": "http://localhost:8080/v1",
    "vllm": "http://localhost:8000/v1",
}

_TEXT_IMAGE = ("text", "image")


def _anthropic(model_id: str, name: str, prices: tuple[float, float, float, float], max_tokens: int) -> Model:
    return Model(
        id=model_id, name=name, api="anthropic-messages", provider="anthropic",
        base_url=DEFAULT_BASE_URLS["anthropic"], reasoning=True, input=_TEXT_IMAGE,
        cost=ModelCost(*prices), context_window=200_000, max_tokens=max_tokens,
    )  # fmt: skip


def _openai(
    model_id: str,
    name: str,
    prices: tuple[float, float, float],
    context: int,
    max_tokens: int,
    *,
    reasoning: bool,
) -> Model:
    return Model(
        id=model_id, name=name, api="openai-responses", provider="openai",
        base_url=DEFAULT_BASE_URLS["openai"], reasoning=reasoning, input=_TEXT_IMAGE,
        cost=ModelCost(prices[0], prices[1], prices[2], 0.0), context_window=context, max_tokens=max_tokens,
    )  # fmt: skip


# Prices in $ per million tokens (input, output, cache read[, cache write]) as the providers list them.
BUILTIN_MODELS: tuple[Model, ...] = (
    _anthropic("claude-opus-4-5", "Claude Opus 4.5", (5, 25, 0.5, 6.25), 64_000),
    _anthropic("claude-sonnet-4-5", "Claude Sonnet 4.5", (3, 15, 0.3, 3.75), 64_000),
    _anthropic("claude-haiku-4-5", "Claude Haiku 4.5", (1, 5, 0.1, 1.25), 64_000),
    _anthropic("claude-opus-4-1", "Claude Opus 4.1", (15, 75, 1.5, 18.75), 32_000),
    _anthropic("claude-sonnet-4-0", "Claude Sonnet 4", (3, 15, 0.3, 3.75), 64_000),
    _openai("gpt-5", "GPT-5", (1.25, 10, 0.125), 400_000, 128_000, reasoning=True),
    _openai("gpt-5-mini", "GPT-5 mini", (0.25, 2, 0.025), 400_000, 128_000, reasoning=True),
    _openai("gpt-5-nano", "GPT-5 nano", (0.05, 0.4, 0.005), 400_000, 128_000, reasoning=True),
    _openai("o3", "o3", (2, 8, 0.5), 200_000, 100_000, reasoning=True),
    _openai("o4-mini", "o4-mini", (1.1, 4.4, 0.275), 200_000, 100_000, reasoning=True),
    _openai("gpt-4.1", "GPT-4.1", (2, 8, 0.5), 1_047_576, 32_768, reasoning=False),
    _openai("gpt-4.1-mini", "GPT-4.1 mini", (0.4, 1.6, 0.1), 1_047_576, 32_768, reasoning=False),
    _openai("gpt-4o", "GPT-4o", (2.5, 10, 1.25), 128_000, 16_384, reasoning=False),
    _openai("gpt-4o-mini", "GPT-4o mini", (0.15, 0.6, 0.075), 128_000, 16_384, reasoning=False),
)


def openai_compatible_model(
    model_id: str,
    base_url: str,
    *,
    provider: str = "openai-compatible",
    context_window: int = 128_000,
    max_tokens: int = 16_384,
    reasoning: bool = False,
    images: bool = False,
    compat: Mapping[str, Any] | None = None,
) -> Model:
    """A Chat Completions model on any compatible server (vLLM, llama.cpp, Ollama, LM Studio, ...)."""
    return Model(
        id=model_id, name=model_id, api="openai-completions", provider=provider, base_url=base_url,
        reasoning=reasoning, input=_TEXT_IMAGE if images else ("text",), context_window=context_window,
        max_tokens=max_tokens, compat=dict(compat or {}),
    )  # fmt: skip


def get_env_api_key(provider: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The provider's key from its usual environment variable, or None."""
    env = os.environ if environ is None else environ
    for name in ENV_API_KEYS.get(
        provider, (f"{provider.upper().replace('-', '_').replace('.', '_')}_API_KEY",)
    ):
        value = env.get(name)
        if value:
            return value
    return None


def _agent_dir() -> Path:
    base = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(base).expanduser() if base else Path.home() / ".pi" / "agent"


def default_models_path() -> Path:
    """pi's user model file: ``$PI_CODING_AGENT_DIR/models.json`` (default ``~/.pi/agent/models.json``)."""
    return _agent_dir() / "models.json"


def default_auth_path() -> Path:
    """pi's credentials file: ``$PI_CODING_AGENT_DIR/auth.json`` (default ``~/.pi/agent/auth.json``)."""
    return _agent_dir() / "auth.json"


def load_auth_file(path: str | Path) -> dict[str, str]:
    """API keys from pi's ``auth.json``: ``{provider: {"type": "api_key", "key": ...}}`` (or a bare string).

    OAuth entries (``"type": "oauth"``) are skipped: using them needs pi's token refresh. A missing file gives
    no keys; a file that is not a JSON object raises ``ValueError`` naming it.
    """
    file = Path(path)
    try:
        text = file.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        data = loads(text)
    except ValueError as exc:
        raise ValueError(f"{file}: not valid JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{file}: expected an object of providers at the top level")
    keys: dict[str, str] = {}
    for provider, entry in data.items():
        if isinstance(entry, str) and entry:
            keys[provider] = entry
        elif (
            isinstance(entry, Mapping)
            and entry.get("type") == "api_key"
            and isinstance(entry.get("key"), str)
        ) and entry["key"]:
            keys[provider] = entry["key"]
    return keys


def _resolve_key(value: Any, environ: Mapping[str, str]) -> str | None:
    # pi's convention: the value names an environment variable when one by that name is set, else it is the key.
    if not isinstance(value, str) or not value:
        return None
    return environ.get(value) or value


def _cost(raw: Any) -> ModelCost:
    if not isinstance(raw, Mapping):
        return ModelCost()
    return ModelCost(
        float(raw.get("input", 0)), float(raw.get("output", 0)),
        float(raw.get("cacheRead", 0)), float(raw.get("cacheWrite", 0)),
    )  # fmt: skip


def parse_models_config(
    data: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[list[Model], dict[str, str]]:
    """Models and per-provider keys from pi's ``models.json`` shape:
    ``{"providers": {name: {baseUrl, api, apiKey, headers, compat, models: [{id, name, api, reasoning, input,
    cost, contextWindow, maxTokens, headers, compat}]}}}``."""
    env = os.environ if environ is None else environ
    models: list[Model] = []
    keys: dict[str, str] = {}
    providers = data.get("providers")
    if not isinstance(providers, Mapping):
        raise ValueError('models file must have a "providers" object')
    for provider, spec in providers.items():
        if not isinstance(spec, Mapping):
            raise ValueError(f"provider {provider!r} must be an object")
        key = _resolve_key(spec.get("apiKey"), env)
        if key:
            keys[provider] = key
        base_url = spec.get("baseUrl") or DEFAULT_BASE_URLS.get(provider)
        for raw in spec.get("models") or []:
            if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
                raise ValueError(f"provider {provider!r}: every model needs an id")
            api = raw.get("api") or spec.get("api") or "openai-completions"
            if api not in ("openai-completions", "openai-responses", "anthropic-messages"):
                raise ValueError(f"model {raw['id']!r}: unsupported api {api!r}")
            models.append(
                Model(
                    id=raw["id"],
                    name=str(raw.get("name") or raw["id"]),
                    api=cast(Api, api),
                    provider=provider,
                    base_url=raw.get("baseUrl") or base_url,
                    reasoning=bool(raw.get("reasoning", False)),
                    input=tuple(raw.get("input") or ("text",)),
                    cost=_cost(raw.get("cost")),
                    context_window=int(raw.get("contextWindow", 128_000)),
                    max_tokens=int(raw.get("maxTokens", 16_384)),
                    headers={**(spec.get("headers") or {}), **(raw.get("headers") or {})},
                    compat={**(spec.get("compat") or {}), **(raw.get("compat") or {})},
                )
            )
    return models, keys


def load_models_file(
    path: str | Path, environ: Mapping[str, str] | None = None
) -> tuple[list[Model], dict[str, str]]:
    """Read a user model file (JSON, or TOML when the name ends in ``.toml``)."""
    file = Path(path)
    text = file.read_text("utf-8")
    data = tomllib.loads(text) if file.suffix == ".toml" else loads(text)
    if not isinstance(data, Mapping):
        raise ValueError(f"{file}: expected an object at the top level")
    return parse_models_config(data, environ)


class ModelRegistry:
    """Built-in models plus user models (user entries replace built-ins with the same provider and id)."""

    def __init__(
        self,
        models: Iterable[Model] = BUILTIN_MODELS,
        *,
        api_keys: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._models: dict[tuple[str, str], Model] = {}
        self._keys: dict[str, str] = dict(api_keys or {})
        self._auth_keys: dict[str, str] = {}
        self._environ = environ
        for model in models:
            self.add(model)

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        auth_path: str | Path | None = None,
    ) -> ModelRegistry:
        """Built-ins plus the user file (``default_models_path()`` when ``path`` is None and it exists), with
        the API keys of pi's ``auth.json`` (``default_auth_path()`` unless ``auth_path`` is given)."""
        registry = cls(environ=environ)
        registry._auth_keys = load_auth_file(auth_path if auth_path is not None else default_auth_path())
        file = Path(path) if path is not None else default_models_path()
        if path is not None or file.is_file():
            models, keys = load_models_file(file, environ)
            for model in models:
                registry.add(model)
            registry._keys.update(keys)
        return registry

    def add(self, model: Model) -> None:
        """Add or replace a model."""
        self._models[(model.provider, model.id)] = model

    def all(self) -> list[Model]:
        """Every known model."""
        return list(self._models.values())

    def get(self, provider: str, model_id: str) -> Model | None:
        """The model with this provider and id."""
        return self._models.get((provider, model_id))

    def find(self, ref: str) -> Model | None:
        """Look up ``"provider/id"`` or a bare id (first provider that has it); spellings that differ only in
        case, ``.`` / ``_`` / ``-`` (``claude-sonnet-4.5``) find the same model."""
        provider, _, model_id = ref.rpartition("/")
        if provider:
            found = self.get(provider, model_id)
            if found is not None:
                return found
        exact = next((m for m in self._models.values() if m.id == ref), None)
        if exact is not None:
            return exact
        wanted = _spelling(model_id)
        return next(
            (
                m
                for m in self._models.values()
                if _spelling(m.id) == wanted
                and (not provider or _spelling(m.provider) == _spelling(provider))
            ),
            None,
        )

    def suggest(self, ref: str, n: int = 3) -> list[str]:
        """The known ``provider/id`` names close to ``ref`` (for "did you mean" messages): its id misspelled
        (``gpt5``, ``claude-sonet-4-5``) or a part of one (``opus``), on any provider (a misspelled provider
        still finds the model). Nothing when no id is close: a name is never suggested for its provider alone.
        """
        provider, _, model_id = ref.rpartition("/")
        wanted = _spelling(model_id)
        if not wanted:
            return []
        by_id: dict[str, list[Model]] = {}
        for model in self._models.values():
            by_id.setdefault(_spelling(model.id), []).append(model)
        close = difflib.get_close_matches(wanted, list(by_id), n=n, cutoff=0.75)
        if len(wanted) >= 3:  # a part of an id, as a whole word of it: "opus", "mini", "gpt-5"
            close += [i for i in by_id if i not in close and f"-{wanted}-" in f"-{i}-"]
        named = _spelling(provider)
        found = [m for i in close for m in by_id[i]]
        found.sort(key=lambda m: _spelling(m.provider) != named)  # the named provider's model first
        return [f"{m.provider}/{m.id}" for m in found][:n]

    def require(self, ref: str) -> Model:
        """``find(ref)``, or ``LookupError`` naming the close known models, else what to do instead."""
        found = self.find(ref)
        if found is not None:
            return found
        close = self.suggest(ref)
        if close:
            raise LookupError(f"Unknown model {ref!r}; did you mean {' or '.join(close)}?")
        provider, _, model_id = ref.rpartition("/")
        providers = sorted({m.provider for m in self._models.values()})
        if provider and _spelling(provider) not in {_spelling(p) for p in providers}:
            why = f"no provider {provider!r} is known (known: {', '.join(providers)})"
        elif provider:
            why = f"{provider} has no model {model_id!r}"
        else:
            why = "no provider has a model by that id"
        raise LookupError(
            f"Unknown model {ref!r}: {why}; a models file ({default_models_path()}) adds models"
        )

    def api_key(self, provider: str) -> str | None:
        """The key for ``provider``: from the user model file, else pi's ``auth.json``, else the environment."""
        return (
            self._keys.get(provider)
            or self._auth_keys.get(provider)
            or get_env_api_key(provider, self._environ)
        )


def _spelling(name: str) -> str:
    return name.lower().replace(".", "-").replace("_", "-")
