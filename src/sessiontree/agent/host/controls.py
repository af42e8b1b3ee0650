"""The settings a client changes on an agent session and the commands it runs itself, as pi's RPC offers
them: the model (set, cycle, the available ones), the thinking level (set with pi's clamping, cycle, the
levels), the queue modes, automatic compaction and retry, compaction now, the session's name, and the user's
shell commands (``bash``, streamed as ``bash_execution_update`` and recorded as a ``bashExecution``).

Functions over an ``AgentSession``; each change goes through its harness.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sessiontree.format.pi_json import UNDEFINED

from ...errors import SessionError
from ...llm.types import AbortSignal, Model, StreamOptions, ThinkingLevel
from ..tools.bash import run_command
from ..types import ToolResult
from .agent_session import AgentSession
from .model_choice import available_models, model_api_key
from .thinking import check_thinking_level, clamp_thinking_level, supported_thinking_levels
from .wire import compaction_result

__all__ = [
    "abort_bash",
    "available",
    "compact",
    "cycle_model",
    "cycle_thinking_level",
    "run_bash",
    "set_auto_compaction",
    "set_auto_retry",
    "set_model",
    "set_queue_mode",
    "set_session_name",
    "set_thinking_level",
]

_QUEUE_MODES = ("all", "one-at-a-time")


def available(session: AgentSession) -> list[Model]:
    """The models the session can switch to: those with a key or on this machine, and the one in use."""
    models = available_models(session.config.registry)
    current = session.harness.model
    if not any((m.provider, m.id) == (current.provider, current.id) for m in models):
        models.append(current)
    return models


async def _use(session: AgentSession, model: Model) -> None:
    harness = session.harness
    key = model_api_key(model, session.config.registry)
    await harness.set_model(model)
    session.api_key = key
    session.summarizer.follow(model, key)
    harness.set_stream_options(StreamOptions(api_key=key))
    await set_thinking_level(session, harness.thinking_level)


async def set_model(session: AgentSession, provider: str, model_id: str) -> Model:
    """Use ``provider/model_id`` (one of ``available``) from the next request on."""
    model = next((m for m in available(session) if (m.provider, m.id) == (provider, model_id)), None)
    if model is None:
        raise SessionError(f"Model not found: {provider}/{model_id}", kind="invalid_argument")
    await _use(session, model)
    return model


async def cycle_model(session: AgentSession) -> Model | None:
    """The next available model (wrapping around), or None when there is no other."""
    models = available(session)
    if len(models) < 2:
        return None
    current = session.harness.model
    index = next(
        (i for i, m in enumerate(models) if (m.provider, m.id) == (current.provider, current.id)), -1
    )
    model = models[(index + 1) % len(models)]
    await _use(session, model)
    return model


async def set_thinking_level(session: AgentSession, level: str) -> ThinkingLevel:
    """Use ``level`` clamped to the model's levels (a change is recorded and announced)."""
    effective = clamp_thinking_level(session.harness.model, check_thinking_level(level))
    if effective != session.harness.thinking_level:
        await session.harness.set_thinking_level(effective)
    return effective


async def cycle_thinking_level(session: AgentSession) -> ThinkingLevel | None:
    """The model's next level (wrapping around), or None when the model has no reasoning."""
    model = session.harness.model
    if not model.reasoning:
        return None
    levels = supported_thinking_levels(model)
    current = session.harness.thinking_level
    level = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
    return await set_thinking_level(session, level)


def set_queue_mode(session: AgentSession, which: str, mode: Any) -> None:
    """``steering`` or ``followUp`` delivery: ``all`` or ``one-at-a-time``."""
    if mode not in _QUEUE_MODES:
        raise SessionError(f"Unknown mode {mode!r}: use 'all' or 'one-at-a-time'", kind="invalid_argument")
    if which == "steering":
        session.harness.steering_mode = mode
    else:
        session.harness.follow_up_mode = mode


def set_auto_compaction(session: AgentSession, enabled: bool) -> None:
    harness = session.harness
    harness.set_compaction_settings(replace(harness.compaction_settings, enabled=bool(enabled)))


def set_auto_retry(session: AgentSession, enabled: bool) -> None:
    harness = session.harness
    harness.set_retry_settings(replace(harness.retry_settings, enabled=bool(enabled)))


async def compact(session: AgentSession, custom_instructions: str | None = None) -> dict[str, Any]:
    """Compact now (a run is aborted first); pi's ``CompactionResult``."""
    if session.run_active:
        await session.abort()
    entry = await session.harness.compact(custom_instructions)
    return compaction_result(entry) or {}


async def set_session_name(session: AgentSession, name: str) -> None:
    """Name the session (trimmed; empty is an error) and announce ``session_info_changed``."""
    trimmed = name.strip()
    if not trimmed:
        raise SessionError("Session name cannot be empty", kind="invalid_argument")
    await session.harness.set_session_name(trimmed)
    session.emit({"type": "session_info_changed", "name": session.session.get_session_name()})


async def run_bash(
    session: AgentSession, command: str, *, exclude_from_context: bool = False, request_id: str | None = None
) -> dict[str, Any]:
    """Run ``command`` in the session's directory, streaming ``bash_execution_update {id, delta}``, and record
    it as a ``bashExecution`` message (held back while a run goes on); pi's ``BashResult``."""
    signal = AbortSignal()
    session.bash_signals.add(signal)
    sent = ""

    def send(text: str) -> None:
        nonlocal sent
        delta = text[len(sent) :] if text.startswith(sent) else text
        sent = text
        if delta:
            session.emit({"type": "bash_execution_update", "id": request_id or UNDEFINED, "delta": delta})

    async def on_update(partial: ToolResult) -> None:
        send("".join(str(b.get("text") or "") for b in partial.content if b.get("type") == "text"))

    try:
        run = await run_command(session.cwd, command, signal=signal, on_update=on_update)
    finally:
        session.bash_signals.discard(signal)
    output = run.shown_output
    send(run.output)
    message = run.message(
        command, timestamp=session.session.clock(), exclude_from_context=exclude_from_context
    )
    await session.harness.append_message(message)
    return {
        "output": output,
        "exitCode": run.exit_code if run.exit_code is not None else UNDEFINED,
        "cancelled": run.outcome != "exit",
        "truncated": run.truncation.truncated,
        "fullOutputPath": run.full_output_path or UNDEFINED,
    }


def abort_bash(session: AgentSession) -> None:
    for signal in list(session.bash_signals):
        signal.abort()
