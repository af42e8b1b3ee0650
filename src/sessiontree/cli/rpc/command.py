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
from ..agent_options import (
    AgentArgs,
    AppendPromptOpt,
    ApproveOpt,
    BaseUrlOpt,
    ContinueOpt,
    ModelOpt,
    NoApproveOpt,
    NoContextFilesOpt,
    NoSessionOpt,
    NoToolsOpt,
    ProviderOpt,
    SessionDirOpt,
    SessionOpt,
    StoreOpt,
    SystemPromptOpt,
    ThinkingOpt,
    ToolsOpt,
)

__all__ = ["rpc_cmd"]


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
    session: SessionOpt = None,
    continue_: ContinueOpt = False,
    no_session: NoSessionOpt = False,
    session_dir: SessionDirOpt = None,
    store: StoreOpt = None,
    model: ModelOpt = None,
    provider: ProviderOpt = None,
    base_url: BaseUrlOpt = None,
    thinking: ThinkingOpt = None,
    tools: ToolsOpt = None,
    no_tools: NoToolsOpt = False,
    system_prompt: SystemPromptOpt = None,
    append_system_prompt: AppendPromptOpt = None,
    no_context_files: NoContextFilesOpt = False,
    approve: ApproveOpt = False,
    no_approve: NoApproveOpt = False,
) -> None:
    """Speak pi's RPC protocol on stdin and stdout (JSON lines: commands in; responses and events out), for editors and services that embed the agent; the working directory is the current one. Exit codes: 0 stdin ended; 143 SIGTERM; 129 SIGHUP; 2 the command line is wrong."""
    from ...agent.host import AgentSession, load_config
    from .server import serve

    if mode != "rpc":
        fail(
            f"--mode {mode}: sessiontree rpc speaks only rpc (see sessiontree run for text and json)",
            EXIT_USAGE,
        )
    args = AgentArgs(
        session, continue_, no_session, session_dir, store, model, provider, base_url, thinking, tools,
        no_tools, system_prompt, tuple(append_system_prompt or ()), no_context_files, approve, no_approve,
    )  # fmt: skip
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
