"""Which model an agent session talks to, with which key and thinking level: ``--model`` (with ``--provider``,
``P/ID`` or ``P/ID:LEVEL``), then ``$SESSIONTREE_MODEL``, then the settings files, then the default model of
the first provider that has a key; ``--base-url`` points the choice (or a bare id) at a local
OpenAI-compatible server. Also: which models can be used at all (those with a key, or on this machine).

Chooses only: it sends no request and writes no file. Everything it cannot settle is a ``SessionError`` of
kind ``invalid_argument`` whose message says exactly what to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import SessionError
from ...llm.models import (
    DEFAULT_BASE_URLS,
    ENV_API_KEYS,
    ModelRegistry,
    default_auth_path,
    openai_compatible_model,
)
from ...llm.types import Model, ThinkingLevel
from .settings import AgentSettings, default_settings_path, load_settings
from .thinking import THINKING_LEVELS, check_thinking_level

__all__ = [
    "LOCAL_MODEL_ID",
    "MODEL_ENV",
    "ModelChoice",
    "available_models",
    "choose_model",
    "model_api_key",
]

MODEL_ENV = "SESSIONTREE_MODEL"
LOCAL_MODEL_ID = "default"
"""The model name sent to a ``--base-url`` server when no model is named (single-model servers ignore it)."""
# The model used for a provider that has a key when nothing else names one (pi picks a default per provider).
_PROVIDER_DEFAULTS = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"))
_PLACEHOLDER_KEY = "not-needed"


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model to use, its API key (None: the provider needs none) and where the choice came from."""

    model: Model
    api_key: str | None
    source: str
    thinking_level: ThinkingLevel = "off"


def _key_hint(provider: str) -> str:
    names = ENV_API_KEYS.get(provider, (f"{provider.upper().replace('-', '_').replace('.', '_')}_API_KEY",))
    return " or ".join(names)


def _nothing_configured(settings_path: Path) -> SessionError:
    keys = ", ".join(name for names in ENV_API_KEYS.values() for name in names[:1])
    return SessionError(
        "No model is configured. Either set an API key variable (one of "
        f"{keys}; or put the key in pi's {default_auth_path()}) and optionally name the model with "
        f'--model PROVIDER/ID, ${MODEL_ENV} or "model" in {settings_path}; or start a local '
        "OpenAI-compatible server and pass --base-url URL (for example --base-url http://localhost:11434/v1 "
        "--model llama3.2).",
        kind="invalid_argument",
    )


def _is_local(url: str | None) -> bool:
    from urllib.parse import urlsplit

    host = urlsplit(url or "").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def model_api_key(model: Model, registry: ModelRegistry) -> str | None:
    """The key to send for ``model``: its provider's, else a placeholder for a server on this machine (the SDKs
    insist on one), else None."""
    key = registry.api_key(model.provider)
    if key:
        return key
    return _PLACEHOLDER_KEY if _is_local(model.base_url) else None


def available_models(registry: ModelRegistry) -> list[Model]:
    """The models that can be used now (pi's available models): their provider has a key, or they run on
    this machine; in the registry's order."""
    return [m for m in registry.all() if model_api_key(m, registry) is not None]


def _on_server(ref: str | None, base_url: str, registry: ModelRegistry) -> Model:
    if ref is None:
        return openai_compatible_model(LOCAL_MODEL_ID, base_url)
    known = registry.find(ref)
    if known is not None:
        # A --base-url server speaks Chat Completions (an OpenAI-compatible one), not OpenAI's Responses API.
        api = "openai-completions" if known.api == "openai-responses" else known.api
        return replace(known, base_url=base_url, api=api)
    provider, _, model_id = ref.rpartition("/")
    return openai_compatible_model(model_id, base_url, provider=provider or "openai-compatible")


