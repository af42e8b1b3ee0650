"""``load_resources``: everything that shapes the system prompt and the user's slash commands, found once for
a working directory, and ``Resources`` to build the prompt, expand input and list commands from it.

Finding is done by the sibling modules (context files, trust, discovery, skills, templates, prompt texts);
this module only orders the places to look, as pi 1.6 does, and records what was skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..types import AgentTool
from ._text import DEFAULT_MAX_FILE_BYTES
from .context_files import load_context_files
from .discovery import agents_skill_dirs, prompt_files, skill_files
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
    Scope,
    Section,
    Skill,
    SourceInfo,
    TrustDecision,
)

__all__ = ["AGENT_DIR_ENV", "Resources", "default_agent_dir", "load_resources"]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def _expand_tilde(path: str, home: str) -> str:
    if path == "~":
        return home
    return os.path.join(home, path[2:]) if path.startswith("~/") else path


def default_agent_dir(home: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``$PI_CODING_AGENT_DIR`` (a leading ``~`` expanded), else ``~/.pi/agent``; absolute."""
    home = home or os.path.expanduser("~")
    value = (os.environ if env is None else env).get(AGENT_DIR_ENV)
    return os.path.abspath(_expand_tilde(value, home) if value else os.path.join(home, ".pi", "agent"))


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


def _resolve(raw: str, cwd: str, home: str) -> str:
    return os.path.abspath(os.path.join(cwd, _expand_tilde(raw.strip(), home)))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _auto(files: Iterable[str], scope: Scope, base_dir: str) -> list[tuple[str, SourceInfo]]:
    return [(f, SourceInfo(f, "auto", scope, base_dir=base_dir)) for f in files]


def _explicit_scope(path: str, user_dir: str, project_dir: str) -> Scope:
    return "user" if _within(path, user_dir) else "project" if _within(path, project_dir) else "temporary"


def _unique(candidates: list[tuple[str, SourceInfo]]) -> list[tuple[str, SourceInfo]]:
    seen: set[str] = set()
    out = []
    for path, info in candidates:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append((path, info))
    return out


def _skill_candidates(
    paths: Sequence[str], cwd: str, agent_dir: str, home: str, diagnostics: list[Diagnostic]
) -> list[tuple[str, SourceInfo]]:
    out: list[tuple[str, SourceInfo]] = []
    user_dir, project_dir = os.path.join(agent_dir, "skills"), os.path.join(cwd, ".pi", "skills")
    for raw in paths:
        path = _resolve(raw, cwd, home)
        if os.path.isdir(path):
            files = skill_files(path, "pi", diagnostics)
        elif os.path.isfile(path) and path.endswith(".md"):
            files = [path]
        else:
            problem = "is not a markdown file" if os.path.exists(path) else "does not exist"
            diagnostics.append(Diagnostic("warning", f"skill path {problem}", path))
            continue
        scope = _explicit_scope(path, user_dir, project_dir)
        out += [(f, SourceInfo(f, "local", scope, base_dir=os.path.dirname(f))) for f in files]
    return out


def _template_candidates(
    paths: Sequence[str], cwd: str, agent_dir: str, home: str, diagnostics: list[Diagnostic]
) -> list[tuple[str, SourceInfo]]:
    out: list[tuple[str, SourceInfo]] = []
    user_dir, project_dir = os.path.join(agent_dir, "prompts"), os.path.join(cwd, ".pi", "prompts")
    for raw in paths:
        path = _resolve(raw, cwd, home)
        if os.path.isdir(path):
            files = prompt_files(path, diagnostics, auto=False)
        elif os.path.isfile(path) and path.endswith(".md"):
            files = [path]
        else:
            if not os.path.exists(path):
                diagnostics.append(Diagnostic("error", "prompt template path does not exist", path))
            continue
        for f in files:
            scope = _explicit_scope(f, user_dir, project_dir)
            base = {"user": user_dir, "project": project_dir}.get(scope, os.path.dirname(f))
            out.append((f, SourceInfo(f, "local", scope, base_dir=base)))
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
    project = os.path.join(where, ".pi")

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

    skill_candidates: list[tuple[str, SourceInfo]] = []
    agents_dirs = agents_skill_dirs(where, home_dir)
    if not no_skills:
        if trust.trusted:
            skill_candidates += _auto(
                skill_files(os.path.join(project, "skills"), "pi", diagnostics), "project", project
            )
            for folder in agents_dirs:
                found_files = skill_files(folder, "agents", diagnostics)
                skill_candidates += _auto(found_files, "project", os.path.dirname(folder))
        skill_candidates += _auto(
            skill_files(os.path.join(agent, "skills"), "pi", diagnostics), "user", agent
        )
        user_agents = os.path.join(home_dir, ".agents")
        skill_candidates += _auto(
            skill_files(os.path.join(user_agents, "skills"), "agents", diagnostics), "user", user_agents
        )
    skill_candidates += _skill_candidates(skill_paths, where, agent, home_dir, diagnostics)
    skills, found = load_skills(_unique(skill_candidates), max_file_bytes)
    diagnostics += found

    template_candidates: list[tuple[str, SourceInfo]] = []
    if not no_prompt_templates:
        if trust.trusted:
            template_candidates += _auto(
                prompt_files(os.path.join(project, "prompts"), diagnostics), "project", project
            )
        template_candidates += _auto(prompt_files(os.path.join(agent, "prompts"), diagnostics), "user", agent)
    template_candidates += _template_candidates(prompt_paths, where, agent, home_dir, diagnostics)
    templates, found = load_templates(_unique(template_candidates), max_file_bytes)
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
