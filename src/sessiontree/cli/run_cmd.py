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
from .agent_options import AgentArgs, with_agent_options

__all__ = ["run_cmd"]


@with_agent_options
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
    *,
    args: AgentArgs,
) -> None:
    """Run the agent on PROMPT without a terminal and print its reply (pi's -p); --mode json prints every event. Exit codes: 0 the reply came; 1 it failed or was aborted (its message on stderr); 2 the command line is wrong."""
    from ..agent.host import AgentSession, load_config
    from .run_input import build_input
    from .run_mode import run_prompts

    if mode not in ("text", "json"):
        fail(f"--mode {mode}: use text or json", EXIT_USAGE)
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
