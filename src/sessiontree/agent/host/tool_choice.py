"""Which tools an agent session has and which of them the model is offered: all of pi's coding tools for the
working directory, with pi's default active set (``read, bash, edit, write``), ``--tools a,b`` (names, or
patterns with ``*``) or ``--no-tools``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from ...errors import SessionError
from ..tools import coding_tools
from ..types import AgentTool

__all__ = ["DEFAULT_ACTIVE_TOOLS", "choose_tools", "parse_tool_list"]

DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")


def parse_tool_list(value: str) -> list[str]:
    """``"read, bash"`` as ``["read", "bash"]`` (blank names dropped)."""
    return [name.strip() for name in value.split(",") if name.strip()]


def choose_tools(
    cwd: Path, names: Sequence[str] | None = None, *, no_tools: bool = False
) -> tuple[list[AgentTool], list[str]]:
    """The tools for ``cwd`` and the active names: ``names`` (each a tool name or a ``*`` pattern, in the tools'
    order), none with ``no_tools``, else pi's defaults. A name that matches no tool is ``invalid_argument``."""
    tools = coding_tools(cwd)
    known = [t.name for t in tools]
    if no_tools:
        return tools, []
    if names is None:
        return tools, [n for n in DEFAULT_ACTIVE_TOOLS if n in known]
    unknown = [n for n in names if not fnmatch.filter(known, n)]
    if unknown:
        raise SessionError(
            f"Unknown tool(s) in --tools: {', '.join(unknown)} (known: {', '.join(known)})",
            kind="invalid_argument",
        )
    return tools, [k for k in known if any(fnmatch.fnmatchcase(k, n) for n in names)]
