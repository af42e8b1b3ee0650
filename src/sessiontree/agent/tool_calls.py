"""One round of tool calls from an assistant reply, as pi's agent loop runs it.

Each call is prepared in turn (lookup, argument shim, schema check, ``before_tool_call``), then the allowed
calls run concurrently (or one by one when configured or when a called tool asks for it). End events arrive
in completion order; tool-result messages are emitted in the assistant's source order. It persists nothing:
the emitted ``message_end`` events are what the harness stores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from sessiontree.format.ids import now_ms
from sessiontree.format.messages import tool_result_message

from ..llm.types import AbortSignal
from . import events as ev
from .types import AgentContext, AgentTool, EventSink, LoopConfig, ToolResult
from .validate import validate_arguments

__all__ = ["ABORTED_TEXT", "ToolRound", "error_result", "execute_tool_calls", "fail_truncated_tool_calls"]

AgentMessage = dict[str, Any]

ABORTED_TEXT = "Operation aborted"


def error_result(text: str) -> ToolResult:
    """A result that reports an error to the model (pi's ``createErrorToolResult``)."""
    return ToolResult([{"type": "text", "text": text}], details={})


@dataclass(slots=True)
class ToolRound:
    """The tool-result messages of a round (source order) and whether every result asked to terminate."""

    messages: list[AgentMessage]
    terminate: bool


@dataclass(slots=True)
class _Outcome:
    call: dict[str, Any]
    result: ToolResult
    is_error: bool


@dataclass(slots=True)
class _Prepared:
    call: dict[str, Any]
    tool: AgentTool
    args: dict[str, Any]


def _message_of(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _result_message(outcome: _Outcome, now: Callable[[], int]) -> AgentMessage:
    return tool_result_message(
        str(outcome.call.get("id", "")),
        str(outcome.call.get("name", "")),
        outcome.result.content if outcome.result.content is not None else [],
        is_error=outcome.is_error,
        timestamp=now(),
        details=outcome.result.details,
    )


async def _emit_end(outcome: _Outcome, emit: EventSink) -> None:
    call = outcome.call
    await emit(ev.tool_execution_end(call["id"], call["name"], outcome.result, outcome.is_error))


async def _emit_result(message: AgentMessage, emit: EventSink) -> None:
    await emit(ev.message_start(message))
    await emit(ev.message_end(message))


def _tool_calls(assistant: AgentMessage) -> list[dict[str, Any]]:
    content = assistant.get("content")
    return [b for b in content or [] if isinstance(b, dict) and b.get("type") == "toolCall"]


async def fail_truncated_tool_calls(
    assistant: AgentMessage, emit: EventSink, now: Callable[[], int] = now_ms
) -> ToolRound:
    """A reply cut off by the output limit: every one of its tool calls fails, none is run."""
    messages: list[AgentMessage] = []
    for call in _tool_calls(assistant):
        await emit(ev.tool_execution_start(call["id"], call["name"], call.get("arguments")))
        outcome = _Outcome(
            call,
            error_result(
                f'Tool call "{call["name"]}" was not executed: the response hit the output token limit, so '
                "its arguments may be truncated. Re-issue the tool call with complete arguments."
            ),
            True,
        )
        await _emit_end(outcome, emit)
        message = _result_message(outcome, now)
        await _emit_result(message, emit)
        messages.append(message)
    return ToolRound(messages, False)


@dataclass(slots=True)
class _Round:
    """One round's shared inputs: the loop's context, the reply, the configuration, the signal, the emitter."""

    context: AgentContext
    assistant: AgentMessage
    config: LoopConfig
    signal: AbortSignal | None
    emit: EventSink

    @property
    def aborted(self) -> bool:
        return self.signal is not None and self.signal.aborted

    async def start(self, call: dict[str, Any]) -> _Prepared | _Outcome:
        """Announce a call and prepare it: lookup, argument shim, schema check, ``before_tool_call``."""
        await self.emit(ev.tool_execution_start(call["id"], call["name"], call.get("arguments")))
        tool = next((t for t in self.context.tools if t.name == call.get("name")), None)
        if tool is None:
            return _Outcome(call, error_result(f"Tool {call.get('name')} not found"), True)
        try:
            raw = call.get("arguments")
            if tool.prepare_arguments is not None:
                raw = tool.prepare_arguments(raw)
            args = validate_arguments(tool.name, tool.parameters, raw)
            hook = self.config.before_tool_call
            if hook is not None:
                verdict = await hook(self.assistant, call, args, self.context)
                if self.aborted:
                    return _Outcome(call, error_result(ABORTED_TEXT), True)
                if verdict is not None and verdict.block:
                    blocked = error_result(verdict.reason or "Tool execution was blocked")
                    blocked.terminate = verdict.terminate
                    return _Outcome(call, blocked, True)
            if self.aborted:
                return _Outcome(call, error_result(ABORTED_TEXT), True)
            return _Prepared(call, tool, args)
        except Exception as exc:
            return _Outcome(call, error_result(_message_of(exc)), True)

    async def run(self, prepared: _Prepared, emit: EventSink) -> _Outcome:
        """Execute a prepared call, then let ``after_tool_call`` patch the result; ends with its end event."""
        outcome = await self._execute(prepared, emit)
        await emit(
            ev.tool_execution_end(
                prepared.call["id"], prepared.call["name"], outcome.result, outcome.is_error
            )
        )
        return outcome

    async def _execute(self, prepared: _Prepared, emit: EventSink) -> _Outcome:
        call = prepared.call
        if self.aborted:
            return _Outcome(call, error_result(ABORTED_TEXT), True)
        accepting = True

        async def on_update(partial: ToolResult) -> None:
            if accepting:  # progress arriving after the tool settled is dropped, as in pi
                await emit(ev.tool_execution_update(call["id"], call["name"], call.get("arguments"), partial))

        try:
            result, is_error = (
                await prepared.tool.execute(call["id"], prepared.args, self.signal, on_update),
                False,
            )
        except Exception as exc:
            result, is_error = error_result(_message_of(exc)), True
        finally:
            accepting = False
        hook = self.config.after_tool_call
        if hook is not None:
            try:
                patched = await hook(self.assistant, call, prepared.args, result, is_error, self.context)
            except Exception as exc:
                return _Outcome(call, error_result(_message_of(exc)), True)
            if patched is not None:
                result, is_error = patched
        return _Outcome(call, result, is_error)

    async def finish(self, outcomes: list[_Outcome]) -> ToolRound:
        """The result messages, emitted in source order; terminate only when every result asks for it."""
        now = self.config.now or now_ms
        messages: list[AgentMessage] = []
        for outcome in outcomes:
            message = _result_message(outcome, now)
            await _emit_result(message, self.emit)
            messages.append(message)
        return ToolRound(messages, bool(outcomes) and all(o.result.terminate for o in outcomes))


async def execute_tool_calls(
    context: AgentContext,
    assistant: AgentMessage,
    config: LoopConfig,
    signal: AbortSignal | None,
    emit: EventSink,
) -> ToolRound:
    """Run the tool calls of ``assistant`` (parallel unless configured or asked otherwise)."""
    calls = _tool_calls(assistant)
    called = {c.get("name") for c in calls}
    sequential = config.tool_execution == "sequential" or any(
        t.execution_mode == "sequential" for t in context.tools if t.name in called
    )
    round_ = _Round(context, assistant, config, signal, emit)
    return await (_sequential if sequential else _parallel)(round_, calls)


async def _sequential(round_: _Round, calls: list[dict[str, Any]]) -> ToolRound:
    outcomes: list[_Outcome] = []
    messages: list[AgentMessage] = []
    for call in calls:
        prepared = await round_.start(call)
        if isinstance(prepared, _Prepared):
            outcome = await round_.run(prepared, round_.emit)
        else:
            outcome = prepared
            await _emit_end(outcome, round_.emit)
        messages.extend((await round_.finish([outcome])).messages)
        outcomes.append(outcome)
        if round_.aborted:
            break
    return ToolRound(messages, bool(outcomes) and all(o.result.terminate for o in outcomes))


async def _parallel(round_: _Round, calls: list[dict[str, Any]]) -> ToolRound:
    slots: list[_Outcome | None] = []
    pending: list[tuple[int, _Prepared]] = []
    for call in calls:
        prepared = await round_.start(call)
        if isinstance(prepared, _Prepared):
            pending.append((len(slots), prepared))
            slots.append(None)
        else:
            await _emit_end(prepared, round_.emit)
            slots.append(prepared)
        if round_.aborted:
            break

    # Concurrent tools share one emitter: listeners still see one event at a time, in completion order.
    lock = anyio.Lock()

    async def serial_emit(event: dict[str, Any]) -> None:
        async with lock:
            await round_.emit(event)

    async def run(index: int, prepared: _Prepared) -> None:
        slots[index] = await round_.run(prepared, serial_emit)

    async with anyio.create_task_group() as group:
        for index, prepared in pending:
            group.start_soon(run, index, prepared)
    return await round_.finish([o for o in slots if o is not None])
