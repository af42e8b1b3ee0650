"""Where an agent session's instructions come from (``agent.resources``, pi 1.6's rules): the system prompt
for the tools in use, the expansion of ``/skill:name`` and ``/template`` prompts, the commands a client may
list (pi's ``get_commands``) and what loading them had to say.

``load_prompt_resources`` is the one place that reads them; the agent session asks only this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..resources import Resources, load_resources
from ..resources.tool_prompts import tool_prompts
from ..types import AgentTool

__all__ = ["PromptResources", "ResourceOptions", "load_prompt_resources"]


@dataclass(frozen=True, slots=True)
class ResourceOptions:
    """The command line's say about resources: ``--system-prompt``, ``--append-system-prompt`` (repeatable;
    given, it replaces APPEND_SYSTEM.md), ``--no-context-files``, ``--approve`` / ``--no-approve`` (None:
    pi's trust rules decide, and in a run without a terminal nobody can be asked: untrusted)."""

    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    no_context_files: bool = False
    approve: bool | None = None


class PromptResources(Protocol):
    """What the agent session needs from the resources."""

    def system_prompt(self, active_tools: Sequence[AgentTool]) -> str: ...

    def expand(self, text: str) -> str: ...

    def commands(self) -> list[dict[str, Any]]: ...

    def diagnostics(self) -> list[str]: ...


class _Loaded:
    """``agent.resources.Resources`` with the prompt rebuilt for the tools active at each request."""

    def __init__(self, resources: Resources) -> None:
        self.resources = resources
        self._prompts: dict[tuple[str, ...], str] = {}

    def system_prompt(self, active_tools: Sequence[AgentTool]) -> str:
        names = tuple(t.name for t in active_tools)
        prompt = self._prompts.get(names)
        if prompt is None:
            prompt = replace(self.resources, tools=tool_prompts(list(active_tools))).system_prompt()
            self._prompts[names] = prompt
        return prompt

    def expand(self, text: str) -> str:
        return self.resources.expand(text)

    def commands(self) -> list[dict[str, Any]]:
        return [command.to_dict() for command in self.resources.commands()]

    def diagnostics(self) -> list[str]:
        return [str(d) for d in self.resources.diagnostics]


def load_prompt_resources(
    cwd: Path, options: ResourceOptions | None = None, tools: Sequence[AgentTool] | None = None
) -> PromptResources:
    """The resources of ``cwd`` (context files, SYSTEM.md / APPEND_SYSTEM.md, skills, templates, trust) as
    the options select them; ``tools`` are the active ones at start."""
    chosen = options or ResourceOptions()
    resources = load_resources(
        cwd,
        no_context_files=chosen.no_context_files,
        approve=chosen.approve is True,
        no_approve=chosen.approve is False,
        system_prompt=chosen.system_prompt,
        append_system_prompt=list(chosen.append_system_prompt) or None,
        tools=list(tools) if tools is not None else None,
    )
    return _Loaded(resources)
