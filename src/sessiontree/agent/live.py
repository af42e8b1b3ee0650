"""Changing the harness's live settings (model, thinking level, tools) and keeping them and the session's
path in agreement: the write each change records, the event it announces, the restore after navigation.

Works on the ``RunParts`` of a harness; ``write`` is the one place a synchronous caller's write goes out (at
once when idle on a local store, else into the write buffer).
"""

from __future__ import annotations

from typing import Any

from ..llm.types import Model, ThinkingLevel
from .bus import Posted, hook_error
from .run import RunParts, current_context, snapshot
from .turn_state import TurnState
from .types import AgentTool, HarnessError

__all__ = [
    "apply_tools",
    "change_model",
    "change_thinking_level",
    "record_settings",
    "restore_settings",
    "write",
]


def write(parts: RunParts, kind: str, *args: Any) -> None:
    """Queue a write; when idle on a local store, write it (and anything queued before it) now."""
    parts.writes.push(kind, *args)
    if parts.phase == "idle" and not parts.session.remote:
        try:
            parts.session.run_now(parts.writes.apply_all)
        except Exception as error:
            raise HarnessError(str(error), kind="session", cause=error) from error


def change_model(parts: RunParts, model: Model) -> Posted:
    """Use ``model`` from the next request on; a different model is recorded as a ``model_change``."""
    live = parts.live
    previous = live.model
    parts.models[(model.provider, model.id)] = model
    if (model.provider, model.id) != (previous.provider, previous.id):
        write(parts, "model_change", model.provider, model.id)
    live.model = model
    return parts.bus.post(
        {"type": "model_update", "model": model, "previousModel": previous, "source": "set"}
    )


def change_thinking_level(parts: RunParts, level: ThinkingLevel) -> Posted:
    """Use ``level`` from the next request on; a different level is recorded as a ``thinking_level_change``."""
    live = parts.live
    previous = live.thinking_level
    if level != previous:
        write(parts, "thinking_level_change", level)
    live.thinking_level = level
    return parts.bus.post({"type": "thinking_level_update", "level": level, "previousLevel": previous})


def apply_tools(parts: RunParts, by_name: dict[str, AgentTool], active: list[str], source: str) -> Posted:
    """Install tools and active names (checked by the caller); ``set`` records a changed active list."""
    live = parts.live
    event = {
        "type": "tools_update",
        "toolNames": list(by_name),
        "previousToolNames": list(live.tools),
        "activeToolNames": list(active),
        "previousActiveToolNames": list(live.active_tool_names),
        "source": source,
    }
    if source == "set" and active != live.active_tool_names:
        write(parts, "active_tools_change", list(active))
    live.tools, live.active_tool_names = dict(by_name), list(active)
    return parts.bus.post(event)


async def record_settings(parts: RunParts, state: TurnState) -> TurnState:
    """Before a run: record the live settings on the path where they differ from it, so navigation can
    restore them later (SPEC A2); returns a new snapshot when something was written."""
    live, recorded, session = parts.live, state.settings, parts.session
    wrote = False
    if recorded.model != {"provider": live.model.provider, "modelId": live.model.id}:
        await session.append_model_change(live.model.provider, live.model.id)
        wrote = True
    if (recorded.thinking_level or "off") != live.thinking_level:
        await session.append_thinking_level_change(live.thinking_level)
        wrote = True
    names = recorded.active_tool_names
    if (list(live.tools) if names is None else names) != live.active_tool_names:
        await session.append_active_tools_change(list(live.active_tool_names))
        wrote = True
    return await snapshot(parts) if wrote else state


async def restore_settings(parts: RunParts) -> None:
    """After navigation: the live model, thinking level and active tools become the new path's (SPEC A2).

    A model is restored when the harness knows it (the initial one, ``set_model``'s, ``models=``); an empty
    path records nothing and leaves the live settings as they are.
    """
    if await parts.session.leaf_id() is None:
        return
    live, bus = parts.live, parts.bus
    recorded = await current_context(parts)
    ref = recorded.model or {}
    model = parts.models.get((str(ref.get("provider")), str(ref.get("modelId"))))
    if model is not None and model is not live.model:
        previous, live.model = live.model, model
        bus.post({"type": "model_update", "model": model, "previousModel": previous, "source": "restore"})
    level: ThinkingLevel = recorded.thinking_level or "off"
    if level != live.thinking_level:
        previous_level, live.thinking_level = live.thinking_level, level
        bus.post({"type": "thinking_level_update", "level": level, "previousLevel": previous_level})
    names = recorded.active_tool_names
    active = [n for n in (list(live.tools) if names is None else names) if n in live.tools]
    if active != live.active_tool_names:
        apply_tools(parts, live.tools, active, "restore")
    try:
        await bus.deliver_posted()
    except Exception as error:
        raise hook_error(error) from error
