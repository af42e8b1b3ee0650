"""Which model a chat talks to, with which key and thinking level: ``--model``, then ``$SESSIONTREE_MODEL``,
then sessiontree's settings file, then pi's own settings and keys; ``--base-url`` points the choice (or a
bare id) at a local OpenAI-compatible server.

Chooses only: it sends no request and writes no file. Everything it cannot settle is a ``SessionError`` of
kind ``invalid_argument`` whose message says exactly what to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...agent.retry import DEFAULT_RETRY_SETTINGS, RetrySettings
from ...compaction.settings import DEFAULT_COMPACTION_SETTINGS, CompactionSettings
from ...errors import SessionError
from ...llm.models import (
    DEFAULT_BASE_URLS,
    ENV_API_KEYS,
    ModelRegistry,
    default_auth_path,
    openai_compatible_model,
)
from ...llm.types import Model, ThinkingLevel

__all__ = [
    "MODEL_ENV",
    "SETTINGS_ENV",
    "THINKING_LEVELS",
    "ChatSettings",
    "ModelChoice",
    "choose_model",
    "default_settings_path",
    "load_settings",
    "pi_settings_path",
]

MODEL_ENV = "SESSIONTREE_MODEL"
SETTINGS_ENV = "SESSIONTREE_SETTINGS"
"""Path of sessiontree's settings file (default: ``settings.json`` in the user config directory)."""
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
LOCAL_MODEL_ID = "default"
"""The model name sent to a ``--base-url`` server when no model is named (single-model servers ignore it)."""
# The model used for a provider that has a key when nothing else names one (pi picks a default per provider).
_PROVIDER_DEFAULTS = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"))


def default_settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$SESSIONTREE_SETTINGS``, else ``settings.json`` in the platform's user config directory."""
    env = os.environ if environ is None else environ
    configured = env.get(SETTINGS_ENV)
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("sessiontree", appauthor=False)) / "settings.json"


