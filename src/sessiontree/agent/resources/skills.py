"""Skills as pi 1.6 reads, lists and expands them.

A skill file's front matter gives ``name`` (else the folder's name), ``description`` (required: a skill
without one is dropped, with a warning for a ``SKILL.md``) and ``disable-model-invocation: true`` (kept out
of the prompt, still usable as ``/skill:name``). A name over 64 UTF-16 units, outside ``[a-z0-9-]``, with a
leading or trailing ``-`` or with ``--``, and a description over 1024, only warn. Broken front matter drops
the file with a warning naming it and the line. The first skill of a name wins (a ``collision`` for later
ones); the same file reached twice (symlinks) is loaded once.

``/skill:name args`` becomes a ``<skill name=… location=…>`` block with the skill's body (front matter
removed, trimmed), then the args; an unknown name leaves the text as it was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from ...errors import ResourceError
from ._text import DEFAULT_MAX_FILE_BYTES, escape_xml, js_len, js_trim, read_resource, reason
from .frontmatter import parse_frontmatter
from .types import Diagnostic, Skill, SourceInfo

__all__ = [
    "SkillReader",
    "expand_skill_command",
    "load_skill_file",
    "load_skills",
    "references_line",
    "skills_section",
]

SkillReader = Literal["read", "bash", "indirect"]
NAME_LIMIT = 64
DESCRIPTION_LIMIT = 1024
_NAME = re.compile(r"[a-z0-9-]+\Z")
_PREFIX = "/skill:"


def _name_problems(name: str) -> list[str]:
    problems = []
    if js_len(name) > NAME_LIMIT:
        problems.append(f"skill name is {js_len(name)} characters long, more than {NAME_LIMIT}")
    if not _NAME.match(name):
        problems.append("skill name should use only lowercase letters a-z, digits and hyphens")
    if name.startswith("-") or name.endswith("-"):
        problems.append("skill name should not start or end with a hyphen")
    if "--" in name:
        problems.append("skill name should not contain two hyphens in a row")
    return problems


def load_skill_file(
    path: str, source_info: SourceInfo, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[Skill | None, list[Diagnostic]]:
    """One skill file: the skill (None when it cannot be used) and the warnings about it."""
    declared = os.path.basename(path) == "SKILL.md"
    try:
        text = read_resource(path, max_bytes)
    except ResourceError as exc:
        return None, [Diagnostic("warning", reason(exc), path)]
    try:
        fields, _ = parse_frontmatter(text, path)
    except ResourceError as exc:  # a plain .md with broken YAML is just not a skill (pi is silent too)
        return None, [Diagnostic("warning", reason(exc), path, exc.line)] if declared else []
    description = fields.get("description")
    has_description = isinstance(description, str) and js_trim(description) != ""
    if not declared and not has_description:
        return None, []
    diagnostics = []
    if not has_description:
        diagnostics.append(Diagnostic("warning", "skill has no description (required); not loaded", path))
    elif js_len(str(description)) > DESCRIPTION_LIMIT:
        diagnostics.append(
            Diagnostic("warning", f"skill description is longer than {DESCRIPTION_LIMIT} characters", path)
        )
    given = fields.get("name")
    name = given if isinstance(given, str) and given else os.path.basename(os.path.dirname(path))
    diagnostics.extend(Diagnostic("warning", problem, path) for problem in _name_problems(name))
    if not has_description:
        return None, diagnostics
    skill = Skill(
        name=name,
        description=str(description),
        file_path=path,
        base_dir=os.path.dirname(path),
        source_info=source_info,
        disable_model_invocation=fields.get("disable-model-invocation") is True,
    )
    return skill, diagnostics


def load_skills(
    candidates: Iterable[tuple[str, SourceInfo]], max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[list[Skill], list[Diagnostic]]:
    """The skills of ``(file, source)`` candidates in precedence order: first name wins, each real file once.
    Loading warnings come first in the diagnostics, then the collisions (as pi orders them)."""
    by_name: dict[str, Skill] = {}
    real_paths: set[str] = set()
    warnings: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    for path, info in candidates:
        skill, found = load_skill_file(path, info, max_bytes)
        warnings.extend(found)
        if skill is None:
            continue
        real = os.path.realpath(path)
        if real in real_paths:
            continue
        winner = by_name.get(skill.name)
        if winner is not None:
            collisions.append(
                Diagnostic(
                    "collision",
                    f'skill name "{skill.name}" is already taken by {winner.file_path}; this one is not loaded',
                    path,
                    name=skill.name,
                    winner=winner.file_path,
                )
            )
            continue
        by_name[skill.name] = skill
        real_paths.add(real)
    return list(by_name.values()), warnings + collisions


_HOW_TO_LOAD = {
    "read": "When a task fits a skill's description, load the skill's file with the read tool before you start.",
    "bash": "When a task fits a skill's description, load the skill's file with bash before you start.",
    "indirect": "When a task fits a skill's description, load the skill's file before you start.",
}


def skills_section(skills: Sequence[Skill], reader: SkillReader) -> str | None:
    """The body of the prompt's ``<skills>`` section, or None when no skill is visible to the model."""
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return None
    lines = [
        "The skills below hold extra instructions for particular kinds of task.",
        _HOW_TO_LOAD[reader],
        "A relative path inside a skill starts from the skill's folder (the one holding SKILL.md); "
        "pass absolute paths to tools.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{escape_xml(skill.name)}</name>",
            f"    <description>{escape_xml(skill.description)}</description>",
            f"    <location>{escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def references_line(base_dir: str) -> str:
    """The line of an expanded ``/skill:`` block that says where the skill's relative paths start."""
    return f"Paths in this skill are relative to {base_dir}."


def expand_skill_command(
    text: str, skills: Sequence[Skill], max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[str, Diagnostic | None]:
    """``/skill:name args`` as a skill block (the file is read now); anything else unchanged. A skill file
    that can no longer be read leaves the text unchanged and returns a warning."""
    if not text.startswith(_PREFIX):
        return text, None
    space = text.find(" ")
    name = text[len(_PREFIX) :] if space == -1 else text[len(_PREFIX) : space]
    args = "" if space == -1 else js_trim(text[space + 1 :])
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text, None
    try:
        _, body = parse_frontmatter(read_resource(skill.file_path, max_bytes), skill.file_path)
    except ResourceError as exc:
        return text, Diagnostic(
            "warning", f"/skill:{name} not expanded: {reason(exc)}", skill.file_path, exc.line
        )
    block = (
        f'<skill name="{skill.name}" location="{skill.file_path}">\n{references_line(skill.base_dir)}\n\n'
        f"{js_trim(body)}\n</skill>"
    )
    return (f"{block}\n\n{args}" if args else block), None
