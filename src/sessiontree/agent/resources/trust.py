"""pi's project-trust rule for non-interactive runs (print, json, rpc).

A project needs trust when ``<cwd>/.pi/`` holds any of ``settings.json mcp.json extensions skills prompts
themes SYSTEM.md APPEND_SYSTEM.md``, or when a ``.agents/skills`` folder exists in ``cwd`` or any ancestor
(``~/.agents/skills`` excepted). The decision, in order:

1. ``approve`` (pi's ``--approve``/``-a``) trusts, ``no_approve`` (``--no-approve``/``-na``) does not;
2. a project that needs no trust is trusted unless ``<agent dir>/trust.json`` says ``false`` for it;
3. the nearest entry for ``cwd`` or an ancestor in ``<agent dir>/trust.json`` (keys are real paths);
4. ``defaultProjectTrust`` in ``<agent dir>/settings.json``: ``always`` trusts, ``never`` does not, and
   ``ask`` (the default) does not either: there is no one to ask outside the interactive chat.

An untrusted project loses ``.pi/SYSTEM.md``, ``.pi/APPEND_SYSTEM.md``, ``.pi/skills``, ``.pi/prompts`` and
the ancestor ``.agents/skills`` folders; context files stay.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ...errors import ResourceError
from ._text import read_resource, strip_bom
from .types import Diagnostic, TrustDecision

__all__ = ["TRUST_REQUIRING_ENTRIES", "decide_trust", "needs_trust", "read_trust_file", "stored_decision"]

TRUST_REQUIRING_ENTRIES = (
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
)


def needs_trust(cwd: str, home: str) -> bool:
    """Whether ``cwd`` holds project resources that only a trusted project may use."""
    folder = os.path.realpath(cwd)
    user_skills = os.path.join(os.path.realpath(home), ".agents", "skills")
    config = os.path.join(folder, ".pi")
    if any(os.path.exists(os.path.join(config, entry)) for entry in TRUST_REQUIRING_ENTRIES):
        return True
    while True:
        skills = os.path.join(folder, ".agents", "skills")
        if skills != user_skills and os.path.exists(skills):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def read_trust_file(agent_dir: str) -> dict[str, bool | None]:
    """``<agent dir>/trust.json`` (``{}`` when absent); a damaged file raises ResourceError naming it."""
    path = os.path.join(agent_dir, "trust.json")
    if not os.path.exists(path):
        return {}
    text = read_resource(path)
    try:
        data: Any = json.loads(strip_bom(text))
    except json.JSONDecodeError as exc:
        raise ResourceError(
            f"{path}:{exc.lineno}: the trust store is not valid JSON ({exc.msg})", path=path, line=exc.lineno
        ) from exc
    if not isinstance(data, dict):
        raise ResourceError(f"{path}: the trust store must be a JSON object", path=path)
    for key, value in data.items():
        if value is not None and not isinstance(value, bool):
            raise ResourceError(f"{path}: the value for {key!r} must be true, false or null", path=path)
    return data


def stored_decision(store: dict[str, bool | None], cwd: str) -> tuple[bool, str] | None:
    """The nearest ``(decision, folder)`` for ``cwd`` or an ancestor (null entries are no decision)."""
    folder = os.path.realpath(cwd)
    while True:
        value = store.get(folder)
        if isinstance(value, bool):
            return value, folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _default_trust(agent_dir: str, diagnostics: list[Diagnostic]) -> str:
    path = os.path.join(agent_dir, "settings.json")
    if not os.path.exists(path):
        return "ask"
    try:
        settings = json.loads(strip_bom(read_resource(path)))
    except (ResourceError, json.JSONDecodeError) as exc:
        diagnostics.append(Diagnostic("warning", f"settings ignored: {exc}", path))
        return "ask"
    value = settings.get("defaultProjectTrust") if isinstance(settings, dict) else None
    return value if value in ("always", "never") else "ask"


def decide_trust(
    cwd: str, agent_dir: str, home: str, *, approve: bool = False, no_approve: bool = False
) -> tuple[TrustDecision, list[Diagnostic]]:
    """Whether the project at ``cwd`` is trusted, and why (``skipped`` is filled in by the loader)."""
    if approve and no_approve:
        raise ResourceError("approve and no_approve contradict each other", kind="invalid_argument")
    required = needs_trust(cwd, home)
    diagnostics: list[Diagnostic] = []
    if approve or no_approve:
        return TrustDecision(approve, "approve" if approve else "no_approve", required), diagnostics
    stored = stored_decision(read_trust_file(agent_dir), cwd)
    if stored is not None:
        return TrustDecision(stored[0], "trust_file", required, stored[1]), diagnostics
    if not required:
        return TrustDecision(True, "nothing_to_trust", required), diagnostics
    default = _default_trust(agent_dir, diagnostics)
    if default == "always":
        return TrustDecision(True, "default_always", required), diagnostics
    if default == "never":
        return TrustDecision(False, "default_never", required), diagnostics
    return TrustDecision(False, "not_interactive", required), diagnostics
