"""The selected tools as the system prompt lists them: each tool's one-liner and guideline bullets, taken
from the ``AgentTool`` (``prompt_snippet``, ``prompt_guidelines``) or, for a bare name, from sessiontree's
own coding tool of that name. A name no tool is known for is still selected (it shapes the rules) but not
listed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tools import bash, edit, find, grep, ls, read, write
from ..types import AgentTool
from .system_prompt import DEFAULT_TOOL_NAMES, ToolPrompt

__all__ = ["BUILTIN_TOOL_PROMPTS", "tool_prompts"]

BUILTIN_TOOL_PROMPTS: dict[str, tuple[str, tuple[str, ...]]] = {
    module.__name__.rsplit(".", 1)[1]: (module.SNIPPET, module.GUIDELINES)
    for module in (read, bash, edit, write, grep, find, ls)
}
"""``name -> (one-liner, guidelines)`` of the coding tools in ``agent.tools``."""


def tool_prompts(tools: Sequence[AgentTool | str] | None) -> list[ToolPrompt]:
    """``tools`` (default: pi's ``read, bash, edit, write``) in order, each name once."""
    out: list[ToolPrompt] = []
    for tool in DEFAULT_TOOL_NAMES if tools is None else tools:
        if isinstance(tool, AgentTool):
            prompt = ToolPrompt.of(tool.name, tool.prompt_snippet, tool.prompt_guidelines)
        else:
            snippet, guidelines = BUILTIN_TOOL_PROMPTS.get(tool, ("", ()))
            prompt = ToolPrompt.of(tool, snippet, guidelines)
        if all(p.name != prompt.name for p in out):
            out.append(prompt)
    return out
