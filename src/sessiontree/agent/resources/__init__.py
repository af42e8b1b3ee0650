"""Prompt resources as pi 1.6 finds them: context files, SYSTEM.md / APPEND_SYSTEM.md, skills, prompt
templates and the project-trust rule, and the system prompt built from them in pi's section order.

Entry point::

    from sessiontree.agent.resources import load_resources

    res = load_resources(cwd, approve=args.approve, system_prompt=args.system_prompt,
                         append_system_prompt=args.append_system_prompt, tools=active_tools)
    prompt = res.system_prompt()          # the text; res.sections() gives the typed sections
    text = res.expand(user_input)         # /skill:name args, then /template args
    listing = [c.to_dict() for c in res.commands()]   # pi's get_commands entries (templates, skills)
    for d in res.diagnostics: log(str(d)) # "path[:line]: message", never an exception
    state = res.to_dict()                 # what was loaded (context files, skills, templates, trust, ...)

``load_resources(cwd, agent_dir=None, *, ...)`` reads (``agent_dir`` defaults to ``$PI_CODING_AGENT_DIR``,
``~`` expanded, else ``~/.pi/agent``; ``~`` is ``home``, default ``$HOME``):

* context files: the first of ``AGENTS.override.md``, ``AGENTS.md``, ``AGENTS.MD``, ``CLAUDE.md``,
  ``CLAUDE.MD`` in the agent dir, then in every folder from ``/`` down to ``cwd`` (outermost first).
  ``no_context_files=True`` (pi's ``-nc``) leaves them out. Not trust-gated.
* custom prompt, replacing the default preamble, tool list, rules and docs: ``system_prompt`` (TEXT, or the
  content of a FILE when it names one, relative to ``cwd``), else ``<cwd>/.pi/SYSTEM.md`` if the project is
  trusted, else ``<agent dir>/SYSTEM.md``.
* addendum: ``append_system_prompt`` (a TEXT-or-FILE or a list of them; given, even empty, it replaces
  discovery), else ``<cwd>/.pi/APPEND_SYSTEM.md`` if trusted, else ``<agent dir>/APPEND_SYSTEM.md``.
* skills, first name wins: ``<cwd>/.pi/skills`` and ``D/.agents/skills`` for D from ``cwd`` up to the git
  root (both trust-gated), ``<agent dir>/skills``, ``~/.agents/skills``, then ``skill_paths`` (pi's
  ``--skill``). ``no_skills`` keeps only ``skill_paths``.
* prompt templates, first name wins: ``<cwd>/.pi/prompts`` (trust-gated), ``<agent dir>/prompts``, then
  ``prompt_paths`` (pi's ``--prompt-template``). ``no_prompt_templates`` keeps only ``prompt_paths``.
* trust: ``approve`` / ``no_approve`` (pi's ``-a`` / ``-na``), else ``<agent dir>/trust.json``, else
  ``defaultProjectTrust`` in ``<agent dir>/settings.json``; ``ask`` (the default) means untrusted, as in
  pi's print/json/rpc modes. ``Resources.trust`` says what was decided and why and lists what was skipped;
  a warning in ``diagnostics`` names the skipped files.

``tools`` are the selected tools in order (``AgentTool`` objects, whose ``prompt_snippet`` and
``prompt_guidelines`` fill the tool list and rules, or names of sessiontree's coding tools); default
``read, bash, edit, write``. ``docs`` is the optional text of a ``<docs>`` section, ``guidelines`` extra rule
bullets, ``extra_sections`` extra ``<name>`` sections after ``<cwd>``. Files over ``max_file_bytes``
(4 MiB) are skipped with a warning (pi has no limit).

Not read (pi reads them, sessiontree does not): settings' ``skills``/``prompts`` lists, packages,
extensions, themes, ``mcp.json``. The structure of every section and expansion is checked against pi
1.6.0 itself (``tests/pi_outline``); the fixed sentences are sessiontree's own.
"""

from __future__ import annotations

from .context_files import CONTEXT_FILE_NAMES, load_context_files
from .frontmatter import parse_frontmatter
from .loader import AGENT_DIR_ENV, Resources, default_agent_dir, load_resources
from .skills import expand_skill_command, load_skills, references_line, skills_section
from .system_prompt import (
    DEFAULT_TOOL_NAMES,
    PREAMBLE,
    PROJECT_CONTEXT_HEADING,
    ToolPrompt,
    build_sections,
    project_context_body,
    render,
)
from .templates import expand_template, load_templates, parse_command_args, substitute_args
from .tool_prompts import BUILTIN_TOOL_PROMPTS, tool_prompts
from .trust import decide_trust, needs_trust
from .types import (
    Command,
    ContextFile,
    Diagnostic,
    PromptTemplate,
    Section,
    Skill,
    SourceInfo,
    TrustDecision,
)

__all__ = [
    "AGENT_DIR_ENV",
    "BUILTIN_TOOL_PROMPTS",
    "CONTEXT_FILE_NAMES",
    "DEFAULT_TOOL_NAMES",
    "PREAMBLE",
    "PROJECT_CONTEXT_HEADING",
    "Command",
    "ContextFile",
    "Diagnostic",
    "PromptTemplate",
    "Resources",
    "Section",
    "Skill",
    "SourceInfo",
    "ToolPrompt",
    "TrustDecision",
    "build_sections",
    "decide_trust",
    "default_agent_dir",
    "expand_skill_command",
    "expand_template",
    "load_context_files",
    "load_resources",
    "load_skills",
    "load_templates",
    "needs_trust",
    "parse_command_args",
    "parse_frontmatter",
    "project_context_body",
    "references_line",
    "render",
    "skills_section",
    "substitute_args",
    "tool_prompts",
]
