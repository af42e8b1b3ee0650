"""The chat's slash commands (pi's names): each a few lines over a harness call or a library function.

``/tree`` and ``/resume`` (and ``/fork`` without an id) open the textual pickers. A command that changes the
session waits until no turn runs; Ctrl+C during a summary or a compaction aborts it (the REPL's signal
handler). No command changes the session itself: the harness or a library function does.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontree.format.safe_text import cell_width, one_line, safe_text

from ...errors import SessionError
from ..tui.cells import pad_to_width

if TYPE_CHECKING:
    from .app import ChatApp

__all__ = ["COMMANDS", "KEYS", "run_slash"]

_STOP = object()

KEYS = (
    ("enter", "send; while a turn runs: steer it (delivered after the current tool calls)"),
    ("alt+enter", "while a turn runs: queue a follow-up (sent when the agent would stop); else a new line"),
    ("ctrl+j", "new line"),
    ("ctrl+o", "show a collapsed tool output in full (again: the one before it)"),
    ("ctrl+c", "abort the turn (or clear the line); twice: exit"),
    ("ctrl+d", "exit (on an empty line)"),
    ("↑/↓", "history"),
    ("!cmd / !!cmd", "run a shell command (!! keeps it out of the model's context)"),
)


@dataclass(frozen=True, slots=True)
class Command:
    usage: str
    help: str
    run: Callable[[ChatApp, str], Awaitable[Any]]
    while_busy: bool = False


# -- the tree and other sessions -----------------------------------------------------------------------------
async def _tree(app: ChatApp, _arg: str) -> None:
    from sessiontree.tree.tree_index import preload_entries

    from ...agent.navigation import plan_navigation
    from ..tui.tree_app import TreeNavigator

    manager = app.harness.session
    # The navigator reads every entry and lays out a row for each: a heap of long-lived objects without
    # cycles, which the collector would walk again and again while it grows (half the build time), and
    # then on the screen's first draw (a second on 100k entries). So it is built with the collector
    # paused and kept out of its passes (frozen) while the navigator is open.
    gc.disable()
    try:
        roots = manager.get_tree()
        if not roots:
            app.transcript.notice("The session has no entries yet")
            return
        preload_entries(roots)  # in bulk, not one read per row
        navigator = TreeNavigator(
            roots,
            manager.get_leaf_id(),
            asks_summary=lambda target: bool(plan_navigation(manager, target).entries),
            on_label=app.harness.set_label,
        )
        gc.freeze()
    finally:
        gc.enable()
    try:
        choice = await navigator.run_async()
    finally:
        gc.unfreeze()
    await app.harness.flush_pending_session_writes()
    if choice is None:
        app.transcript.notice("Tree navigation cancelled")
        return
    if choice.target_id == manager.get_leaf_id():
        app.transcript.notice("Already at this point")
        return
    if choice.summarize:
        app.transcript.notice("Summarizing the branch you are leaving… (ctrl+c aborts)")
    move = await app.harness.navigate_tree(choice.target_id, summarize=choice.summarize, focus=choice.focus)
    if move.cancelled:
        app.transcript.notice("Navigation cancelled; nothing was written")
        return
    summary = f"; branch summary {move.summary_entry.get('id')}" if move.summary_entry else ""
    app.transcript.notice(f"── moved to {move.new_leaf_id or 'the start'}{summary} ──")
    app.recap()
    app.footer.refresh(app.harness)
    if move.editor_text:
        app.editor_text = move.editor_text


async def _fork(app: ChatApp, arg: str) -> None:
    from sessiontree.session.lookup import resolve_entry_id

    from ..tui.picker_rows import fork_items

    manager = app.harness.session
    target: str | None
    if arg:
        target = resolve_entry_id(manager, arg)
    else:
        from ..tui.picker_app import Picker

        entries = manager.get_entries()
        if not fork_items(entries):
            app.transcript.notice("No user message to fork from yet")
            return
        target = await Picker(
            "Fork: continue in a new session from before a user message",
            lambda query, _all: fork_items(entries, query),
            empty="No user message matches",
        ).run_async()
        if target is None:
            app.transcript.notice("Fork cancelled")
            return
    result = await app.harness.fork(target)
    app.transcript.notice(f"Forked into {safe_text(app.where())}")
    app.recap()
    app.footer.refresh(app.harness)
    app.editor_text = result.selected_text


async def _clone(app: ChatApp, _arg: str) -> None:
    await app.harness.clone()
    app.transcript.notice(f"Cloned the branch into {safe_text(app.where())}")
    app.footer.refresh(app.harness)


async def _new(app: ChatApp, _arg: str) -> None:
    await app.harness.new_session()
    app.transcript.notice("New session (written with its first message)")
    app.footer.refresh(app.harness)


async def _resume(app: ChatApp, arg: str) -> None:
    from .sessions import open_ref, pick_session

    manager = app.harness.session
    current = manager.get_session_file() or manager.get_session_id()
    ref = arg or await pick_session(app.config.cwd, app.config.store, current)
    if ref is None:
        app.transcript.notice("Resume cancelled")
        return
    if ref in (current, manager.get_session_id()):
        app.transcript.notice("Already in this session")
        return
    await app.switch_to(open_ref(ref, app.config.store))


# -- the session -----------------------------------------------------------------------------------------
async def _name(app: ChatApp, arg: str) -> None:
    if not arg:
        name = app.harness.session.get_session_name()
        app.transcript.notice(
            f"Session name: {one_line(name, 80)}" if name else "The session has no name (/name NAME)"
        )
        return
    await app.harness.set_session_name(arg)
    app.transcript.notice(f"Named the session {one_line(arg, 80)!r}")
    app.footer.refresh(app.harness)


# Entries a label is not meant for when no id is named: they describe the session, not a point in it.
_NOT_LABELLED = frozenset({"label", "session_info", "model_change", "thinking_level_change", "custom"})


def _label_target(app: ChatApp) -> str | None:
    """The last message of the branch (skipping label, name and settings entries at its end)."""
    view = app.harness.session.get_path_view()
    for index in range(len(view.types) - 1, -1, -1):
        if view.types[index] not in _NOT_LABELLED:
            return str(view.ids[index])
    return None


async def _label(app: ChatApp, arg: str) -> None:
    from sessiontree.session.lookup import resolve_entry_id

    manager = app.harness.session
    first, _, rest = arg.partition(" ")
    target: str | None = None
    if first and rest.strip():
        with contextlib.suppress(SessionError):
            target = resolve_entry_id(manager, first)
    text = rest.strip() if target is not None else arg
    if target is None:
        target = _label_target(app)
    if target is None:
        app.transcript.notice("Nothing to label yet")
        return
    if not text:
        current = manager.get_label(target)
        app.transcript.notice(
            f"Label of {target}: {one_line(current, 60)!r} (/label TEXT changes it, /label --clear removes it)"
            if current
            else f"{target} has no label (/label TEXT sets one)"
        )
        return
    clear = text == "--clear"
    await app.harness.set_label(target, None if clear else text)
    app.transcript.notice(
        f"Cleared the label of {target}" if clear else f"Labelled {target} {one_line(text, 60)!r}"
    )


async def _compact(app: ChatApp, arg: str) -> None:
    app.transcript.notice("Compacting… (ctrl+c aborts)")
    await app.harness.compact(arg or None)
    app.footer.refresh(app.harness)


async def _model(app: ChatApp, arg: str) -> None:
    from ...agent.host import choose_model
    from ...llm.types import StreamOptions
    from .preload import preload_provider

    harness = app.harness
    if not arg:
        current = (harness.model.provider, harness.model.id)
        for model in sorted(app.config.registry.all(), key=lambda m: (m.provider, m.id)):
            mark = "●" if (model.provider, model.id) == current else " "
            app.transcript.line(
                f"{mark} {model.provider}/{model.id}  ({tokens_k(model.context_window)} context)"
            )
        if current not in {(m.provider, m.id) for m in app.config.registry.all()}:
            app.transcript.line(f"● {current[0]}/{current[1]}")
        app.transcript.notice("/model PROVIDER/ID switches (from the next request on)")
        return
    choice = choose_model(
        arg,
        app.config.base_url,
        harness.thinking_level,
        settings=app.config.settings,
        registry=app.config.registry,
        source="/model",
    )
    await harness.set_model(choice.model)
    harness.set_stream_options(StreamOptions(api_key=choice.api_key))
    preload_provider(choice.model.api)  # another API's SDK loads while the next line is typed
    app.choice = replace(choice, thinking_level=harness.thinking_level)
    app.transcript.notice(f"Model: {choice.model.provider}/{choice.model.id}")
    app.footer.refresh(harness)


def tokens_k(count: int) -> str:
    from .footer import tokens

    return tokens(count)


async def _thinking(app: ChatApp, arg: str) -> None:
    from ...agent.host import THINKING_LEVELS

    if not arg:
        app.transcript.notice(
            f"Thinking level: {app.harness.thinking_level} (one of {', '.join(THINKING_LEVELS)})"
        )
        return
    if arg not in THINKING_LEVELS:
        app.transcript.error(f"Unknown thinking level {arg!r}: use one of {', '.join(THINKING_LEVELS)}")
        return
    await app.harness.set_thinking_level(arg)  # type: ignore[arg-type]
    model = app.harness.model
    unused = (
        "" if model.reasoning or arg == "off" else f" ({model.provider}/{model.id} does not reason: unused)"
    )
    app.transcript.notice(f"Thinking level: {arg}{unused}")
    app.footer.refresh(app.harness)


async def _session(app: ChatApp, _arg: str) -> None:
    from collections import Counter

    from sessiontree.session.stats import UsageTotals

    from ..context_size import context_tokens

    manager = app.harness.session
    entries = manager.get_entries()
    total = UsageTotals().add(entries)
    children = Counter(e.get("parentId") for e in entries if e.get("parentId") is not None)
    context = manager.build_session_context().messages
    roles = ", ".join(f"{n} {role}" for role, n in sorted(total.by_role.items())) or "none"
    lines = [
        f"File:     {app.where()}",
        f"Id:       {manager.get_session_id()}",
        f"Name:     {manager.get_session_name() or '-'}",
        f"Entries:  {len(entries)} ({len(manager.get_path_view())} on this branch, "
        f"{sum(1 for n in children.values() if n > 1)} branch points, {len(manager.get_labels())} labels)",
        f"Messages: {total.messages} ({roles}); {total.tool_calls} tool calls",
        f"Tokens:   {total.input} in, {total.output} out, {total.cache_read} cache read, "
        f"{total.cache_write} cache write",
        f"Cost:     ${total.cost:.4f}",
        f"Context:  {len(context)} messages, about {context_tokens(context)} tokens of "
        f"{app.harness.model.context_window}",
    ]
    for line in lines:
        app.transcript.line(safe_text(line))


async def _export(app: ChatApp, arg: str) -> None:
    from ...export import export_session
    from ...storage import _fileio

    manager = app.harness.session
    if manager.get_leaf_id() is None:
        app.transcript.notice("Nothing to export yet")
        return
    file = manager.get_session_file()
    stem = Path(file).stem if file else manager.get_session_id()
    target = Path(arg).expanduser() if arg else Path(f"{stem}.html")
    if not target.is_absolute():
        target = app.config.cwd / target
    if target.is_dir():
        target = target / f"{stem}.html"
    fmt = {".md": "md", ".jsonl": "jsonl"}.get(target.suffix.lower(), "html")
    data = export_session(manager, fmt)  # type: ignore[arg-type]
    _fileio.atomic_replace(target, data)
    app.transcript.notice(f"Exported the branch ({fmt}, {len(data)} bytes) to {safe_text(str(target))}")


async def _help(app: ChatApp, _arg: str) -> None:
    width = max(cell_width(c.usage) for c in COMMANDS.values())
    for command in dict.fromkeys(COMMANDS.values()):
        app.transcript.line(f"{pad_to_width(command.usage, width)}  {command.help}")
    app.transcript.line("")
    for key, what in KEYS:
        app.transcript.line(f"{pad_to_width(key, width)}  {what}", "grey62")


async def _quit(_app: ChatApp, _arg: str) -> object:
    return _STOP


_QUIT = Command("/quit", "leave the chat (also /exit)", _quit, while_busy=True)
COMMANDS: dict[str, Command] = {
    "tree": Command("/tree", "navigate the session tree; leave a branch with or without a summary", _tree),
    "fork": Command("/fork [ID]", "continue in a new session from before a user message", _fork),
    "clone": Command("/clone", "continue in a new session holding the current branch", _clone),
    "new": Command("/new", "start a new session", _new),
    "resume": Command("/resume [ID|PATH]", "open another session (a picker threaded by fork)", _resume),
    "name": Command("/name [NAME]", "name the session (or show its name)", _name),
    "label": Command(
        "/label [ID] [TEXT]",
        "label an entry (default: the last message); no text shows its label, --clear removes it",
        _label,
    ),
    "compact": Command("/compact [FOCUS]", "summarize older messages now; FOCUS: what to stress", _compact),
    "model": Command("/model [PROVIDER/ID]", "list models, or switch from the next request on", _model),
    "thinking": Command("/thinking [LEVEL]", "show or set the thinking level", _thinking),
    "session": Command("/session", "file, id, entries, tokens and cost so far", _session, while_busy=True),
    "export": Command("/export [FILE]", "write the branch as HTML (.md, .jsonl by the name)", _export),
    "help": Command("/help", "this list", _help, while_busy=True),
    "quit": _QUIT,
    "exit": _QUIT,
}


async def run_slash(app: ChatApp, text: str) -> bool:
    """Run the slash command in ``text``; False for ``/quit`` (the chat ends)."""
    name, _, arg = text[1:].partition(" ")
    command = COMMANDS.get(name.strip().lower())
    if command is None:
        app.transcript.error(f"Unknown command /{one_line(name, 40)}: /help lists the commands")
        return True
    if app.busy() and not command.while_busy:
        app.transcript.error(f"{command.usage.split()[0]} waits until the turn is over (ctrl+c aborts it)")
        return True
    try:
        return await command.run(app, arg.strip()) is not _STOP
    except (SessionError, LookupError, ValueError, OSError) as error:
        app.transcript.error(str(error))
    except Exception as error:  # a failing command must not end the chat
        app.transcript.error(f"/{name.strip()} failed: {type(error).__name__}: {error}")
    return True
