"""pi 1.6.0's RPC commands over an ``AgentSession``: each checks its fields, does one call and returns the
response ``data`` (``UNDEFINED``: a response without data). ``prompt`` answers by itself once the prompt is
accepted (before the run's first event) and then waits for the run.

A missing or mistyped field is a ``SessionError`` naming it; the server turns every error into a failed
response with the command's name and id.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontree.format.pi_json import UNDEFINED

from ...errors import SessionError

if TYPE_CHECKING:
    from ...agent.host import AgentSession

__all__ = ["ANSWERED", "COMMANDS", "Handler"]

Command = dict[str, Any]
Reply = Callable[[dict[str, Any]], None]
Handler = Callable[["AgentSession", Command, Reply], Awaitable[Any]]
ANSWERED: Any = object()
"""Returned by a handler that sent its response itself."""


def _field(command: Command, name: str, kind: type | tuple[type, ...], what: str, *, required: bool) -> Any:
    value = command.get(name)
    if value is None:
        if required:
            raise SessionError(f"Missing field '{name}' ({what})", kind="invalid_argument")
        return None
    if not isinstance(value, kind) or (kind is str and isinstance(value, bool)):
        raise SessionError(f"Field '{name}' must be {what}", kind="invalid_argument")
    return value


def _text(command: Command, name: str, *, required: bool = True) -> Any:
    return _field(command, name, str, "a string", required=required)


def _flag(command: Command, name: str) -> bool:
    return bool(_field(command, name, bool, "true or false", required=True))


def _images(command: Command) -> list[dict[str, Any]] | None:
    images = _field(command, "images", list, "a list of images", required=False)
    for image in images or ():
        if not (
            isinstance(image, dict)
            and image.get("type") == "image"
            and isinstance(image.get("data"), str)
            and isinstance(image.get("mimeType"), str)
        ):
            raise SessionError(
                "Field 'images' must hold {type: \"image\", data, mimeType} objects", kind="invalid_argument"
            )
    return list(images) if images is not None else None


def _model(model: Any) -> dict[str, Any]:
    from ...agent.host.queries import model_record

    return model_record(model)


# -- prompting -----------------------------------------------------------------------------------------------
async def _prompt(session: AgentSession, command: Command, reply: Reply) -> Any:
    from .framing import failure, success

    message, images = _text(command, "message"), _images(command)
    behavior = _text(command, "streamingBehavior", required=False)
    if behavior is not None and behavior not in ("steer", "followUp"):
        raise SessionError("Field 'streamingBehavior' must be 'steer' or 'followUp'", kind="invalid_argument")
    accepted = False

    def on_accept(disposition: str) -> None:
        nonlocal accepted
        accepted = True
        reply(success(command.get("id"), "prompt", {"disposition": disposition}))

    try:
        await session.prompt(message, images, behavior, on_accept)
    except Exception as error:
        if not accepted:
            reply(failure(command.get("id"), "prompt", str(error)))
        else:  # answered already; the run's own events told the client how it ended
            sys.stderr.write(f"prompt failed after it was accepted: {error}\n")
    return ANSWERED


async def _steer(session: AgentSession, command: Command, _reply: Reply) -> Any:
    return {"disposition": await session.steer(_text(command, "message"), _images(command))}


async def _follow_up(session: AgentSession, command: Command, _reply: Reply) -> Any:
    return {"disposition": await session.follow_up(_text(command, "message"), _images(command))}


async def _abort(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    await session.abort()
    return UNDEFINED


async def _clear_queue(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    return session.clear_queue()


async def _new_session(session: AgentSession, command: Command, _reply: Reply) -> Any:
    return await session.new_session(_text(command, "parentSession", required=False))


# -- state and models ----------------------------------------------------------------------------------------
async def _get_state(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    manager, harness = session.session, session.harness
    file, name = manager.get_session_file(), manager.get_session_name()
    return {
        "model": _model(harness.model),
        "thinkingLevel": harness.thinking_level,
        "isStreaming": session.run_active,
        "isCompacting": session.is_compacting,
        "steeringMode": harness.steering_mode,
        "followUpMode": harness.follow_up_mode,
        "sessionFile": file if file is not None else UNDEFINED,
        "sessionId": manager.get_session_id(),
        "sessionName": name if name is not None else UNDEFINED,
        "autoCompactionEnabled": harness.compaction_settings.enabled,
        "messageCount": len(manager.build_session_context().messages),
        "pendingMessageCount": session.pending_message_count,
    }


async def _set_model(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import set_model

    return _model(await set_model(session, _text(command, "provider"), _text(command, "modelId")))


async def _cycle_model(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import cycle_model

    model = await cycle_model(session)
    if model is None:
        return None
    return {"model": _model(model), "thinkingLevel": session.harness.thinking_level, "isScoped": False}


async def _available_models(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import available

    return {"models": [_model(m) for m in available(session)]}


async def _set_thinking(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import set_thinking_level

    await set_thinking_level(session, _text(command, "level"))
    return UNDEFINED


async def _cycle_thinking(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import cycle_thinking_level

    level = await cycle_thinking_level(session)
    return None if level is None else {"level": level}


async def _thinking_levels(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host import supported_thinking_levels

    return {"levels": supported_thinking_levels(session.harness.model)}


def _queue_mode(which: str) -> Handler:
    async def handler(session: AgentSession, command: Command, _reply: Reply) -> Any:
        from ...agent.host.controls import set_queue_mode

        set_queue_mode(session, which, _text(command, "mode"))
        return UNDEFINED

    return handler


# -- compaction, retry, bash ---------------------------------------------------------------------------------
async def _compact(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import compact

    return await compact(session, _text(command, "customInstructions", required=False))


async def _auto_compaction(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import set_auto_compaction

    set_auto_compaction(session, _flag(command, "enabled"))
    return UNDEFINED


async def _auto_retry(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import set_auto_retry

    set_auto_retry(session, _flag(command, "enabled"))
    return UNDEFINED


async def _abort_retry(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    if session.retrying:
        await session.harness.abort()
    return UNDEFINED


async def _bash(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import run_bash

    exclude = _field(command, "excludeFromContext", bool, "true or false", required=False)
    request_id = command.get("id") if isinstance(command.get("id"), str) else None
    return await run_bash(
        session, _text(command, "command"), exclude_from_context=bool(exclude), request_id=request_id
    )


async def _abort_bash(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import abort_bash

    abort_bash(session)
    return UNDEFINED


# -- the session ---------------------------------------------------------------------------------------------
async def _stats(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.queries import session_stats

    return session_stats(session.session, session.harness.model)


async def _export_html(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...export import export_session
    from ...storage import _fileio

    manager = session.session
    file = manager.get_session_file()
    if file is None:
        raise SessionError("Cannot export in-memory session to HTML", kind="invalid_state")
    if not Path(file).exists():
        raise SessionError("Nothing to export yet - start a conversation first", kind="invalid_state")
    output = _text(command, "outputPath", required=False) or f"pi-session-{Path(file).stem}.html"
    target = Path(output).expanduser()
    _fileio.atomic_replace(
        target if target.is_absolute() else session.cwd / target, export_session(manager, "html")
    )
    return {"path": output}


async def _switch_session(session: AgentSession, command: Command, _reply: Reply) -> Any:
    return await session.switch_session(_text(command, "sessionPath"))


async def _fork(session: AgentSession, command: Command, _reply: Reply) -> Any:
    return await session.fork(_text(command, "entryId"))


async def _clone(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    return await session.clone()


async def _fork_messages(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.queries import fork_messages

    return {"messages": fork_messages(session.session)}


async def _entries(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.queries import entries_since

    since = _text(command, "since", required=False)
    return {"entries": entries_since(session.session, since), "leafId": session.session.get_leaf_id()}


async def _tree(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.queries import tree_record

    return {"tree": tree_record(session.session), "leafId": session.session.get_leaf_id()}


async def _last_text(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    from ...agent.host.queries import last_assistant_text

    text = last_assistant_text(session.session.build_session_context().messages)
    return {"text": text if text is not None else UNDEFINED}


async def _session_name(session: AgentSession, command: Command, _reply: Reply) -> Any:
    from ...agent.host.controls import set_session_name

    await set_session_name(session, _text(command, "name"))
    return UNDEFINED


async def _messages(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    return {"messages": session.session.build_session_context().messages}


async def _commands(session: AgentSession, _command: Command, _reply: Reply) -> Any:
    return {"commands": session.config.resources.commands()}


COMMANDS: dict[str, Handler] = {
    "prompt": _prompt,
    "steer": _steer,
    "follow_up": _follow_up,
    "abort": _abort,
    "clear_queue": _clear_queue,
    "new_session": _new_session,
    "get_state": _get_state,
    "set_model": _set_model,
    "cycle_model": _cycle_model,
    "get_available_models": _available_models,
    "set_thinking_level": _set_thinking,
    "cycle_thinking_level": _cycle_thinking,
    "get_available_thinking_levels": _thinking_levels,
    "set_steering_mode": _queue_mode("steering"),
    "set_follow_up_mode": _queue_mode("followUp"),
    "compact": _compact,
    "set_auto_compaction": _auto_compaction,
    "set_auto_retry": _auto_retry,
    "abort_retry": _abort_retry,
    "bash": _bash,
    "abort_bash": _abort_bash,
    "get_session_stats": _stats,
    "export_html": _export_html,
    "switch_session": _switch_session,
    "fork": _fork,
    "clone": _clone,
    "get_fork_messages": _fork_messages,
    "get_entries": _entries,
    "get_tree": _tree,
    "get_last_assistant_text": _last_text,
    "set_session_name": _session_name,
    "get_messages": _messages,
    "get_commands": _commands,
}
"""Every command pi 1.6.0's RPC mode answers, by type (``extension_ui_response`` is taken by the server)."""
