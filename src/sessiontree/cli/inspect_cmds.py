"""Read-mostly commands: list, tree, context, show, check (with --repair).

Each command opens sessions through the library and renders with rich; none holds session logic.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .. import SessionManager
from .._json import dumps
from ..entries import session_header
from ..errors import SessionError
from ..ids import iso_from_ms, now_ms, uuid7
from ..storage.repair import check_session_file, repair_session_file
from ..views import entry_preview, tree_rows

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

FileArg = Annotated[Path, typer.Argument(help="A session .jsonl file.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _open(path: Path) -> SessionManager:
    try:
        return SessionManager.open(path, read_only=True)
    except SessionError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None


def list_cmd(
    all_: Annotated[
        bool, typer.Option("--all", "-a", help="Sessions of every project, not just this one.")
    ] = False,
    cwd: Annotated[Path, typer.Option(help="Project directory whose sessions to list.")] = Path("."),
    session_dir: Annotated[Path | None, typer.Option(help="A custom session directory.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List sessions, newest first (pi's directories under ~/.pi/agent/sessions by default)."""
    infos = (
        SessionManager.list_all(session_dir) if all_ else SessionManager.list(str(cwd.resolve()), session_dir)
    )
    if as_json:
        console.print_json(json.dumps([i.to_dict() for i in infos]))
        return
    if not infos:
        console.print("No sessions found.")
        return
    table = Table("modified", "name / first message", "msgs", "id", "cwd" if all_ else "file")
    for info in infos:
        title = info.name or info.first_message
        table.add_row(
            info.modified.strftime("%Y-%m-%d %H:%M"),
            escape(title[:60]),
            str(info.message_count),
            info.id[:13],
            escape(info.cwd if all_ else info.path.name),
        )
    console.print(table)


def tree_cmd(file: FileArg, as_json: JsonOpt = False) -> None:
    """Show the session tree: branches, labels, and the active path (from the root to the leaf)."""
    manager = _open(file)
    roots = manager.get_tree()
    rows = tree_rows(roots)
    if as_json:
        console.print(
            dumps(
                {
                    "leafId": manager.get_leaf_id(),
                    "roots": [r.entry.get("id") for r in roots],
                    "nodes": [r.to_dict() for r in rows],
                }
            ),
            soft_wrap=True,
        )
        return
    active = {e.get("id") for e in manager.get_branch()}
    leaf = manager.get_leaf_id()
    for row in rows:
        entry_id = str(row.entry.get("id"))
        marker = "●" if entry_id == leaf else ("│" if entry_id in active else " ")
        label = f" [yellow]\\[{escape(row.label)}][/yellow]" if row.label else ""
        text = escape(entry_preview(row.entry, 90))
        style = "bold" if entry_id in active else "dim"
        console.print(
            f"{'  ' * row.indent}[{style}]{marker} {entry_id}[/{style}]{label} {text}", soft_wrap=True
        )
    name = manager.get_session_name()
    console.print(f"\n{len(rows)} entries, leaf {leaf}" + (f", name {escape(name)!r}" if name else ""))


def context_cmd(
    file: FileArg,
    leaf: Annotated[
        str | None, typer.Option(help="Build the context at this entry instead of the leaf.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show what the model sees at the leaf: messages (after compaction), model, thinking level."""
    manager = _open(file)
    if leaf is not None:
        try:
            manager.branch(leaf)
        except SessionError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from None
    ctx = manager.build_session_context()
    if as_json:
        typer.echo(dumps(ctx.to_dict()))
        return
    model = ctx.model or {}
    console.print(
        f"model: {model.get('provider', '-')}/{model.get('modelId', '-')}   thinking: {ctx.thinking_level}"
        + (f"   tools: {', '.join(ctx.active_tool_names)}" if ctx.active_tool_names is not None else "")
    )
    for i, message in enumerate(ctx.messages):
        role = message.get("role", "?")
        preview = entry_preview({"type": "message", "message": message}, 100)
        if role in ("compactionSummary", "branchSummary"):
            preview = f"{role}: {str(message.get('summary', ''))[:100]}"
        console.print(f"[dim]{i:>4}[/dim] {escape(preview)}", soft_wrap=True)


def show_cmd(file: FileArg, entry_id: Annotated[str, typer.Argument(help="The entry id.")]) -> None:
    """Print one entry as stored (JSON)."""
    manager = _open(file)
    entry = manager.get_entry(entry_id)
    if entry is None:
        err_console.print(f"[red]error:[/red] Entry {escape(entry_id)} not found in {escape(str(file))}")
        raise typer.Exit(1)
    console.print_json(dumps(entry))


def check_cmd(
    file: FileArg,
    repair: Annotated[
        bool, typer.Option("--repair", help="Repair what can be repaired (originals kept aside).")
    ] = False,
) -> None:
    """Report every problem the loader finds; exit 1 when the file is damaged."""
    if repair:
        try:
            report: Any = repair_session_file(
                file, new_header_factory=lambda: session_header(uuid7(), iso_from_ms(now_ms()), os.getcwd())
            )
        except SessionError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from None
        console.print(escape(str(report)))
    problems = check_session_file(file)
    if not problems:
        console.print(f"[green]ok[/green] {escape(str(file))}")
        return
    for problem in problems:  # each message already names the file and the line
        console.print(f"[yellow]{problem.kind}[/yellow] {escape(problem.message)}", soft_wrap=True)
    damaged = [p for p in problems if not p.is_note]
    if damaged:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add these commands to the application."""
    app.command("list")(list_cmd)
    app.command("tree")(tree_cmd)
    app.command("context")(context_cmd)
    app.command("show")(show_cmd)
    app.command("check")(check_cmd)
