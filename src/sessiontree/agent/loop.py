"""The agent loop (pi's ``runAgentLoop``): prompt, stream a reply, run its tools, repeat while there are tool
calls or queued messages, and report every step as an event.

A turn is one assistant reply plus its tool round. Every ``emit`` is awaited before the loop goes on, so
listeners run one at a time and before the next step. The loop holds no session: it works on the
``AgentContext`` it is given and persists nothing (the harness stores what ``message_end`` reports).
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

from sessiontree.format.ids import now_ms

from ..llm.convert import convert_to_llm
from ..llm.stream import stream as llm_stream
from ..llm.types import AbortSignal, Context
from . import events as ev
from .tool_calls import execute_tool_calls, fail_truncated_tool_calls
from .types import AgentContext, EventSink, LoopConfig, TurnInfo

__all__ = ["run_agent_loop", "run_agent_loop_continue"]

AgentMessage = dict[str, Any]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def run_agent_loop(
    prompts: list[AgentMessage],
    context: AgentContext,
    config: LoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Start a run with ``prompts`` appended to ``context``; returns every message the run added."""
    new_messages = list(prompts)
    current = AgentContext(context.system_prompt, [*context.messages, *prompts], context.tools)
    await emit(ev.agent_start())
    await emit(ev.turn_start())
    for prompt in prompts:
        await emit(ev.message_start(prompt))
        await emit(ev.message_end(prompt))
    await _run_loop(current, new_messages, config, signal, emit)
    return new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: LoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Continue from ``context`` without a new prompt (retries, resumed runs): its last message must not be
    an assistant reply."""
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    if context.messages[-1].get("role") == "assistant":
        raise ValueError("Cannot continue from message role: assistant")
    new_messages: list[AgentMessage] = []
    current = AgentContext(context.system_prompt, list(context.messages), context.tools)
    await emit(ev.agent_start())
    await emit(ev.turn_start())
    await _run_loop(current, new_messages, config, signal, emit)
    return new_messages


async def _poll(getter: Any) -> list[AgentMessage]:
    return list(await getter()) if getter is not None else []


async def _run_loop(
    context: AgentContext,
    new_messages: list[AgentMessage],
    config: LoopConfig,
    signal: AbortSignal | None,
    emit: EventSink,
) -> None:
    last_turn: TurnInfo | None = None
    pending = await _poll(config.get_steering_messages)
    while True:
        more_tool_calls = True
        while more_tool_calls or pending:
            if last_turn is not None:
                if config.prepare_next_turn is not None:
                    nxt = await config.prepare_next_turn(last_turn)
                    if nxt is not None:
                        context = nxt.context or context
                        config = replace(
                            config,
                            model=nxt.model or config.model,
                            reasoning=config.reasoning
                            if nxt.thinking_level is None
                            else (None if nxt.thinking_level == "off" else nxt.thinking_level),
                        )
                # Preparing may take long: pick up steering queued meanwhile, one poll per turn.
                if not pending:
                    pending = await _poll(config.get_steering_messages)
                await emit(ev.turn_start())
            for message in pending:
                await emit(ev.message_start(message))
                await emit(ev.message_end(message))
                context.messages.append(message)
                new_messages.append(message)
            pending = []

            reply = await _stream_reply(context, config, signal, emit)
            new_messages.append(reply)
            if reply.get("stopReason") in ("error", "aborted"):
                await emit(ev.turn_end(reply, []))
                await emit(ev.agent_end(new_messages))
                return

            has_calls = any(
                isinstance(b, dict) and b.get("type") == "toolCall" for b in reply.get("content") or []
            )
            results: list[AgentMessage] = []
            more_tool_calls = False
            if has_calls:
                if reply.get("stopReason") == "length":
                    batch = await fail_truncated_tool_calls(reply, emit, config.now or now_ms)
                else:
                    batch = await execute_tool_calls(context, reply, config, signal, emit)
                results = batch.messages
                more_tool_calls = not batch.terminate
                context.messages.extend(results)
                new_messages.extend(results)

            await emit(ev.turn_end(reply, results))
            last_turn = TurnInfo(reply, results, context, new_messages)
            if config.should_stop_after_turn is not None and await config.should_stop_after_turn(last_turn):
                await emit(ev.agent_end(new_messages))
                return
            pending = await _poll(config.get_steering_messages)

        follow_ups = await _poll(config.get_follow_up_messages)
        if not follow_ups:
            break
        pending = follow_ups
    await emit(ev.agent_end(new_messages))


async def _stream_reply(
    context: AgentContext, config: LoopConfig, signal: AbortSignal | None, emit: EventSink
) -> AgentMessage:
    """One request: ``transform_context`` then ``convert_to_llm``, then stream the reply into the context."""
    messages = context.messages
    if config.transform_context is not None:
        messages = await _maybe_await(config.transform_context(messages, signal))
    convert = config.convert_to_llm or convert_to_llm
    request = Context(
        messages=await _maybe_await(convert(messages)),
        system_prompt=context.system_prompt,
        tools=[tool.spec() for tool in context.tools],
    )
    options = replace(config.stream_options, signal=signal, reasoning=config.reasoning)
    response = await _maybe_await((config.stream or llm_stream)(config.model, request, options))

    partial: AgentMessage | None = None
    async for event in response:
        if event.type == "start":
            partial = event.partial
            context.messages.append(partial)
            await emit(ev.message_start(dict(partial)))
        elif event.type in ("done", "error"):
            break
        elif partial is not None:
            await emit(ev.message_update(dict(event.partial), event))
    final: AgentMessage = await response.result()
    if partial is not None:
        context.messages[-1] = final
    else:
        context.messages.append(final)
        await emit(ev.message_start(dict(final)))
    await emit(ev.message_end(final))
    return final
