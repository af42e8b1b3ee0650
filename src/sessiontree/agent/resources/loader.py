"""``load_resources``: everything that shapes the system prompt and the user's slash commands, found once for
a working directory, and ``Resources`` to build the prompt, expand input and list commands from it.

Finding is done by the sibling modules (context files, trust, discovery, skills, templates, prompt texts);
this module only orders the places to look, as pi 1.6 does, and records what was skipped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..types import AgentTool
from ._text import DEFAULT_MAX_FILE_BYTES
from .candidates import expand_tilde, skill_candidates, template_candidates
from .context_files import load_context_files
from .discovery import agents_skill_dirs
from .prompt_text import prompt_texts
from .skills import expand_skill_command, load_skills
from .system_prompt import ToolPrompt, build_sections, render
from .templates import expand_template, load_templates
from .tool_prompts import tool_prompts
from .trust import decide_trust
from .types import (
    Command,
    ContextFile,
    Diagnostic,
    PromptTemplate,
    Section,
    Skill,
    TrustDecision,
)

__all__ = ["AGENT_DIR_ENV", "Resources", "default_agent_dir", "load_resources"]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def default_agent_dir(home: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``$PI_CODING_AGENT_DIR`` (a leading ``~`` expanded), else ``~/.pi/agent``; absolute."""
    home = home or os.path.expanduser("~")
    value = (os.environ if env is None else env).get(AGENT_DIR_ENV)
    return os.path.abspath(expand_tilde(value, home) if value else os.path.join(home, ".pi", "agent"))


@dataclass
class Resources:
    """What ``load_resources`` found. ``diagnostics`` gathers every warning, collision and error (each names
    its file); ``trust`` says whether the project's ``.pi/`` resources were used and what was skipped."""

    cwd: str
    agent_dir: str
    trust: TrustDecision
    tools: list[ToolPrompt]
    context_files: list[ContextFile]
    skills: list[Skill]
    templates: list[PromptTemplate]
    custom_prompt: str | None
    custom_prompt_source: str | None
    append_prompts: list[str]
    append_sources: list[str]
    diagnostics: list[Diagnostic]
    docs: str | None = None
    guidelines: tuple[str, ...] = ()
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    extra_sections: dict[str, str] = field(default_factory=dict)

    @property
    def warnings(self) -> list[Diagnostic]:
        """The diagnostics that are warnings (files skipped or suspicious, trust skips)."""
        return [d for d in self.diagnostics if d.kind == "warning"]

    def to_dict(self) -> dict[str, Any]:
        """What was loaded, as JSON (camelCase keys): for a listing or a state dump."""
        return {
            "cwd": self.cwd,
            "agentDir": self.agent_dir,
            "trust": self.trust.to_dict(),
            "tools": [t.name for t in self.tools],
            "contextFiles": [f.to_dict() for f in self.context_files],
            "systemPromptSource": self.custom_prompt_source,
            "appendSystemPromptSources": list(self.append_sources),
            "skills": [s.to_dict() for s in self.skills],
            "promptTemplates": [t.to_dict() for t in self.templates],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }

    def sections(self) -> list[Section]:
        """The system prompt's sections in pi's order."""
        return build_sections(
            cwd=self.cwd,
            tools=self.tools,
            custom_prompt=self.custom_prompt,
            append_text="\n\n".join(self.append_prompts),
            context_files=self.context_files,
            skills=self.skills,
            docs=self.docs,
            guidelines=self.guidelines,
            extra_sections=self.extra_sections,
        )

    def system_prompt(self) -> str:
        """The system prompt text."""
        return render(self.sections())

    def expand(self, text: str) -> str:
        """A user's input with ``/skill:name args`` and then ``/template args`` expanded (other text is
        returned unchanged). A skill file that can no longer be read is added to ``diagnostics``."""
        expanded, problem = expand_skill_command(text, self.skills, self.max_file_bytes)
        if problem is not None:
            self.diagnostics.append(problem)
        return expand_template(expanded, self.templates)

    def commands(self) -> list[Command]:
        """pi's ``get_commands`` entries for the templates, then every skill as ``skill:{name}`` (hidden ones
        included); extension commands are the caller's to put first."""
        out = [Command(t.name, t.description, "prompt", t.source_info) for t in self.templates]
        out += [Command(f"skill:{s.name}", s.description, "skill", s.source_info) for s in self.skills]
        return out


