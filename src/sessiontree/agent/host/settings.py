"""What the settings files say an agent session should use: sessiontree's own file (``$SESSIONTREE_SETTINGS``)
with pi's ``settings.json`` (in ``$PI_CODING_AGENT_DIR``, default ``~/.pi/agent``) filling what it leaves out.

Reads only; a missing file is empty, a damaged one is a ``SessionError`` naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ...compaction.settings import DEFAULT_COMPACTION_SETTINGS, CompactionSettings
from ...errors import SessionError
from ..retry import DEFAULT_RETRY_SETTINGS, RetrySettings

T = TypeVar("T")

__all__ = [
    "SETTINGS_ENV",
    "AgentSettings",
    "agent_dir",
    "default_settings_path",
    "load_settings",
    "pi_settings_path",
]

SETTINGS_ENV = "SESSIONTREE_SETTINGS"
"""Path of sessiontree's settings file (default: ``settings.json`` in the user config directory)."""


def agent_dir(environ: Mapping[str, str] | None = None) -> Path:
    """pi's agent directory: ``$PI_CODING_AGENT_DIR`` (``~`` expanded), else ``~/.pi/agent``."""
    env = os.environ if environ is None else environ
    base = env.get("PI_CODING_AGENT_DIR")
    return Path(base).expanduser() if base else Path.home() / ".pi" / "agent"


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
    return agent_dir(environ) / "settings.json"


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
class AgentSettings:
    """What the settings files say: a model, a server, a thinking level, compaction and retry settings;
    ``origin`` names the file each value came from (for messages)."""

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


def _section(
    key: str, parse: Callable[[dict[str, Any]], T], default: T, own: dict[str, Any], pi: dict[str, Any],
    own_path: Path, pi_path: Path,
) -> T:  # fmt: skip
    """The ``key`` object of our settings file, else of pi's, parsed; ``default`` when neither has one."""
    where = own_path if key in own else pi_path
    raw = own.get(key, pi.get(key))
    if raw is None:
        return default
    if not isinstance(raw, dict):
        raise SessionError(f"{where}: {key!r} must be an object", kind="invalid_argument")
    try:
        return parse(raw)
    except (TypeError, ValueError, SessionError) as exc:
        raise SessionError(f"{where}: bad {key!r} settings ({exc})", kind="invalid_argument") from None


def _compaction(own: dict[str, Any], pi: dict[str, Any], own_path: Path, pi_path: Path) -> CompactionSettings:
    return _section(
        "compaction", CompactionSettings.from_dict, DEFAULT_COMPACTION_SETTINGS, own, pi, own_path, pi_path
    )


def _retry(own: dict[str, Any], pi: dict[str, Any], own_path: Path, pi_path: Path) -> RetrySettings:
    return _section("retry", RetrySettings.from_dict, DEFAULT_RETRY_SETTINGS, own, pi, own_path, pi_path)


def load_settings(path: Path | None = None, *, environ: Mapping[str, str] | None = None) -> AgentSettings:
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
    return AgentSettings(
        model,
        _text(own, "baseUrl", own_path),
        thinking,
        _compaction(own, pi, own_path, pi_path),
        origin,
        _retry(own, pi, own_path, pi_path),
    )
