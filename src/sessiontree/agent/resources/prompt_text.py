"""The custom system prompt and the addendum, with pi's precedence.

Custom prompt: ``system_prompt`` (pi's ``--system-prompt``: the content of the file when the value names an
existing path, relative to the working directory, otherwise the value itself); without it
``<cwd>/.pi/SYSTEM.md`` when the project is trusted, else ``<agent dir>/SYSTEM.md``. An empty custom prompt
means the default one.

Addendum: ``append_system_prompt`` texts or paths (pi's repeatable ``--append-system-prompt``; given, even
empty, they replace discovery); without them ``<cwd>/.pi/APPEND_SYSTEM.md`` when trusted, else
``<agent dir>/APPEND_SYSTEM.md`` (one file only). The texts are joined by a blank line.

Files are BOM-stripped, not trimmed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ResourceError
from ._text import DEFAULT_MAX_FILE_BYTES, read_resource, reason, strip_bom
from .types import Diagnostic

__all__ = ["PromptTexts", "prompt_texts", "resolve_prompt_input"]


@dataclass(frozen=True, slots=True)
class PromptTexts:
    """The custom prompt (None: the default one) and the addendum texts, with the files they came from."""

    custom: str | None
    custom_source: str | None
    append: tuple[str, ...]
    append_sources: tuple[str, ...]


def _exists(path: str) -> bool:
    try:
        return os.path.exists(path)
    except (ValueError, OSError):  # text that cannot be a path (a NUL, too long)
        return False


def resolve_prompt_input(
    value: str, cwd: str, diagnostics: list[Diagnostic], max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[str | None, str | None]:
    """``(text, source file)`` for a TEXT-or-FILE value; an existing path that cannot be read is reported
    and the value is used as text (as pi does). An empty value gives ``(None, None)``."""
    if not value:
        return None, None
    path = os.path.join(cwd, value)  # no ~ expansion, as in pi (a shell has done it)
    if not _exists(path):
        return value, None
    try:
        return strip_bom(read_resource(path, max_bytes)), os.path.abspath(path)
    except ResourceError as exc:
        diagnostics.append(Diagnostic("warning", f"{reason(exc)}; the value is used as text", exc.path))
        return value, None


def _discovered(
    name: str, cwd: str, agent_dir: str, trusted: bool, diagnostics: list[Diagnostic], max_bytes: int
) -> tuple[str, str] | None:
    """``(text, path)`` of the project's (when trusted) or the agent directory's file called ``name``."""
    project = os.path.join(cwd, ".pi", name)
    path = project if trusted and os.path.exists(project) else os.path.join(agent_dir, name)
    if not os.path.exists(path):
        return None
    try:
        return strip_bom(read_resource(path, max_bytes)), path
    except ResourceError as exc:
        diagnostics.append(Diagnostic("warning", f"{reason(exc)}; not used", path))
        return None


def prompt_texts(
    cwd: str,
    agent_dir: str,
    *,
    trusted: bool,
    system_prompt: str | None,
    append_system_prompt: Sequence[str] | None,
    diagnostics: list[Diagnostic],
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> PromptTexts:
    """The custom prompt and addendum for ``cwd`` (see the module docstring)."""
    custom: str | None
    custom_source: str | None
    if system_prompt is not None:
        custom, custom_source = resolve_prompt_input(system_prompt, cwd, diagnostics, max_bytes)
    else:
        found = _discovered("SYSTEM.md", cwd, agent_dir, trusted, diagnostics, max_bytes)
        custom, custom_source = found if found is not None else (None, None)
    append: list[str] = []
    sources: list[str] = []
    if append_system_prompt is None:
        found = _discovered("APPEND_SYSTEM.md", cwd, agent_dir, trusted, diagnostics, max_bytes)
        if found is not None:
            append.append(found[0])
            sources.append(found[1])
    else:
        for value in append_system_prompt:
            text, source = resolve_prompt_input(value, cwd, diagnostics, max_bytes)
            if text is not None:
                append.append(text)
            if source is not None:
                sources.append(source)
    return PromptTexts(custom or None, custom_source, tuple(append), tuple(sources))
