"""The typer application object and the entry point; command modules register themselves on it.

Holds no commands itself beyond wiring, so each command group stays in its own small module.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="sessiontree",
    help="Inspect, branch and compact LLM agent sessions stored as pi-compatible JSONL trees.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_COMMAND_MODULES = (
    "sessiontree.cli.inspect_cmds",
    "sessiontree.cli.demo_cmd",
    "sessiontree.cli.compact_cmds",
)


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
    app()
