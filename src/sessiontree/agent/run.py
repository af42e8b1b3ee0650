"""One harness run: snapshot, drive the agent loop, persist what it reports, flush at save points, compact
and retry after it, report a failure as a persisted error reply.

Works on the ``RunParts`` the harness owns (facade, bus, write buffer, queues, cache, live settings); it is
the only place that turns loop events into storage calls. Public harness methods live in ``harness.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

from sessiontree.format.messages import assistant_message, tool_result_message
from sessiontree.session.manager import SessionManager
from sessiontree.tree.context import SessionContext

from ..compaction import CompactionSettings
from ..llm.stream import stream as llm_stream
from ..llm.types import AbortSignal, Context, Model, StreamOptions
from . import events as ev
from .bus import EventBus
from .compaction_policy import CompactionCheck, Compactor, check_compaction
from .loop import run_agent_loop, run_agent_loop_continue
from .queues import MessageQueues
from .resume import unanswered_tool_calls
from .retry import DEFAULT_RETRY_SETTINGS, RetrySettings, is_retryable_error, wait_or_abort
from .session import AsyncSession
from .tool_calls import execute_tool_calls, fail_truncated_tool_calls
from .turn_state import ContextCache, LiveSettings, TurnState, create_turn_state
from .types import (
    AgentContext,
    HarnessError,
    LoopConfig,
    NextTurn,
    ToolCallHookResult,
    ToolExecution,
    ToolResult,
    TurnInfo,
)
from .write_buffer import WriteBuffer

__all__ = [
    "Phase",
    "RunParts",
    "compact_before_prompt",
    "current_context",
    "drive",
    "drop_trailing_error",
    "failure_message",
    "flush_writes",
    "handle_event",
    "repair_interrupted",
    "snapshot",
]

AgentMessage = dict[str, Any]
Event = dict[str, Any]
Phase = Literal["idle", "turn", "compaction", "branch_summary"]


@dataclass(slots=True)
class RunParts:
    """Everything a run touches; owned by the harness, shared with this module."""

    session: AsyncSession
    bus: EventBus
    writes: WriteBuffer
    queues: MessageQueues
    cache: ContextCache
    live: LiveSettings
    compactor: Compactor
    compaction: CompactionSettings
    tool_execution: ToolExecution
    clock: Callable[[], int]
    phase: Phase = "idle"
    signal: AbortSignal | None = None
    overflow_attempted: bool = False
    retry: RetrySettings = DEFAULT_RETRY_SETTINGS
    retry_attempt: int = 0
    """Retries made for the current failure (0: none pending); reset by a reply that is not an error."""
    stream: Callable[..., Any] = field(default=llm_stream)
    models: dict[tuple[str, str], Model] = field(default_factory=dict)
    """Models the harness can switch back to when a branch records them (navigation)."""


def _cached(manager: SessionManager, cache: ContextCache) -> SessionContext:
    return cache.context(manager)


def _append_message(manager: SessionManager, message: AgentMessage, cache: ContextCache) -> str:
    entry_id = manager.append_message(message)
    cache.advance(manager)
    return entry_id


async def current_context(parts: RunParts) -> SessionContext:
    """The context at the leaf now (the cache's own object: read it, do not keep or change it); from memory
    when the cache is current, else through the facade."""
    fresh = parts.cache.current(parts.session.manager)
    return fresh if fresh is not None else await parts.session.run(_cached, parts.cache)


async def flush_writes(parts: RunParts) -> int:
    """Write what is buffered (one facade call, none when nothing is), advancing the context cache in it."""
    return await parts.writes.flush(parts.session, parts.cache.advance)


async def snapshot(parts: RunParts) -> TurnState:
    """A new turn snapshot of the live settings and the persisted messages."""
    return await create_turn_state(parts.session, parts.cache, parts.live)


# -- persisting what the loop reports --------------------------------------------------------------------
async def handle_event(parts: RunParts, event: Event) -> None:
    """Persist before notifying: ``message_end`` is stored, then emitted; ``turn_end`` flushes the pending
    writes and makes everything durable, then emits ``save_point``; ``agent_end`` flushes first."""
    kind = event["type"]
    if kind == "message_start" and event["message"].get("role") == "user":
        parts.overflow_attempted = False
    if kind == "message_end":
        message = event["message"]
        # one call: the append and the cache's extension over it (the next snapshot then needs none)
        await parts.session.run(_append_message, message, parts.cache)
        succeeded = message.get("role") == "assistant" and message.get("stopReason") != "error"
        if succeeded:
            parts.overflow_attempted = False
        await parts.bus.emit(event)
        if succeeded and parts.retry_attempt > 0:
            attempt, parts.retry_attempt = parts.retry_attempt, 0
            await parts.bus.emit(ev.auto_retry_end(True, attempt))
        return
    if kind == "turn_end":
        failure: Exception | None = None
        try:
            await parts.bus.emit(event)
        except Exception as exc:  # the save point still happens; the error is raised after it
            failure = exc
        had_pending = len(parts.writes) > 0
        await flush_writes(parts)
        await parts.session.sync()
        if failure is not None:
            raise failure
        await parts.bus.emit(ev.save_point(had_pending))
        return
    if kind == "agent_end":
        await flush_writes(parts)
        await parts.session.sync()
        event = {**event, "willRetry": _will_retry(parts, _last_assistant(event.get("messages") or []))}
    await parts.bus.emit(event)


def _retryable(parts: RunParts, message: AgentMessage | None) -> bool:
    window = parts.live.model.context_window
    return message is not None and parts.retry.enabled and is_retryable_error(message, window)


def _will_retry(parts: RunParts, message: AgentMessage | None) -> bool:
    """What ``agent_end`` says: the run's last reply failed for a passing reason and a retry is left."""
    return _retryable(parts, message) and parts.retry_attempt < parts.retry.max_retries


async def _retry(parts: RunParts, last: AgentMessage, signal: AbortSignal) -> bool:
    """pi's retry step after a run: True when the caller should send the request again (after the wait)."""
    error = last.get("errorMessage")
    if not _retryable(parts, last):
        if last.get("stopReason") == "error" and parts.retry_attempt > 0:  # a different failure ends it
            attempt, parts.retry_attempt = parts.retry_attempt, 0
            await parts.bus.emit(ev.auto_retry_end(False, attempt, error))
        return False
    parts.retry_attempt += 1
    attempt, settings = parts.retry_attempt, parts.retry
    if attempt > settings.max_retries:
        parts.retry_attempt = 0
        await parts.bus.emit(ev.auto_retry_end(False, attempt - 1, error))
        return False
    delay = settings.delay_ms(attempt)
    await parts.bus.emit(ev.auto_retry_start(attempt, settings.max_retries, delay, str(error)))
    if not await wait_or_abort(delay, signal):
        parts.retry_attempt = 0
        await parts.bus.emit(ev.auto_retry_end(False, attempt, "Retry cancelled"))
        return False
    return True


# -- the loop's configuration from the snapshot ------------------------------------------------------------
@dataclass(slots=True)
class _StateRef:
    state: TurnState


def _patch_options(options: StreamOptions, patch: Any) -> StreamOptions:
    """A ``before_provider_request`` patch: field names of ``StreamOptions``; in ``headers`` a ``None`` value
    deletes the key, and ``headers: None`` clears them all."""
    if not isinstance(patch, dict):
        return options
    changes = {k: v for k, v in patch.items() if k != "headers" and hasattr(options, k)}
    result = replace(options, **changes)
    if "headers" in patch:
        if patch["headers"] is None:
            result = replace(result, headers=None)
        else:
            headers = dict(result.headers or {})
            for key, value in patch["headers"].items():
                if value is None:
                    headers.pop(key, None)
                else:
                    headers[key] = value
            result = replace(result, headers=headers or None)
    return result


async def _stream(
    parts: RunParts, ref: _StateRef, model: Model, context: Context, loop: StreamOptions
) -> Any:
    state = ref.state
    options = replace(state.stream_options, signal=loop.signal, reasoning=loop.reasoning)
    if options.session_id is None:
        options = replace(options, session_id=state.session_id)
    bus = parts.bus
    if bus.handles("before_provider_request"):
        event = {"type": "before_provider_request", "model": model, "sessionId": state.session_id}
        options = await bus.chain({**event, "streamOptions": options}, "streamOptions", _patch_options)
    if bus.handles("before_provider_payload"):

        async def on_payload(payload: dict[str, Any]) -> Any:
            event = {"type": "before_provider_payload", "model": model, "payload": payload}
            return await bus.chain(event, "payload", lambda _old, new: new)

        options = replace(options, on_payload=on_payload)
    return parts.stream(model, context, options)


async def _drain(parts: RunParts, which: Literal["steer", "follow_up"]) -> list[AgentMessage]:
    queues = parts.queues
    queue, mode = (
        (queues.steer, queues.steering_mode)
        if which == "steer"
        else (queues.follow_up, queues.follow_up_mode)
    )
    taken = MessageQueues.take(queue, mode)
    if taken:
        try:
            await parts.bus.emit(queues.event())
        except Exception:
            MessageQueues.put_back(queue, taken)
            raise
    return taken


def _loop_config(parts: RunParts, ref: _StateRef) -> LoopConfig:
    state = ref.state
    bus = parts.bus

    async def transform(messages: list[AgentMessage], _signal: AbortSignal | None) -> list[AgentMessage]:
        answer = await bus.hook({"type": "context", "messages": list(messages)})
        replaced = answer.get("messages") if isinstance(answer, dict) else None
        return list(replaced) if replaced is not None else messages

    async def before(
        _assistant: AgentMessage, call: dict[str, Any], args: dict[str, Any], _ctx: AgentContext
    ) -> ToolCallHookResult | None:
        answer = await bus.hook(
            {"type": "tool_call", "toolCallId": call["id"], "toolName": call["name"], "input": args}
        )
        if not isinstance(answer, dict):
            return None
        return ToolCallHookResult(
            bool(answer.get("block")), answer.get("reason"), bool(answer.get("terminate"))
        )

    async def after(
        _assistant: AgentMessage,
        call: dict[str, Any],
        args: dict[str, Any],
        result: ToolResult,
        is_error: bool,
        _ctx: AgentContext,
    ) -> tuple[ToolResult, bool] | None:
        answer = await bus.hook(
            {
                "type": "tool_result",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "input": args,
                "content": result.content,
                "details": result.details,
                "isError": is_error,
            }
        )
        if not isinstance(answer, dict):
            return None
        patched = ToolResult(
            answer.get("content", result.content),
            answer.get("details", result.details),
            bool(answer["terminate"]) if "terminate" in answer else result.terminate,
        )
        return patched, bool(answer["isError"]) if "isError" in answer else is_error

    async def prepare_next_turn(_turn: TurnInfo) -> NextTurn:
        await flush_writes(parts)
        ref.state = await snapshot(parts)
        return NextTurn(ref.state.agent_context(), ref.state.model, ref.state.thinking_level)

    return LoopConfig(
        model=state.model,
        reasoning=None if state.thinking_level == "off" else state.thinking_level,
        stream_options=state.stream_options,
        stream=partial(_stream, parts, ref),
        transform_context=transform if bus.handles("context") else None,
        before_tool_call=before if bus.handles("tool_call") else None,
        after_tool_call=after if bus.handles("tool_result") else None,
        prepare_next_turn=prepare_next_turn,
        get_steering_messages=partial(_drain, parts, "steer"),
        get_follow_up_messages=partial(_drain, parts, "follow_up"),
        tool_execution=parts.tool_execution,
        now=parts.clock,
    )


# -- failures ------------------------------------------------------------------------------------------------
def failure_message(model: Model, error: BaseException, aborted: bool, timestamp: int) -> AgentMessage:
    """The assistant reply that records a run that threw (pi's ``createFailureMessage``)."""
    return assistant_message(
        [{"type": "text", "text": ""}],
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="aborted" if aborted else "error",
        error_message=str(error) or type(error).__name__,
        timestamp=timestamp,
    )


async def _report_failure(
    parts: RunParts, ref: _StateRef, error: Exception, signal: AbortSignal
) -> list[AgentMessage]:
    """Close the turn the error interrupted: unanswered tool calls get error results, then the failure reply
    goes through ``message_end`` (persisted), ``turn_end`` (save point) and ``agent_end``."""
    emit = partial(handle_event, parts)
    pending = unanswered_tool_calls((await current_context(parts)).messages)
    if pending is not None:
        for call in pending[1]:
            closing = tool_result_message(
                str(call.get("id", "")),
                str(call.get("name", "")),
                [{"type": "text", "text": f"Tool call not executed: the run failed ({error})"}],
                is_error=True,
                timestamp=parts.clock(),
                details={},
            )
            await emit(ev.message_start(closing))
            await emit(ev.message_end(closing))
    failure = failure_message(ref.state.model, error, signal.aborted, parts.clock())
    await emit(ev.message_start(failure))
    await emit(ev.message_end(failure))
    await emit(ev.turn_end(failure, []))
    await emit(ev.agent_end([failure]))
    return [failure]


async def _loop(
    parts: RunParts,
    state: TurnState,
    prompts: list[AgentMessage] | None,
    system_prompt: str | None,
    signal: AbortSignal,
) -> list[AgentMessage]:
    """One pass of the agent loop; a throw is reported as a persisted failure reply."""
    ref = _StateRef(state)
    emit = partial(handle_event, parts)
    try:
        config = _loop_config(parts, ref)
        context = state.agent_context(system_prompt)
        if prompts is None:
            return await run_agent_loop_continue(context, config, emit, signal)
        return await run_agent_loop(prompts, context, config, emit, signal)
    except Exception as error:
        try:
            return await _report_failure(parts, ref, error, signal)
        except Exception as failure:
            raise HarnessError(
                f"Agent run failed and failure reporting failed: {error}; {failure}",
                kind="unknown",
                cause=error,
            ) from failure
    finally:
        await flush_writes(parts)


def _last_assistant(messages: list[AgentMessage]) -> AgentMessage | None:
    return next((m for m in reversed(messages) if m.get("role") == "assistant"), None)


def drop_trailing_error(state: TurnState) -> TurnState:
    """The snapshot without its trailing error replies (the in-memory context of a retry; the file keeps
    them). pi drops each failed reply from memory as it retries, so after an overflow's compaction and a
    failed retry of it, both failures go."""
    messages = state.messages
    end = len(messages)
    while (
        end
        and messages[end - 1].get("role") == "assistant"
        and messages[end - 1].get("stopReason") == "error"
    ):
        end -= 1
    if end < len(messages):
        state.messages = messages[:end]
    return state


async def drive(
    parts: RunParts,
    state: TurnState,
    prompts: list[AgentMessage] | None,
    *,
    system_prompt: str | None = None,
) -> AgentMessage | None:
    """Run the loop, then the post-run handling until nothing is left: automatic compaction (an overflow
    retries once), and messages queued meanwhile. Returns the last assistant reply of the prompt."""
    signal = parts.signal or AbortSignal()
    parts.signal = signal
    last: AgentMessage | None = None
    while True:
        added = await _loop(parts, state, prompts, system_prompt, signal)
        last = _last_assistant(added) or last
        if last is None or signal.aborted:
            return last
        if await _retry(parts, last, signal):
            state, prompts, system_prompt = drop_trailing_error(await snapshot(parts)), None, None
            continue
        if signal.aborted:
            return last
        context = await current_context(parts)
        check = check_compaction(
            last,
            model=parts.live.model,
            settings=parts.compaction,
            context_messages=context.messages,
            overflow_attempted=parts.overflow_attempted,
            fresh=True,
        )
        if check is not None:
            if check.will_retry:
                parts.overflow_attempted = True
            parts.phase = "compaction"
            entry = await parts.compactor.run_automatic(check, parts.live.thinking_level, signal)
            parts.phase = "turn"
            if entry is not None and check.will_retry and not signal.aborted:
                state, prompts, system_prompt = drop_trailing_error(await snapshot(parts)), None, None
                continue
        queued = MessageQueues.take(parts.queues.steer, "all") + MessageQueues.take(
            parts.queues.follow_up, "all"
        )
        if not queued or signal.aborted:
            return last
        await parts.bus.emit(parts.queues.event())
        state, prompts, system_prompt = await snapshot(parts), queued, None


async def compact_before_prompt(parts: RunParts, state: TurnState) -> TurnState:
    """pi's pre-prompt check: the last reply already shows the context is (nearly) full; compact first,
    without a retry. Returns the snapshot to prompt on."""
    last = next((m for m in reversed(state.messages) if m.get("role") == "assistant"), None)
    if last is None:
        return state
    check = check_compaction(
        last,
        model=parts.live.model,
        settings=parts.compaction,
        context_messages=state.messages,
        overflow_attempted=False,
        skip_aborted=False,
    )
    if check is None or check.action != "compact":
        return state
    parts.phase = "compaction"
    entry = await parts.compactor.run_automatic(
        CompactionCheck("compact", check.reason), parts.live.thinking_level, parts.signal
    )
    parts.phase = "turn"
    return await snapshot(parts) if entry is not None else state


async def repair_interrupted(
    parts: RunParts, state: TurnState, assistant: AgentMessage, missing: list[dict[str, Any]], note: str
) -> None:
    """Persist results for the unanswered calls of ``assistant``: repeatable tools run again, the others get
    ``note`` (with ``{name}``) as an error result; then the turn ends at a save point."""
    emit = partial(handle_event, parts)
    closing = {**assistant, "content": missing}
    signal = parts.signal or AbortSignal()
    tools = {t.name: t for t in state.tools}
    if assistant.get("stopReason") == "length":
        batch = await fail_truncated_tool_calls(closing, emit, parts.clock)
    else:
        ref = _StateRef(state)
        config = _loop_config(parts, ref)
        hooked = config.before_tool_call

        async def before(
            message: AgentMessage, call: dict[str, Any], args: dict[str, Any], ctx: AgentContext
        ) -> ToolCallHookResult | None:
            tool = tools.get(call["name"])
            if tool is not None and not tool.repeatable:
                return ToolCallHookResult(True, note.format(name=call["name"]))
            return await hooked(message, call, args, ctx) if hooked is not None else None

        config.before_tool_call = before
        context = AgentContext(state.system_prompt, list(state.messages), state.tools)
        batch = await execute_tool_calls(context, closing, config, signal, emit)
    await emit(ev.turn_end(assistant, batch.messages))
