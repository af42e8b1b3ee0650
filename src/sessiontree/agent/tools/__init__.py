"""pi's coding tools with pi's names and argument shapes (so file-operation tracking in compaction keeps
working): ``read``, ``write``, ``edit``, ``bash``, ``ls``, ``grep``, ``find``, confined to a working directory.

One module per tool; this package only assembles them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..types import AgentTool
from ._paths import Workspace
from .bash import bash_tool
from .edit import edit_tool
from .find import find_tool
from .grep import grep_tool
from .ls import ls_tool
from .read import read_tool
from .write import write_tool

__all__ = [
    "Workspace",
    "bash_tool",
    "coding_tools",
    "edit_tool",
    "find_tool",
    "grep_tool",
    "ls_tool",
    "read_only_tools",
    "read_tool",
    "write_tool",
]


def _workspace(cwd: str | os.PathLike[str], allow_outside: bool, allowed_paths: Iterable[str]) -> Workspace:
    return Workspace(cwd, None if allow_outside else list(allowed_paths))


def coding_tools(
    cwd: str | os.PathLike[str], *, allow_outside: bool = False, allowed_paths: Iterable[str] = ()
) -> list[AgentTool]:
    """``read, bash, edit, write, grep, find, ls`` for ``cwd``: file paths outside it are refused unless
    ``allow_outside`` or listed in ``allowed_paths`` (``bash`` runs in ``cwd`` but is a shell: not confined)."""
    ws = _workspace(cwd, allow_outside, allowed_paths)
    return [
        read_tool(ws),
        bash_tool(ws),
        edit_tool(ws),
        write_tool(ws),
        grep_tool(ws),
        find_tool(ws),
        ls_tool(ws),
    ]


def read_only_tools(
    cwd: str | os.PathLike[str], *, allow_outside: bool = False, allowed_paths: Iterable[str] = ()
) -> list[AgentTool]:
    """``read, grep, find, ls`` for ``cwd`` (pi's read-only set), confined the same way."""
    ws = _workspace(cwd, allow_outside, allowed_paths)
    return [read_tool(ws), grep_tool(ws), find_tool(ws), ls_tool(ws)]