def load_resources(
    cwd: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str] | None = None,
    *,
    no_context_files: bool = False,
    approve: bool = False,
    no_approve: bool = False,
    system_prompt: str | None = None,
    append_system_prompt: str | Sequence[str] | None = None,
    tools: Sequence[AgentTool | str] | None = None,
    skill_paths: Sequence[str] = (),
    prompt_paths: Sequence[str] = (),
    no_skills: bool = False,
    no_prompt_templates: bool = False,
    docs: str | None = None,
    guidelines: Sequence[str] = (),
    extra_sections: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Resources:
    """Everything pi 1.6 would load for a non-interactive run in ``cwd`` (see the package docstring for
    the files, their precedence and the flags). Problems with single files become ``diagnostics``; only a
    damaged ``trust.json`` or contradicting flags raise ``ResourceError``."""
    home_dir = os.path.abspath(os.fspath(home) if home is not None else os.path.expanduser("~"))
    where = os.path.abspath(os.fspath(cwd))
    agent = os.path.abspath(os.fspath(agent_dir)) if agent_dir is not None else default_agent_dir(home_dir)
    trust, diagnostics = decide_trust(where, agent, home_dir, approve=approve, no_approve=no_approve)
    project = os.path.join(where, ".pi")  # the trust-gated folder

    contexts: list[ContextFile] = []
    if not no_context_files:
        contexts, found = load_context_files(where, agent, max_bytes=max_file_bytes)
        diagnostics += found

    appends = [append_system_prompt] if isinstance(append_system_prompt, str) else append_system_prompt
    texts = prompt_texts(
        where,
        agent,
        trusted=trust.trusted,
        system_prompt=system_prompt,
        append_system_prompt=appends,
        diagnostics=diagnostics,
        max_bytes=max_file_bytes,
    )

    agents_dirs = agents_skill_dirs(where, home_dir)
    skill_paths_found = skill_candidates(
        where,
        agent,
        home_dir,
        trusted=trust.trusted,
        auto=not no_skills,
        explicit=skill_paths,
        diagnostics=diagnostics,
    )
    skills, found = load_skills(skill_paths_found, max_file_bytes)
    diagnostics += found

    template_paths_found = template_candidates(
        where,
        agent,
        home_dir,
        trusted=trust.trusted,
        auto=not no_prompt_templates,
        explicit=prompt_paths,
        diagnostics=diagnostics,
    )
    templates, found = load_templates(template_paths_found, max_file_bytes)
    diagnostics += found

    if not trust.trusted:
        gated = [os.path.join(project, n) for n in ("SYSTEM.md", "APPEND_SYSTEM.md", "skills", "prompts")]
        skipped = tuple(p for p in [*gated, *agents_dirs] if os.path.exists(p))
        if skipped:
            trust = TrustDecision(trust.trusted, trust.reason, trust.needs_trust, trust.source, skipped)
            diagnostics.append(
                Diagnostic(
                    "warning",
                    f"project not trusted ({trust.reason}); skipped {', '.join(skipped)} (approve to use them)",
                    project,
                )
            )

    return Resources(
        cwd=where,
        agent_dir=agent,
        trust=trust,
        tools=tool_prompts(tools),
        context_files=contexts,
        skills=skills,
        templates=templates,
        custom_prompt=texts.custom,
        custom_prompt_source=texts.custom_source,
        append_prompts=list(texts.append),
        append_sources=list(texts.append_sources),
        diagnostics=diagnostics,
        docs=docs,
        guidelines=tuple(guidelines),
        max_file_bytes=max_file_bytes,
        extra_sections=dict(extra_sections or {}),
    )
