"""Finding skill and prompt-template files in folders, in pi's order: names byte-sorted (as Node's readdir
gives them), dot names and ``node_modules`` skipped, symlinks followed (broken ones skipped), the folders'
``.gitignore``/``.ignore``/``.fdignore`` applied.

Skills (``skill_files``): a folder holding ``SKILL.md`` is one skill and the walk goes no deeper; otherwise
it recurses. In ``pi`` mode (``.pi/skills``, ``<agent dir>/skills``, explicit folders) the root's own
``*.md`` files are skills too; in ``agents`` mode (``.agents/skills``) the root's are not, but the ``*.md``
files of sub-folders without a ``SKILL.md`` are. Prompt templates (``prompt_files``): the ``*.md`` files
directly inside the folder.

Lists paths only; reads nothing but ignore files.
"""

from __future__ import annotations

import os
from typing import Literal

from .ignore_rules import IgnoreRules
from .types import Diagnostic

__all__ = ["SkillMode", "agents_skill_dirs", "find_git_root", "prompt_files", "skill_files"]

SkillMode = Literal["pi", "agents"]


def _entries(folder: str, diagnostics: list[Diagnostic]) -> list[tuple[str, str, bool, bool]]:
    """``(name, path, is_dir, is_file)`` for a folder's entries, byte-sorted (symlinks followed: a broken
    one is neither a folder nor a file)."""
    try:
        with os.scandir(folder) as it:
            found = list(it)
    except OSError as exc:
        diagnostics.append(Diagnostic("warning", f"folder cannot be read ({exc.strerror or exc})", folder))
        return []
    out = []
    for entry in sorted(found, key=lambda e: os.fsencode(e.name)):
        try:
            is_dir, is_file = entry.is_dir(), entry.is_file()
        except OSError:
            continue
        out.append((entry.name, entry.path, is_dir, is_file))
    return out


def skill_files(folder: str, mode: SkillMode, diagnostics: list[Diagnostic]) -> list[str]:
    """The skill files under ``folder`` (absent folder: none)."""
    if not os.path.isdir(folder):
        return []
    out: list[str] = []
    _walk_skills(folder, mode, IgnoreRules(folder), set(), out, diagnostics)
    return out


def _walk_skills(
    folder: str,
    mode: SkillMode,
    rules: IgnoreRules,
    active: set[str],
    out: list[str],
    diags: list[Diagnostic],
) -> None:
    real = os.path.realpath(folder)
    if real in active:  # a symlink back into the walk: pi would loop until the path is too long
        return
    active.add(real)
    try:
        rules.add_folder(folder)
        entries = _entries(folder, diags)
        for name, path, _, is_file in entries:
            if name == "SKILL.md" and is_file and not rules.ignores(path, False):
                out.append(path)
                return
        at_root = folder == rules.root
        for name, path, is_dir, is_file in entries:
            if name.startswith(".") or name == "node_modules":
                continue
            wanted_md = (mode == "pi" and at_root) or (mode == "agents" and not at_root)
            if is_file and name.endswith(".md") and wanted_md and not rules.ignores(path, False):
                out.append(path)
                continue
            if is_dir and not rules.ignores(path, True):
                _walk_skills(path, mode, rules, active, out, diags)
    finally:
        active.discard(real)


def find_git_root(start: str) -> str | None:
    """The nearest folder at or above ``start`` holding ``.git`` (a folder or a worktree's file)."""
    folder = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def agents_skill_dirs(cwd: str, home: str) -> list[str]:
    """``D/.agents/skills`` for D from ``cwd`` up to the git root (or ``/`` outside a repository), nearest
    first, without ``~/.agents/skills`` (a user folder, loaded on its own)."""
    folder = os.path.abspath(cwd)
    root = find_git_root(folder)
    user = os.path.join(home, ".agents", "skills")
    out: list[str] = []
    while True:
        candidate = os.path.join(folder, ".agents", "skills")
        if candidate != user:
            out.append(candidate)
        if root is not None and folder == root:
            return out
        parent = os.path.dirname(folder)
        if parent == folder:
            return out
        folder = parent


def prompt_files(folder: str, diagnostics: list[Diagnostic], *, auto: bool = True) -> list[str]:
    """The ``*.md`` files directly inside ``folder``. ``auto`` (a standard folder) also skips dot names and
    ``node_modules`` and applies the folder's ignore files; an explicit folder takes every ``*.md`` file."""
    if not os.path.isdir(folder):
        return []
    rules = IgnoreRules(folder)
    if auto:
        rules.add_folder(folder)
    out = []
    for name, path, _, is_file in _entries(folder, diagnostics):
        if auto and (name.startswith(".") or name == "node_modules" or rules.ignores(path, False)):
            continue
        if is_file and name.endswith(".md"):
            out.append(path)
    return out
