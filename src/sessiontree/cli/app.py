"""The typer application object and the entry point; command modules register themselves on it.

Holds no commands itself beyond wiring (help, ``--version``, exit codes), so each command group stays in its
own small module. Command modules import the library lazily: ``--help`` and read commands never load the
model layer.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .. import __version__
from ._common import EXIT_CODES, lazy_group

_HELP = (
    "Inspect, branch, fork and compact LLM agent sessions stored as pi-compatible JSONL trees.\n\n"
    "FILE is a session file, or the id (a unique prefix of 4+ characters will do) or name of a session in "
    "pi's session directory; an entry ID may be an id, a unique id prefix or a label. Commands that change "
    "FILE say so in their help: label, name, compact, branch (with --summarize or --persist-leaf) and "
    "check --repair; fork, clone and export write new files; the others only read."
)

# name -> (module, function): a command is built (typer inspects its parameters) only when it is used, so
# running one command does not pay for the others; ``--help`` builds them all to list them.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("inspect_cmds", "list_cmd"),
    "latest": ("inspect_cmds", "latest_cmd"),
    "tree": ("inspect_cmds", "tree_cmd"),
    "context": ("inspect_cmds", "context_cmd"),
    "show": ("inspect_cmds", "show_cmd"),
    "stats": ("inspect_cmds", "stats_cmd"),
    "check": ("check_cmd", "check_cmd"),
    "fork": ("edit_cmds", "fork_cmd"),
    "clone": ("edit_cmds", "clone_cmd"),
    "label": ("edit_cmds", "label_cmd"),
    "name": ("edit_cmds", "name_cmd"),
    "export": ("export_cmd", "export_cmd"),
    "compact": ("compact_cmds", "compact_cmd"),
    "branch": ("compact_cmds", "branch_cmd"),
    "demo": ("demo_cmd", "demo_cmd"),
    "copy": ("store_cmds", "copy_cmd"),
    "search": ("store_cmds", "search_cmd"),
    "db": ("store_cmds", "db_cmd"),
    "chat": ("chat.command", "chat_cmd"),
    "run": ("run_cmd", "run_cmd"),
    "rpc": ("rpc.command", "rpc_cmd"),
}


app = typer.Typer(
    name="sessiontree",
    help=_HELP,
    epilog=EXIT_CODES,
    cls=lazy_group(COMMANDS),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"sessiontree {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", metavar="", help="Print the version and exit.", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Inspect, branch, fork and compact pi-compatible session files."""


def main() -> None:
    """Console-script entry point."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # a terminal that cannot show a character gets an escape, not a crash
            reconfigure(errors="backslashreplace")
    app()
