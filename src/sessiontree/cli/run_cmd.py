"""``sessiontree run``: pi's print and json modes (``pi -p``, ``pi --mode json``): send the prompts, print the
reply (or every event as JSON lines), exit 0, or 1 when the reply failed.

The command line only: the options become the agent session's configuration (``agent.host``), the prompts
come from ``run_input``, the driving and the output from ``run_mode``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import EXIT_USAGE, fail, flag, handled, warn
from .agent_options import (
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

__all__ = ["run_cmd"]


def run_cmd(
    prompt: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PROMPT...",
            help="The prompts, sent one after another; @FILE attaches a file (its text, or an image); - reads "
            "the prompt from stdin (as does a pipe).",
            show_default=False,
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            metavar="text|json",
            help="text: print the final reply; json: every event as a JSON line, after the session header.",
        ),
    ] = "text",
    verbose: Annotated[
        bool, flag("--verbose", "Show tool calls and their results on stderr (text mode).")
    ] = False,
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
    """Run the agent on PROMPT without a terminal and print its reply (pi's -p); --mode json prints every event. Exit codes: 0 the reply came; 1 it failed or was aborted (its message on stderr); 2 the command line is wrong."""
    from ..agent.host import AgentSession, load_config
    from .run_input import build_input
    from .run_mode import run_prompts

    if mode not in ("text", "json"):
        fail(f"--mode {mode}: use text or json", EXIT_USAGE)
    args = AgentArgs(
        session, continue_, no_session, session_dir, store, model, provider, base_url, thinking, tools,
        no_tools, system_prompt, tuple(append_system_prompt or ()), no_context_files, approve, no_approve,
    )  # fmt: skip
    cwd = Path.cwd()
    with handled():
        config = load_config(args.host_options(cwd))
        for problem in config.resources.diagnostics():
            warn(problem)
        run_input = build_input(prompt or [], cwd)
        if not run_input.prompts:
            fail("no prompt: give PROMPT or @FILE, or pipe it on stdin", EXIT_USAGE)
        agent = AgentSession(config, config.open_session())
    try:
        import asyncio  # here, not at the top: `sessiontree --help` loads every command's module

        code = asyncio.run(run_prompts(agent, run_input, mode=mode, verbose=verbose))
    except KeyboardInterrupt:
        code = 130
    raise typer.Exit(code)