def pi_settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """pi's settings: ``$PI_CODING_AGENT_DIR/settings.json`` (default ``~/.pi/agent/settings.json``)."""
    env = os.environ if environ is None else environ
    base = env.get("PI_CODING_AGENT_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".pi" / "agent") / "settings.json"


def _read_json(path: Path) -> dict[str, Any]:
    from sessiontree.format.pi_json import loads

    try:
        data = loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SessionError(f"{path}: {exc.strerror or exc}", kind="invalid_argument") from None
    except ValueError as exc:
        raise SessionError(f"{path}: not valid JSON ({exc})", kind="invalid_argument") from None
    if not isinstance(data, dict):
        raise SessionError(f"{path}: expected a JSON object", kind="invalid_argument")
    return data


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """What the settings files say: a model, a server, a thinking level, compaction settings; ``origin``
    names the file each value came from (for messages)."""

    model: str | None = None
    base_url: str | None = None
    thinking_level: str | None = None
    compaction: CompactionSettings = DEFAULT_COMPACTION_SETTINGS
    origin: dict[str, str] = field(default_factory=dict)
    retry: RetrySettings = DEFAULT_RETRY_SETTINGS


def _text(data: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SessionError(f"{path}: {key!r} must be a non-empty string", kind="invalid_argument")
    return value.strip()


def load_settings(path: Path | None = None, *, environ: Mapping[str, str] | None = None) -> ChatSettings:
    """sessiontree's settings file (``model``, ``baseUrl``, ``thinkingLevel``, ``compaction``, ``retry``), with
    pi's ``settings.json`` (``defaultProvider`` + ``defaultModel``, ``defaultThinkingLevel``, ``compaction``,
    ``retry``) filling what it leaves out. Missing files are empty; a damaged one raises naming the file."""
    own_path = path if path is not None else default_settings_path(environ)
    pi_path = pi_settings_path(environ)
    own, pi = _read_json(own_path), _read_json(pi_path)
    origin: dict[str, str] = {}
    model = _text(own, "model", own_path)
    if model is not None:
        origin["model"] = str(own_path)
    else:
        provider, model_id = _text(pi, "defaultProvider", pi_path), _text(pi, "defaultModel", pi_path)
        if model_id is not None:
            model = f"{provider}/{model_id}" if provider else model_id
            origin["model"] = str(pi_path)
    thinking = _text(own, "thinkingLevel", own_path) or _text(pi, "defaultThinkingLevel", pi_path)
    raw_compaction = own.get("compaction", pi.get("compaction"))
    compaction = DEFAULT_COMPACTION_SETTINGS
    if raw_compaction is not None:
        if not isinstance(raw_compaction, dict):
            raise SessionError(f"{own_path}: 'compaction' must be an object", kind="invalid_argument")
        try:
            compaction = CompactionSettings.from_dict(raw_compaction)
        except (TypeError, ValueError) as exc:
            raise SessionError(
                f"{own_path}: bad 'compaction' settings ({exc})", kind="invalid_argument"
            ) from None
    raw_retry = own.get("retry", pi.get("retry"))
    retry = DEFAULT_RETRY_SETTINGS
    if raw_retry is not None:
        where = own_path if "retry" in own else pi_path
        if not isinstance(raw_retry, dict):
            raise SessionError(f"{where}: 'retry' must be an object", kind="invalid_argument")
        try:
            retry = RetrySettings.from_dict(raw_retry)
        except SessionError as exc:
            raise SessionError(f"{where}: bad 'retry' settings ({exc})", kind="invalid_argument") from None
    return ChatSettings(model, _text(own, "baseUrl", own_path), thinking, compaction, origin, retry)


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


def _thinking(flag: str | None, settings: ChatSettings) -> ThinkingLevel:
    level = flag or settings.thinking_level or "off"
    if level not in THINKING_LEVELS:
        raise SessionError(
            f"Unknown thinking level {level!r}: use one of {', '.join(THINKING_LEVELS)}",
            kind="invalid_argument",
        )
    return level  # type: ignore[return-value]


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


def choose_model(
    model_flag: str | None = None,
    base_url: str | None = None,
    thinking_flag: str | None = None,
    *,
    settings: ChatSettings | None = None,
    registry: ModelRegistry | None = None,
    environ: Mapping[str, str] | None = None,
    source: str = "--model",
) -> ModelChoice:
    """The chat's model: ``model_flag``, ``$SESSIONTREE_MODEL``, the settings files (in that order), else the
    default model of the first provider that has a key; ``base_url`` sends it to that server instead.
    ``source`` names where ``model_flag`` came from in messages (``/model`` in the chat)."""
    env = os.environ if environ is None else environ
    settings = settings if settings is not None else load_settings(environ=env)
    try:
        models = registry if registry is not None else ModelRegistry.load(environ=env)
    except ValueError as exc:
        raise SessionError(str(exc), kind="invalid_argument") from None
    thinking = _thinking(thinking_flag, settings)
    if model_flag:
        ref = model_flag
    elif env.get(MODEL_ENV):
        ref, source = env[MODEL_ENV], f"${MODEL_ENV}"
    elif settings.model:
        ref, source = settings.model, settings.origin.get("model", "settings")
    else:
        ref, source = None, ""
    server = base_url or settings.base_url
    if server:
        model = _on_server(ref, server, models)
        # a server of one's own needs no key; the SDKs insist on one, so a placeholder is sent
        key = models.api_key(model.provider) or ("not-needed" if model.provider in ENV_API_KEYS else None)
        return ModelChoice(model, key, f"{source or 'default'} on {server}", thinking)
    if ref is None:
        for provider, model_id in _PROVIDER_DEFAULTS:
            key = models.api_key(provider)
            found = models.get(provider, model_id)
            if key and found is not None:
                return ModelChoice(found, key, f"the {provider} key", thinking)
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
