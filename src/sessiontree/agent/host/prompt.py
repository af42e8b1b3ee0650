"""Where an agent session's instructions come from: the system prompt for the tools in use, the expansion of
``/skill:name`` and ``/template`` prompts, and the commands a client may list (pi's ``get_commands``).

``load_prompt_resources`` is the one place that reads them; the agent session asks only this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..types import AgentTool

__all__ = ["PromptResources", "ResourceOptions", "load_prompt_resources"]


@dataclass(frozen=True, slots=True)
class ResourceOptions:
    """The command line's say about resources: ``--system-prompt``, ``--append-system-prompt`` (repeatable),
    ``--no-context-files``, ``--approve`` / ``--no-approve`` (None: pi's trust rules decide)."""

    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    no_context_files: bool = False
    approve: bool | None = None
    interactive: bool = False


class PromptResources(Protocol):
    """What the agent session needs from the resources."""

    def system_prompt(self, active_tools: Sequence[AgentTool]) -> str: ...

    def expand(self, text: str) -> str: ...

    def commands(self) -> list[dict[str, Any]]: ...


@dataclass(slots=True)
class _Builtin:
    """A fixed prompt for the working directory, and no skills or templates."""

    cwd: Path
    options: ResourceOptions = field(default_factory=ResourceOptions)

    def system_prompt(self, active_tools: Sequence[AgentTool]) -> str:
        custom = _text_or_file(self.options.system_prompt)
        prompt = custom or (
            "You are an expert coding assistant. You help with software work in the directory "
            f"{self.cwd}: read files, search, run commands, edit and write files with the tools you have. "
            "Keep answers short and concrete, and show file paths clearly."
        )
        extra = "\n\n".join(_text_or_file(t) for t in self.options.append_system_prompt)
        return f"{prompt}\n\n{extra}" if extra else prompt

    def expand(self, text: str) -> str:
        return text

    def commands(self) -> list[dict[str, Any]]:
        return []


def _text_or_file(value: str | None) -> str:
    """pi's rule for ``--system-prompt X``: an existing file's content, else ``X`` itself."""
    if not value:
        return ""
    path = Path(value).expanduser()
    try:
        if path.is_file():
            return path.read_text("utf-8").removeprefix("\ufeff")
    except OSError:
        pass
    return value


def load_prompt_resources(cwd: Path, options: ResourceOptions | None = None) -> PromptResources:
    """The resources of ``cwd`` as the options select them."""
    return _Builtin(cwd, options or ResourceOptions())
