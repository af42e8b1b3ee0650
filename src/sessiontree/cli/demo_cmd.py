"""``sessiontree demo FILE``: the whole pipeline on a copy of a session, on the embedded defaults.

Tree, context, an offline compaction, a branch with a summary and a re-open check, all through the
library's public functions; the original file is never touched.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule

from .. import SessionManager
from ..agent.navigation import branch_to
from ..compaction.offline import OfflineSummarizer
from ..compaction.session_ops import compact_session
from ..compaction.settings import CompactionSettings
from ..errors import SessionError
from ..llm.convert import convert_to_llm
from ..llm.tokens import estimate_tokens
from .inspect_cmds import context_cmd, tree_cmd

console = Console(highlight=False)


def _tokens(manager: SessionManager) -> int:
    """Estimated tokens of the context (characters / 4, ignoring reported usage)."""
    return sum(estimate_tokens(m) for m in manager.build_session_context().messages)


def _first_user_entry(manager: SessionManager) -> str | None:
    for entry in manager.get_branch():
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user":
            return str(entry["id"])
    return None


def demo_cmd(
    file: Annotated[Path, typer.Argument(help="A session .jsonl file (it is copied, never modified).")],
    keep_recent_tokens: Annotated[int, typer.Option(help="Tokens of recent history kept verbatim.")] = 200,
    workdir: Annotated[
        Path | None, typer.Option(help="Where to put the copy (default: a new temp dir).")
    ] = None,
) -> None:
    """Run the tour: tree → context → compact (offline) → branch with a summary → re-open."""
    if not file.is_file():
        console.print(f"[red]error:[/red] no such session file: {escape(str(file))}")
        raise typer.Exit(2)
    target_dir = workdir or Path(tempfile.mkdtemp(prefix="sessiontree-demo-"))
    target_dir.mkdir(parents=True, exist_ok=True)
    copy = target_dir / file.name
    shutil.copyfile(file, copy)
    console.print(Rule(f"1. The tree of {escape(file.name)} (copied to {escape(str(copy))})"))
    tree_cmd(copy)
    console.print(Rule("2. What the model sees at the leaf"))
    context_cmd(copy)
    try:
        manager = SessionManager.open(copy)
    except SessionError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    with manager:
        before = _tokens(manager)
        console.print(Rule("3. Compact with the offline summarizer (no model, no network)"))
        settings = CompactionSettings(keep_recent_tokens=keep_recent_tokens)
        try:
            entry = anyio.run(lambda: compact_session(manager, OfflineSummarizer(), settings=settings))
        except SessionError as exc:
            console.print(f"compaction skipped: {escape(str(exc))}")
        else:
            console.print(
                Panel(escape(str(entry["summary"])), title=f"compaction {entry['id']}", expand=False)
            )
            console.print(
                f"context: ~{before} tokens before, ~{_tokens(manager)} after; "
                f"{len(entry.get('retainedTail') or [])} messages kept verbatim"
            )
        console.print(Rule("4. Go back to the first request, leaving a summary of the abandoned work"))
        first = _first_user_entry(manager)
        if first is None:
            console.print("no user message to go back to")
        else:
            move = anyio.run(lambda: branch_to(manager, first, summarize=True))
            console.print(
                f"leaf {move.old_leaf_id} → {move.new_leaf_id}; {move.entries_abandoned} entries summarized; "
                f"editor text: {escape(repr(move.editor_text))}"
            )
            if move.summary_entry is not None:
                console.print(
                    Panel(
                        escape(str(move.summary_entry["summary"])),
                        title=f"branch summary {move.summary_entry['id']}",
                        expand=False,
                    )
                )
        messages = manager.build_session_context().messages
        console.print(f"the next request would carry {len(convert_to_llm(messages))} model messages")
        leaf = manager.get_leaf_id()
        expected = manager.build_session_context().to_dict()
    console.print(Rule("5. Re-open from disk"))
    reopened = SessionManager.open(copy, read_only=True)
    same = reopened.get_leaf_id() == leaf and reopened.build_session_context().to_dict() == expected
    console.print(
        f"{escape(str(copy))}: {len(reopened.get_entries())} entries, "
        f"context after re-open identical: {'yes' if same else 'NO'}"
    )
    if reopened.problems:
        for problem in reopened.problems:
            console.print(f"[yellow]{problem.kind}[/yellow] {escape(problem.message)}")
    reopened.close()
    if not same:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the demo command to the application."""
    app.command("demo")(demo_cmd)
