"""Where skills and prompt templates are looked for, in pi 1.6's precedence, as ``(file, SourceInfo)``
candidates for the loaders (first name wins there; a file reached twice through symlinks is kept once here).

Skills: ``<cwd>/.pi/skills`` and ``D/.agents/skills`` from ``cwd`` up to the git root (trusted projects
only), ``<agent dir>/skills``, ``~/.agents/skills``, then explicit paths. Templates: ``<cwd>/.pi/prompts``
(trusted only), ``<agent dir>/prompts``, then explicit paths. Found files are ``source="auto"`` with the
folder they were found from as ``baseDir`` (``<cwd>/.pi``, the agent dir, the ``.agents`` folder); explicit
ones are ``source="local"``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from .discovery import agents_skill_dirs, prompt_files, skill_files
from .types import Diagnostic, Scope, SourceInfo

__all__ = ["expand_tilde", "skill_candidates", "template_candidates"]

Candidates = list[tuple[str, SourceInfo]]


def expand_tilde(path: str, home: str) -> str:
    """A leading ``~`` or ``~/`` as ``home``."""
    if path == "~":
        return home
    return os.path.join(home, path[2:]) if path.startswith("~/") else path


def _resolve(raw: str, cwd: str, home: str) -> str:
    return os.path.abspath(os.path.join(cwd, expand_tilde(raw.strip(), home)))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _auto(files: Iterable[str], scope: Scope, base_dir: str) -> Candidates:
    return [(f, SourceInfo(f, "auto", scope, base_dir=base_dir)) for f in files]


def _explicit_scope(path: str, user_dir: str, project_dir: str) -> Scope:
    return "user" if _within(path, user_dir) else "project" if _within(path, project_dir) else "temporary"


def _unique(candidates: Candidates) -> Candidates:
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
) -> Candidates:
    out: Candidates = []
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
) -> Candidates:
    out: Candidates = []
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


def skill_candidates(
    cwd: str,
    agent_dir: str,
    home: str,
    *,
    trusted: bool,
    auto: bool,
    explicit: Sequence[str],
    diagnostics: list[Diagnostic],
) -> Candidates:
    """The skill files to load, in precedence order (``auto=False``: only the explicit paths)."""
    out: Candidates = []
    if auto:
        project = os.path.join(cwd, ".pi")
        if trusted:
            out += _auto(skill_files(os.path.join(project, "skills"), "pi", diagnostics), "project", project)
            for folder in agents_skill_dirs(cwd, home):
                out += _auto(skill_files(folder, "agents", diagnostics), "project", os.path.dirname(folder))
        out += _auto(skill_files(os.path.join(agent_dir, "skills"), "pi", diagnostics), "user", agent_dir)
        user_agents = os.path.join(home, ".agents")
        out += _auto(
            skill_files(os.path.join(user_agents, "skills"), "agents", diagnostics), "user", user_agents
        )
    return _unique(out + _skill_candidates(explicit, cwd, agent_dir, home, diagnostics))


def template_candidates(
    cwd: str,
    agent_dir: str,
    home: str,
    *,
    trusted: bool,
    auto: bool,
    explicit: Sequence[str],
    diagnostics: list[Diagnostic],
) -> Candidates:
    """The template files to load, in precedence order (``auto=False``: only the explicit paths)."""
    out: Candidates = []
    if auto:
        project = os.path.join(cwd, ".pi")
        if trusted:
            out += _auto(prompt_files(os.path.join(project, "prompts"), diagnostics), "project", project)
        out += _auto(prompt_files(os.path.join(agent_dir, "prompts"), diagnostics), "user", agent_dir)
    return _unique(out + _template_candidates(explicit, cwd, agent_dir, home, diagnostics))
