"""The typer application object and the entry point; command modules register themselves on it.

Holds no commands itself beyond wiring (help, ``--version``, exit codes), so each command group stays in its
own small module. Command modules import the library lazily: ``--help`` and read commands never load the
model layer.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from .. import __version__
from ._common import EXIT_CODES, Group

_HELP = (
    "Inspect, branch, fork and compact LLM agent sessions stored as pi-compatible JSONL trees.\n\n"
    "FILE is a session file, or the id (a unique prefix of 4+ characters will do) or name of a session in "
    "pi's session directory; an entry ID may be an id, a unique id prefix or a label. Commands that change "
    "FILE say so in their help: label, name, compact, branch (with --summarize or --persist-leaf) and "
    "check --repair; fork, clone and export write new files; the others only read."
)

app = typer.Typer(
    name="sessiontree",
    help=_HELP,
    epilog=EXIT_CODES,
    cls=Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_COMMAND_MODULES = (
    "sessiontree.cli.inspect_cmds",
    "sessiontree.cli.check_cmd",
    "sessiontree.cli.edit_cmds",
    "sessiontree.cli.export_cmd",
    "sessiontree.cli.compact_cmds",
    "sessiontree.cli.demo_cmd",
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


def _register() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # a terminal that cannot show a character gets an escape, not a crash
            reconfigure(errors="backslashreplace")
    app()
