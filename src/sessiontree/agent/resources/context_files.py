"""Context files (AGENTS.md and friends) as pi 1.6 loads them.

One file per folder, the first regular file among ``AGENTS.override.md``, ``AGENTS.md``, ``AGENTS.MD``,
``CLAUDE.md``, ``CLAUDE.MD``; from the agent directory first, then from every folder from ``/`` down to the
working directory (outermost first, the working directory last; the walk stops at neither the home folder
nor the git root). A path already taken is not repeated. In a linked git worktree nested inside its main
checkout, the main checkout's file of the same name is left out (the worktree's own copy replaces it).
Contents are BOM-stripped, otherwise untouched. These files are not subject to project trust.
"""

from __future__ import annotations

import os

from ...errors import ResourceError
from ._text import DEFAULT_MAX_FILE_BYTES, read_resource, reason, strip_bom
from .types import ContextFile, Diagnostic

__all__ = ["CONTEXT_FILE_NAMES", "context_file_in", "find_git_paths", "load_context_files"]

CONTEXT_FILE_NAMES = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


def context_file_in(
    folder: str, diagnostics: list[Diagnostic], max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> ContextFile | None:
    """The folder's context file; a candidate that cannot be read is reported and the next one tried."""
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        try:
            return ContextFile(path, strip_bom(read_resource(path, max_bytes)))
        except ResourceError as exc:
            diagnostics.append(Diagnostic("warning", reason(exc), path))
    return None


def find_git_paths(start: str) -> tuple[str, str] | None:
    """``(worktree root, common git dir)`` of the checkout holding ``start`` (a ``.git`` folder, or a
    ``.git`` file with ``gitdir:`` for a linked worktree), or None."""
    folder = start
    while True:
        git = os.path.join(folder, ".git")
        if os.path.lexists(git):
            try:
                if os.path.isfile(git):
                    with open(git, encoding="utf-8", errors="replace") as f:
                        content = f.read(64 * 1024).strip()
                    if content.startswith("gitdir: "):
                        git_dir = os.path.normpath(os.path.join(folder, content[8:].strip()))
                        if not os.path.exists(os.path.join(git_dir, "HEAD")):
                            return None
                        common = os.path.join(git_dir, "commondir")
                        if os.path.exists(common):
                            with open(common, encoding="utf-8", errors="replace") as f:
                                git_dir = os.path.normpath(os.path.join(git_dir, f.read(64 * 1024).strip()))
                        return folder, git_dir
                elif os.path.isdir(git):
                    return (folder, git) if os.path.exists(os.path.join(git, "HEAD")) else None
            except OSError:
                return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _shadowed_file(cwd: str, max_bytes: int) -> str | None:
    """The main checkout's context file that a nested linked worktree's own copy replaces (a real path)."""
    paths = find_git_paths(cwd)
    if paths is None:
        return None
    common = os.path.realpath(paths[1])
    worktree = os.path.realpath(paths[0])
    main_root = os.path.dirname(common)
    inside = worktree == main_root or worktree.startswith(main_root.rstrip(os.sep) + os.sep)
    if not inside or worktree == main_root:
        return None
    if os.path.realpath(os.path.join(main_root, ".git")) != common:
        return None  # a bare layout or a submodule: nothing is checked out at main_root
    own = context_file_in(worktree, [], max_bytes)
    return os.path.join(main_root, os.path.basename(own.path)) if own is not None else None


def load_context_files(
    cwd: str, agent_dir: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[list[ContextFile], list[Diagnostic]]:
    """The context files for ``cwd`` in prompt order, and what went wrong reading them."""
    cwd = os.path.abspath(cwd)
    diagnostics: list[Diagnostic] = []
    files: list[ContextFile] = []
    seen: set[str] = set()
    own = context_file_in(os.path.abspath(agent_dir), diagnostics, max_bytes)
    if own is not None:
        files.append(own)
        seen.add(own.path)
    shadowed = _shadowed_file(cwd, max_bytes)
    ancestors: list[ContextFile] = []
    folder = cwd
    while True:
        found = context_file_in(folder, diagnostics, max_bytes)
        if found is not None and found.path not in seen:
            real = os.path.join(os.path.realpath(folder), os.path.basename(found.path))
            if shadowed is None or real != shadowed:
                ancestors.insert(0, found)
                seen.add(found.path)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    files.extend(ancestors)
    return files, diagnostics
