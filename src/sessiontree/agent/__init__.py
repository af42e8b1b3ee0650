"""The agent harness: runs a model against a session, with frozen turn snapshots, a write buffer, durable
save points, automatic compaction, tree navigation and crash-resumable runs (SPEC B§10, B§17).

Public names are re-exported here; the modules each hold one piece (loop, tool calls, turn state, write
buffer, queues, compaction policy, navigation, resume, tools, scripted model, facade, harness, sync runner).
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
    from .harness import AbortResult, AgentHarness
    from .loop import run_agent_loop, run_agent_loop_continue
    from .navigation import BranchMove, ForkResult, branch_to
    from .retry import RetrySettings, is_retryable_error
    from .runner import SyncHarness
    from .scripted import (
        Reply,
        ScriptedModel,
        ScriptedRequest,
        error_reply,
        overflow_reply,
        reply,
        text,
        thinking,
        tool_call,
    )
    from .tools import coding_tools, read_only_tools
    from .turn_state import SystemPromptContext
    from .types import AgentContext, AgentTool, HarnessError, LoopConfig, ToolResult


__all__ = [
    "AbortResult",
    "AgentContext",
    "AgentHarness",
    "AgentTool",
    "BranchMove",
    "ForkResult",
    "HarnessError",
    "LoopConfig",
    "Reply",
    "RetrySettings",
    "ScriptedModel",
    "ScriptedRequest",
    "SyncHarness",
    "SystemPromptContext",
    "ToolResult",
    "branch_to",
    "coding_tools",
    "error_reply",
    "is_retryable_error",
    "overflow_reply",
    "read_only_tools",
    "reply",
    "run_agent_loop",
    "run_agent_loop_continue",
    "text",
    "thinking",
    "tool_call",
]

export_lazily(
    __name__,
    {
        "AbortResult": ".harness",
        "AgentHarness": ".harness",
        "run_agent_loop": ".loop",
        "run_agent_loop_continue": ".loop",
        "BranchMove": ".navigation",
        "ForkResult": ".navigation",
        "branch_to": ".navigation",
        "RetrySettings": ".retry",
        "is_retryable_error": ".retry",
        "SyncHarness": ".runner",
        "Reply": ".scripted",
        "ScriptedModel": ".scripted",
        "ScriptedRequest": ".scripted",
        "error_reply": ".scripted",
        "overflow_reply": ".scripted",
        "reply": ".scripted",
        "text": ".scripted",
        "thinking": ".scripted",
        "tool_call": ".scripted",
        "coding_tools": ".tools",
        "read_only_tools": ".tools",
        "SystemPromptContext": ".turn_state",
        "AgentContext": ".types",
        "AgentTool": ".types",
        "HarnessError": ".types",
        "LoopConfig": ".types",
        "ToolResult": ".types",
    },
)