def _split_level(ref: str) -> tuple[str, str | None]:
    """``P/ID:LEVEL`` as ``(P/ID, LEVEL)`` when LEVEL is a thinking level (ids may hold colons)."""
    head, sep, tail = ref.rpartition(":")
    return (head, tail) if sep and head and tail in THINKING_LEVELS else (ref, None)


def _provider_default(provider: str, registry: ModelRegistry) -> str:
    for name, model_id in _PROVIDER_DEFAULTS:
        if name == provider and registry.get(name, model_id) is not None:
            return f"{name}/{model_id}"
    first = next((m for m in registry.all() if m.provider == provider), None)
    if first is None:
        raise SessionError(f"Unknown provider {provider!r} (from --provider)", kind="invalid_argument")
    return f"{provider}/{first.id}"


def choose_model(
    model_flag: str | None = None,
    base_url: str | None = None,
    thinking_flag: str | None = None,
    *,
    provider: str | None = None,
    settings: AgentSettings | None = None,
    registry: ModelRegistry | None = None,
    environ: Mapping[str, str] | None = None,
    source: str = "--model",
) -> ModelChoice:
    """The session's model: ``model_flag`` (``provider`` names its provider when it has none), then
    ``$SESSIONTREE_MODEL``, then the settings files (in that order), else the default model of the first
    provider that has a key; ``base_url`` sends it to that server instead. ``source`` names where
    ``model_flag`` came from in messages (``/model`` in the chat)."""
    flag_source = source
    env = os.environ if environ is None else environ
    settings = settings if settings is not None else load_settings(environ=env)
    try:
        models = registry if registry is not None else ModelRegistry.load(environ=env)
    except ValueError as exc:
        raise SessionError(str(exc), kind="invalid_argument") from None
    ref: str | None
    if model_flag:
        ref, level = _split_level(model_flag)
        if provider and "/" not in ref:
            ref = f"{provider}/{ref}"
        source = flag_source
    elif provider:
        ref, level, source = (None if base_url else _provider_default(provider, models)), None, "--provider"
    elif env.get(MODEL_ENV):
        (ref, level), source = _split_level(env[MODEL_ENV]), f"${MODEL_ENV}"
    elif settings.model:
        ref, level, source = settings.model, None, settings.origin.get("model", "settings")
    else:
        ref, level, source = None, None, ""
    thinking = check_thinking_level(thinking_flag or level or settings.thinking_level or "off")
    server = base_url or settings.base_url
    if server:
        model = _on_server(ref, server, models)
        if provider and ref is None:
            model = replace(model, provider=provider)
        # a server of one's own needs no key; the SDKs insist on one, so a placeholder is sent
        key = models.api_key(model.provider) or (_PLACEHOLDER_KEY if model.provider in ENV_API_KEYS else None)
        return ModelChoice(model, key, f"{source or 'default'} on {server}", thinking)
    if ref is None:
        for name, model_id in _PROVIDER_DEFAULTS:
            key = models.api_key(name)
            found = models.get(name, model_id)
            if key and found is not None:
                return ModelChoice(found, key, f"the {name} key", thinking)
        raise _nothing_configured(default_settings_path(env))
    try:
        model = models.require(ref)
    except LookupError as exc:
        raise SessionError(f"{exc} (from {source})", kind="invalid_argument") from None
    key = models.api_key(model.provider)
    if not key and model.provider in ENV_API_KEYS and not _is_local(model.base_url):
        raise SessionError(
            f"No API key for provider {model.provider!r} (model from {source}): set {_key_hint(model.provider)}, "
            f"or put the key in pi's {default_auth_path()}; or pass --base-url URL to use a local "
            "OpenAI-compatible server instead.",
            kind="invalid_argument",
        )
    if not key and model.provider not in ENV_API_KEYS and model.base_url is None:
        base = DEFAULT_BASE_URLS.get(model.provider)
        if base is None:
            raise SessionError(
                f"Model {model.provider}/{model.id} has no base URL: pass --base-url URL",
                kind="invalid_argument",
            )
    return ModelChoice(model, key, source, thinking)
