"""The system prompt, built section by section in pi 1.6's order (the wording is sessiontree's own).

1. ``preamble`` (bare text): who the assistant is; a custom prompt (SYSTEM.md or ``system_prompt``)
   replaces it and sections 2–4;
2. ``<tools>``: ``- name: one-liner`` per selected tool that has a one-liner (``(none)`` if none does), a
   blank line, a closing sentence;
3. ``<rules>``: ``- rule`` lines: a shell fallback (only when bash or powershell is selected and none of
   grep/find/ls is), each selected tool's guidelines in tool order, the caller's extra guidelines, then two
   fixed rules; trimmed, repeats dropped;
4. ``<docs>``: where the harness's own documentation is, only when the caller gives that text;
5. ``<addendum>``: APPEND_SYSTEM.md or the ``append_system_prompt`` texts (joined by a blank line);
6. ``<project_context>``: a heading line, then one ``<project_instructions path="…">`` block per file;
7. ``<skills>``: when ``read`` or ``bash`` is selected and a skill is visible to the model;
8. ``<cwd>``: the working directory (``\\`` as ``/``);
9. extra sections (``extra_sections``), in their order (one named like a section above replaces it).

Sections are joined by blank lines. pi 1.6 prints no date.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ._text import JS_SPACE
from .skills import skills_section
from .types import ContextFile, Section, Skill

__all__ = [
    "DEFAULT_TOOL_NAMES",
    "PREAMBLE",
    "PROJECT_CONTEXT_HEADING",
    "ToolPrompt",
    "build_sections",
    "project_context_body",
    "render",
]

DEFAULT_TOOL_NAMES = ("read", "bash", "edit", "write")
"""pi's default active tools, in order."""

PREAMBLE = (
    "You are a coding assistant working inside sessiontree, an agent harness that keeps the conversation as a "
    "branchable session tree. You help people look through files, run commands and change code."
)
PROJECT_CONTEXT_HEADING = "Instructions and conventions for this project:"
_TOOLS_TRAILER = "Other tools may be offered as well."
_FIXED_RULES = ("Keep your answers short.", "Name file paths plainly whenever you work with files.")
_SHELL_FALLBACK = {
    "bash": "Use bash to list, search and find files (ls, rg, find)",
    "powershell": "Use PowerShell to list, search and find files",
    "both": "Use bash or PowerShell to list, search and find files",
}
_SECTION_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")
_RUNS = re.compile(f"[{re.escape(JS_SPACE)}]+")


@dataclass(frozen=True, slots=True)
class ToolPrompt:
    """A selected tool as the prompt sees it: its name, one-liner (may be empty) and guideline bullets."""

    name: str
    snippet: str = ""
    guidelines: tuple[str, ...] = field(default=())

    @staticmethod
    def of(name: str, snippet: str, guidelines: Sequence[str]) -> ToolPrompt:
        """The snippet folded onto one line, guidelines trimmed, blank and repeated ones dropped."""
        kept: list[str] = []
        for guideline in guidelines:
            text = guideline.strip(JS_SPACE)
            if text and text not in kept:
                kept.append(text)
        return ToolPrompt(name, _RUNS.sub(" ", snippet).strip(JS_SPACE), tuple(kept))


def _rules(tools: Sequence[ToolPrompt], extra: Sequence[str]) -> str:
    names = {t.name for t in tools}
    rules: list[str] = []

    def add(rule: str) -> None:
        text = rule.strip(JS_SPACE)
        if text and text not in rules:
            rules.append(text)

    shells = [shell for shell in ("bash", "powershell") if shell in names]
    if shells and not names & {"grep", "find", "ls"}:
        add(_SHELL_FALLBACK["both" if len(shells) == 2 else shells[0]])
    for tool in tools:
        for guideline in tool.guidelines:
            add(guideline)
    for rule in (*extra, *_FIXED_RULES):
        add(rule)
    return "\n".join(f"- {rule}" for rule in rules)


def project_context_body(files: Sequence[ContextFile]) -> str:
    """The ``<project_context>`` body: the heading, then each file's block (paths and contents as they are)."""
    blocks = [f'<project_instructions path="{f.path}">\n{f.content}\n</project_instructions>' for f in files]
    return "\n\n".join([PROJECT_CONTEXT_HEADING, *blocks])


def build_sections(
    *,
    cwd: str,
    tools: Sequence[ToolPrompt],
    custom_prompt: str | None = None,
    append_text: str = "",
    context_files: Sequence[ContextFile] = (),
    skills: Sequence[Skill] = (),
    docs: str | None = None,
    guidelines: Sequence[str] = (),
    extra_sections: Mapping[str, str] | None = None,
) -> list[Section]:
    """The prompt's sections in order (see the module docstring). An empty ``custom_prompt`` counts as none;
    an extra section name must be lowercase ``[a-z][a-z0-9_-]*`` and not ``preamble`` (ValueError)."""
    extra = dict(extra_sections or {})
    for name in extra:
        if not _SECTION_NAME.match(name) or name == "preamble":
            raise ValueError(f"invalid system prompt section name: {name!r}")
    sections: list[Section] = []
    if custom_prompt:
        sections.append(Section("preamble", custom_prompt))
    else:
        listed = [f"- {t.name}: {t.snippet}" for t in tools if t.snippet]
        sections += [
            Section("preamble", PREAMBLE),
            Section("tools", "\n".join(listed or ["(none)"]) + f"\n\n{_TOOLS_TRAILER}"),
            Section("rules", _rules(tools, guidelines)),
        ]
        if docs:
            sections.append(Section("docs", docs))
    if append_text:
        sections.append(Section("addendum", append_text))
    if context_files:
        sections.append(Section("project_context", project_context_body(context_files)))
    names = [t.name for t in tools]
    reader = next((r for r in ("read", "bash") if r in names), None)
    if reader is not None and skills:
        body = skills_section(skills, "read" if reader == "read" else "bash")
        if body:
            sections.append(Section("skills", body))
    sections.append(Section("cwd", cwd.replace("\\", "/")))
    for name, text in extra.items():
        if text:  # a known name replaces that section where it stands, as in pi
            at = next((i for i, s in enumerate(sections) if s.name == name), None)
            if at is None:
                sections.append(Section(name, text))
            else:
                sections[at] = Section(name, text)
    return sections


def render(sections: Sequence[Section]) -> str:
    """The prompt text: the non-empty sections joined by blank lines."""
    return "\n\n".join(s.text for s in sections if s.text)
