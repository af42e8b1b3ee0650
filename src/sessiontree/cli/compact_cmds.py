"""``sessiontree compact`` and ``sessiontree branch``: compaction and branch summaries from the command line.

Thin shells over ``sessiontree.compaction`` (``compact_session``, ``branch_to``, ``resolve_summarizer``);
they parse options, show a spinner while a summarizer works, and print what was appended.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from .. import SessionManager
from .._json import dumps
from ..agent.navigation import BranchMove, branch_to
from ..compaction import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    Summarizer,
    compact_session,
    resolve_summarizer,
)
from ..errors import SessionError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
T = TypeVar("T")

FileArg = Annotated[Path, typer.Argument(help="A session .jsonl file.", show_default=False)]
FocusOpt = Annotated[
    str | None, typer.Option("--focus", help="What the summary should pay particular attention to.")
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Summarize with this model (provider/id or id; default: $SESSIONTREE_MODEL, else offline).",
    ),
]
OfflineOpt = Annotated[
    bool, typer.Option("--offline", help="Use the built-in offline summarizer (no model, no network).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the appended entry as JSON.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def _summarizer(model: str | None, offline: bool) -> Summarizer:
    try:
        return resolve_summarizer(model, offline=offline)
    except ValueError as exc:
        raise _fail(str(exc)) from None


def _open(path: Path, **options: Any) -> SessionManager:
    if not path.is_file():
        raise _fail(f"No such session file: {path}")
    try:
        return SessionManager.open(path, **options)
    except SessionError as exc:
        raise _fail(str(exc)) from None


def _run_with_spinner(label: str, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with a spinner; Ctrl-C cancels it (nothing is written then)."""
    try:
        with console.status(label, spinner="dots"):
            return anyio.run(work)
    except KeyboardInterrupt:
        raise _fail("Cancelled; nothing was written.", 130) from None
    except SessionError as exc:
        raise _fail(str(exc)) from None


def compact_cmd(
    file: FileArg,
    leaf: Annotated[
        str | None,
        typer.Option("--leaf", help="Compact the branch ending at this entry (default: the leaf)."),
    ] = None,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    offline: OfflineOpt = False,
    keep_recent_tokens: Annotated[
        int, typer.Option(help="Approximate tokens of recent history kept verbatim.")
    ] = DEFAULT_COMPACTION_SETTINGS.keep_recent_tokens,
    reserve_tokens: Annotated[
        int, typer.Option(help="Head-room for the reply; 80% of it is the summary's output budget.")
    ] = DEFAULT_COMPACTION_SETTINGS.reserve_tokens,
    as_json: JsonOpt = False,
) -> None:
    """Condense old history into a summary entry; recent messages stay verbatim (pi's /compact)."""
    summarizer = _summarizer(model, offline)
    settings = CompactionSettings(reserve_tokens=reserve_tokens, keep_recent_tokens=keep_recent_tokens)
    with _open(file) as manager:
        entry = _run_with_spinner(
            f"Summarizing with {summarizer.name}…",
            lambda: compact_session(
                manager, summarizer, settings=settings, leaf_id=leaf, custom_instructions=focus
            ),
        )
    if as_json:
        console.print(dumps(entry), soft_wrap=True)
        return
    details = entry.get("details") or {}
    console.print(
        f"Appended compaction [bold]{entry['id']}[/bold] (parent {entry['parentId']}) by {summarizer.name}:\n"
        f"  kept from entry {entry['firstKeptEntryId']} ({len(entry.get('retainedTail') or [])} messages kept)\n"
        f"  tokens before ~{entry['tokensBefore']}, summary {len(entry['summary'])} characters\n"
        f"  files: {len(details.get('readFiles', []))} read, {len(details.get('modifiedFiles', []))} modified"
    )


def _print_move(move: BranchMove, persisted: bool) -> None:
    console.print(
        f"Moved the leaf from {move.old_leaf_id} to {move.new_leaf_id or '(before the first entry)'}."
    )
    entry = move.summary_entry
    if entry is not None:
        console.print(
            f"Appended branch_summary [bold]{entry['id']}[/bold] (parent {entry['parentId']}, "
            f"fromId {entry['fromId']}) summarizing {move.entries_abandoned} abandoned entries."
        )
    elif not persisted and move.new_leaf_id != move.old_leaf_id:
        console.print(
            "Nothing was written: pi's format keeps the leaf at the last entry, so a bare move is not "
            "recorded. Use --summarize, or --persist-leaf to write a leaf entry."
        )
    if move.editor_text is not None:
        console.print(f"Text of the selected message (to edit and send again):\n{escape(move.editor_text)}")


def branch_cmd(
    file: FileArg,
    to: Annotated[str, typer.Option("--to", help="The entry to move to.", show_default=False)],
    summarize: Annotated[
        bool, typer.Option("--summarize", help="Leave a summary of the abandoned branch at the new position.")
    ] = False,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    offline: OfflineOpt = False,
    persist_leaf: Annotated[
        bool, typer.Option("--persist-leaf", help="Record a bare move with a leaf entry (harness format).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Move to another entry of the tree, optionally summarizing the branch being left (pi's /tree)."""
    if focus and not summarize:
        raise _fail("--focus needs --summarize")
    summarizer = _summarizer(model, offline) if summarize else None
    label = f"Summarizing the abandoned branch with {summarizer.name}…" if summarizer else "Moving…"
    with _open(file, persist_leaf=persist_leaf) as manager:
        move = _run_with_spinner(
            label,
            lambda: branch_to(
                manager, to, summarize=summarize, summarizer=summarizer, custom_instructions=focus
            ),
        )
    if as_json:
        console.print(
            dumps(
                {
                    "oldLeafId": move.old_leaf_id,
                    "newLeafId": move.new_leaf_id,
                    "editorText": move.editor_text,
                    "summaryEntry": move.summary_entry,
                }
            ),
            soft_wrap=True,
        )
        return
    _print_move(move, persist_leaf)


def register(app: typer.Typer) -> None:
    """Add ``compact`` and ``branch`` to the application."""
    app.command("compact")(compact_cmd)
    app.command("branch")(branch_cmd)
