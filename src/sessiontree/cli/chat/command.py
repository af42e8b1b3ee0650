"""``sessiontree chat``: the command line of the interactive chat; picks the model and the session, then
hands both to the REPL.

Exits 2 with what to set when no model can be used, or when the command line is wrong. Holds no chat logic
of its own: the REPL, the model choice and the session lookups live in their modules.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from .._common import EXIT_USAGE, fail, flag, handled, note, report_problems
from .exiting import exit_now


def chat_cmd(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]",
            help="The session to continue: a .jsonl file, or the id (a unique prefix will do) or name of a "
            "session; with --store, an id in that store. Default: a new session.",
            show_default=False,
        ),
    ] = None,
    continue_: Annotated[
        bool, flag("--continue", "Continue the most recent session of the directory.", "-c")
    ] = False,
    resume: Annotated[
        bool, flag("--resume", "Pick the session to continue in a list (--resume ID opens that one).", "-r")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="PROVIDER/ID",
            help='The model (default: $SESSIONTREE_MODEL, then "model" in the settings file, then pi\'s '
            "defaultProvider/defaultModel, then the first provider with an API key).",
            show_default=False,
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="Send requests to this server instead, e.g. a local OpenAI-compatible one "
            "(http://localhost:11434/v1); the model is then a name on that server.",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            envvar="SESSIONTREE_STORE",
            help="Where sessions live: a directory, jsonl:DIR, sqlite:///PATH or postgresql://… "
            "(default: $SESSIONTREE_STORE, else pi's session directory).",
            show_default=False,
        ),
    ] = None,
    cwd: Annotated[
        Path | None,
        typer.Option(
            "--cwd",
            metavar="DIR",
            help="The directory the agent works in (default: here).",
            show_default=False,
        ),
    ] = None,
    thinking: Annotated[
        str | None,
        typer.Option(
            "--thinking",
            metavar="LEVEL",
            help="Thinking level: off, minimal, low, medium, high or xhigh (default: the settings, else off).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Chat with a coding agent on a pi session: streamed replies, tools, steering, /tree, /fork, /resume, /compact, /export and the rest (/help inside). Settings: $SESSIONTREE_SETTINGS, default settings.json in the user config directory ({"model": "PROVIDER/ID", "baseUrl": URL, "thinkingLevel": LEVEL, "compaction": {...}})."""
    from sessiontree.storage.listing_cache import default_cache_dir

    from ...agent.host import HostOptions, SessionSpec, load_config

    if continue_ and (file is not None or resume):
        fail("--continue takes no FILE and no --resume", EXIT_USAGE)
    work = (cwd or Path.cwd()).expanduser().resolve()
    spec = SessionSpec(ref=file, continue_recent=continue_, store=store)
    with handled():
        try:
            # the chat offers the model every tool (as it always did)
            host = load_config(HostOptions(work, spec, model, None, base_url, thinking, tools=("*",)))
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("sessiontree chat needs a terminal (its input and output are not one)", EXIT_USAGE)
    if not work.is_dir():
        fail(f"--cwd {work}: not a directory", EXIT_USAGE)
    import asyncio

    from .app import ChatApp, ChatConfig
    from .sessions import open_ref, pick_session
    from .slash import run_slash
    from .writer_lock import claim

    with handled():
        if file is None and resume:
            file = asyncio.run(pick_session(work, store))
            if file is None:
                note("Nothing picked; no session opened.")
                return
            manager = open_ref(file, store)
        else:
            manager = host.open_session()
        if file is not None:
            location = manager.get_session_file()
            report_problems(manager, Path(location) if location else Path(file))
        claim(manager)  # a session another chat writes is said so now, not at the first send
    config = ChatConfig(
        cwd=work,
        choice=host.choice,
        settings=host.settings,
        registry=host.registry,
        host=host,
        store=store,
        history_path=default_cache_dir() / "chat-history",
        base_url=host.base_url,
        shell_dir=Path.cwd(),
    )
    os.chdir(work)  # relative paths typed in the chat (/export FILE, !cmd) mean the agent's directory
    try:
        code = asyncio.run(ChatApp(config, manager, run_slash).run())
    except KeyboardInterrupt:
        code = 130
    exit_now(code)
