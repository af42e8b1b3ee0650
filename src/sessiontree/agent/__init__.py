"""The agent harness: runs a model against a session, with frozen turn snapshots, a write buffer, durable
save points, automatic compaction, tree navigation and crash-resumable runs (SPEC B§10, B§17).

Public names are re-exported here; the modules each hold one piece (loop, tool calls, turn state, write
buffer, queues, compaction policy, navigation, resume, tools, scripted model, facade, harness, sync runner).
"""

from __future__ import annotations

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
