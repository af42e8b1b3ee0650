"""``sessiontree rpc``: pi 1.6.0's RPC mode (``pi --mode rpc``) on stdin / stdout, started the way pi's
``RpcClient`` starts pi (``--mode rpc`` is taken and implied; ``--provider P --model M`` or ``--model P/M``).

The command line only: the options become the agent session (``agent.host``), the protocol is ``server``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .._common import EXIT_USAGE, fail, handled, warn
from ..agent_options import AgentArgs, with_agent_options

__all__ = ["rpc_cmd"]


@with_agent_options
def rpc_cmd(
    mode: Annotated[
        str,
        typer.Option(
            "--mode", metavar="rpc", help="Accepted for pi's command line (rpc is the only mode here)."
        ),
    ] = "rpc",
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="Name the session at start.", show_default=False),
    ] = None,
    *,
    args: AgentArgs,
) -> None:
    """Speak pi's RPC protocol on stdin and stdout (JSON lines: commands in; responses and events out), for editors and services that embed the agent; the working directory is the current one. Exit codes: 0 stdin ended; 143 SIGTERM; 129 SIGHUP; 2 the command line is wrong."""
    from ...agent.host import AgentSession, load_config
    from .server import serve

    if mode != "rpc":
        fail(
            f"--mode {mode}: sessiontree rpc speaks only rpc (see sessiontree run for text and json)",
            EXIT_USAGE,
        )
    with handled():
        config = load_config(args.host_options(Path.cwd()))
        for problem in config.resources.diagnostics():
            warn(problem)  # stderr: stdout carries protocol lines only
        agent = AgentSession(config, config.open_session())
        if name is not None and name.strip():
            agent.session.append_session_info(name.strip())
    try:
        import asyncio  # here, not at the top: `sessiontree --help` loads every command's module

        code = asyncio.run(serve(agent))
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    raise typer.Exit(code)
