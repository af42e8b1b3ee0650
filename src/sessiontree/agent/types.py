"""The agent layer's vocabulary: tools and their results, the loop's context and configuration, the harness
error with pi's codes.

Plain data and signatures only; no loop logic, no storage, no provider calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import SessionError
from ..llm.types import AbortSignal, Model, StreamOptions, ThinkingLevel, Tool

__all__ = [
    "AgentContext",
    "AgentTool",
    "EventSink",
    "HarnessError",
    "LoopConfig",
    "NextTurn",
    "QueueMode",
    "ToolCallHookResult",
    "ToolExecution",
    "ToolResult",
    "ToolUpdate",
    "TurnInfo",
]

AgentMessage = dict[str, Any]
Event = dict[str, Any]
QueueMode = Literal["one-at-a-time", "all"]
ToolExecution = Literal["parallel", "sequential"]


class HarnessError(SessionError):
    """A harness call that could not be done.

    ``kind`` is one of pi's codes: ``busy``, ``invalid_state``, ``invalid_argument``, ``session``, ``hook``,
    ``auth``, ``compaction``, ``branch_summary``, ``unknown``; ``cause`` keeps the original error.
    """

    kind = "unknown"

    def __init__(self, message: str, *, kind: str | None = None, cause: BaseException | None = None) -> None:
        super().__init__(message, kind=kind)
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: content blocks for the model, ``details`` for the application (never sent), and
    ``terminate`` to end the run after this tool round (only when every result of the round asks for it)."""

    content: list[dict[str, Any]]
    details: Any = None
    terminate: bool = False

    def to_dict(self) -> dict[str, Any]:
        """pi's ``AgentToolResult`` shape (``terminate`` only when set)."""
        out: dict[str, Any] = {"content": self.content, "details": self.details}
        if self.terminate:
            out["terminate"] = True
        return out


ToolUpdate = Callable[[ToolResult], Awaitable[None]]
"""Called by a tool with partial results while it runs (each becomes a ``tool_execution_update`` event)."""

ToolExecute = Callable[[str, dict[str, Any], AbortSignal | None, ToolUpdate | None], Awaitable[ToolResult]]
"""``execute(tool_call_id, arguments, signal, on_update)``: raise to report an error (its message is the result)."""


@dataclass(frozen=True, slots=True)
class AgentTool:
    """A tool the agent can run: its schema for the model and its implementation.

    ``execution_mode="sequential"`` makes a whole round of tool calls run one by one when this tool is among
    them. ``repeatable`` declares the tool safe to run again when a crashed run is resumed (read-only tools);
    other tools get an "interrupted" result instead. ``prepare_arguments`` may rewrite raw arguments before
    validation (pi's compatibility shim for older argument shapes). ``prompt_snippet`` is the tool's one-line
    entry in the system prompt's tool list (a tool without one is not listed) and ``prompt_guidelines`` its
    bullets in the prompt's rules (pi's ``promptSnippet`` / ``promptGuidelines``; see ``agent.resources``).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: ToolExecute
    label: str = ""
    execution_mode: ToolExecution = "parallel"
    repeatable: bool = False
    prepare_arguments: Callable[[Any], Any] | None = None
    prompt_snippet: str = ""
    prompt_guidelines: tuple[str, ...] = ()

    def spec(self) -> Tool:
        """The model-layer tool definition (name, description, JSON schema)."""
        return Tool(self.name, self.description, self.parameters)


@dataclass(slots=True)
class AgentContext:
    """What the loop sends each turn: system prompt, runtime messages (grown as the run goes), active tools."""

    system_prompt: str | None
    messages: list[AgentMessage]
    tools: Sequence[AgentTool] = ()


@dataclass(slots=True)
class TurnInfo:
    """A finished turn, as ``prepare_next_turn`` and ``should_stop_after_turn`` see it."""

    message: AgentMessage
    tool_results: list[AgentMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@dataclass(slots=True)
class NextTurn:
    """What ``prepare_next_turn`` may swap for the next request of the same run (``None`` keeps the old)."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


@dataclass(slots=True)
class ToolCallHookResult:
    """``before_tool_call`` outcome: ``block`` turns the call into an error result with ``reason``."""

    block: bool = False
    reason: str | None = None
    terminate: bool = False


EventSink = Callable[[Event], Awaitable[None]]

BeforeToolCall = Callable[
    [AgentMessage, dict[str, Any], dict[str, Any], AgentContext], Awaitable[ToolCallHookResult | None]
]
"""``(assistant_message, tool_call, arguments, context)`` → block or allow."""

AfterToolCall = Callable[
    [AgentMessage, dict[str, Any], dict[str, Any], ToolResult, bool, AgentContext],
    Awaitable["tuple[ToolResult, bool] | None"],
]
"""``(assistant_message, tool_call, arguments, result, is_error, context)`` → a patched ``(result, is_error)``."""


@dataclass(slots=True)
class LoopConfig:
    """How ``run_agent_loop`` talks to the model, runs tools and asks for more work.

    ``stream`` is ``sessiontree.llm.stream`` or anything with its signature; ``stream_options`` is copied for
    every request with the abort signal and ``reasoning`` set. Callbacks left ``None`` do nothing.
    """

    model: Model
    reasoning: ThinkingLevel | None = None
    stream_options: StreamOptions = field(default_factory=StreamOptions)
    stream: Callable[..., Any] | None = None
    convert_to_llm: Callable[[list[AgentMessage]], Any] | None = None
    transform_context: Callable[[list[AgentMessage], AbortSignal | None], Any] | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    prepare_next_turn: Callable[[TurnInfo], Awaitable[NextTurn | None]] | None = None
    should_stop_after_turn: Callable[[TurnInfo], Awaitable[bool]] | None = None
    get_steering_messages: Callable[[], Awaitable[list[AgentMessage]]] | None = None
    get_follow_up_messages: Callable[[], Awaitable[list[AgentMessage]]] | None = None
    tool_execution: ToolExecution = "parallel"
    now: Callable[[], int] | None = None
