"""``sessiontree compact`` and ``sessiontree branch``: compaction and branch summaries from the command line.

Thin shells over the library (``plan_compaction``, ``compact_session``, ``agent.navigation.branch_to``,
``resolve_summarizer``): arguments are checked on a read-only open, then FILE is opened to write; a spinner
shows while a summarizer works, and what was appended is printed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from sessiontree.format.safe_text import safe_text

from ._common import (
    EXIT_USAGE,
    SessionArg,
    emit_json,
    entry_id,
    fail,
    flag,
    handled,
    json_flag,
    open_read,
    open_write,
    report_writes,
    say,
)

if TYPE_CHECKING:
    from ..agent.navigation import BranchMove
    from ..compaction import Summarizer

T = TypeVar("T")

# The defaults of CompactionSettings, spelled out so that --help does not import the compaction package
# (tests/test_cli_help.py checks that they agree).
KEEP_RECENT_TOKENS = 20_000
RESERVE_TOKENS = 16_384

FocusOpt = Annotated[
    str | None,
    typer.Option("--focus", metavar="TEXT", help="What the summary should pay particular attention to."),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="Summarize with this model (provider/id or id; default: $SESSIONTREE_MODEL, else offline).",
    ),
]
OfflineOpt = Annotated[bool, flag("--offline", "Use the built-in offline summarizer (no model, no network).")]


def _summarizer(model: str | None, offline: bool) -> Summarizer:
    from ..compaction import resolve_summarizer

    if model and offline:
        fail("--model and --offline contradict each other: give one of them", EXIT_USAGE)
    try:
        return resolve_summarizer(model, offline=offline)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)


def _run_with_spinner(label: str, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with a spinner on stderr; Ctrl-C cancels it."""
    from rich.console import Console

    from .interrupts import run_async

    with handled(), Console(stderr=True, highlight=False, emoji=False).status(label, spinner="dots"):
        return run_async(work)


def compact_cmd(
    file: SessionArg,
    leaf: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Compact the branch ending at this entry (default: the leaf)."),
    ] = None,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    offline: OfflineOpt = False,
    keep_recent_tokens: Annotated[
        int, typer.Option(metavar="N", help="Approximate tokens of recent history kept verbatim.")
    ] = KEEP_RECENT_TOKENS,
    reserve_tokens: Annotated[
        int,
        typer.Option(metavar="N", help="Head-room for the reply; 80% of it is the summary's output budget."),
    ] = RESERVE_TOKENS,
    as_json: Annotated[
        bool, json_flag("the appended entry (null when there was nothing to compact)")
    ] = False,
) -> None:
    """Condense old history into a summary entry appended to FILE; recent messages stay verbatim (pi's /compact). "Nothing to compact" is not an error: nothing is written and the exit code is 0."""
    from ..compaction import CompactionError, CompactionSettings, compact_session, plan_compaction

    summarizer = _summarizer(model, offline)
    settings = CompactionSettings(reserve_tokens=reserve_tokens, keep_recent_tokens=keep_recent_tokens)
    manager, path = open_read(file)
    target = entry_id(manager, leaf) if leaf is not None else None
    try:
        plan_compaction(manager, settings, leaf_id=target)
    except CompactionError as exc:
        if exc.kind not in ("nothing_to_compact", "already_compacted"):
            raise
        if as_json:
            emit_json(None)
        say(f"{safe_text(str(exc))}: nothing was written.")
        return
    finally:
        manager.close()
    with open_write(path) as writer:
        seen = list(writer.problems)
        entry = _run_with_spinner(
            f"Summarizing with {summarizer.name}…",
            lambda: compact_session(
                writer, summarizer, settings=settings, leaf_id=target, custom_instructions=focus
            ),
        )
        report_writes(writer, seen)
    if as_json:
        emit_json(entry)
        return
    details = entry.get("details") or {}
    say(
        f"Appended compaction {entry['id']} (parent {entry['parentId']}) by {summarizer.name}:\n"
        f"  kept from entry {entry['firstKeptEntryId']} ({len(entry.get('retainedTail') or [])} messages kept)\n"
        f"  tokens before ~{entry['tokensBefore']}, summary {len(entry['summary'])} characters\n"
        f"  files: {len(details.get('readFiles', []))} read, {len(details.get('modifiedFiles', []))} modified"
    )


def _print_move(move: BranchMove, persisted: bool, summarize: bool) -> None:
    say(f"Moved the leaf from {move.old_leaf_id} to {move.new_leaf_id or '(before the first entry)'}.")
    entry = move.summary_entry
    moved = move.new_leaf_id != move.old_leaf_id
    if entry is not None:
        say(
            f"Appended branch_summary {entry['id']} (parent {entry['parentId']}, fromId {entry['fromId']}) "
            f"summarizing {move.entries_abandoned} abandoned entries."
        )
    elif persisted and moved:
        say("Appended a leaf entry recording the move (pi itself does not read leaf entries).")
    elif summarize and moved:
        left = "entry" if move.entries_abandoned == 1 else "entries"
        say(
            f"Nothing to summarize: what is left behind ({move.entries_abandoned} {left}) holds no messages, "
            "so no summary was written, and the move is lost when the command ends (a session file records where "
            "you are only by its last entry). To keep it, run the same command with --persist-leaf (appends "
            "a leaf entry, which sessiontree reads but pi does not)."
        )
    elif moved:
        say(
            "Nothing was written: a session file records where you are only by its last entry, so a bare move "
            "is lost when the command ends. To keep it, run the same command with --summarize (appends a "
            "summary of the branch you leave, at the new position), or with --persist-leaf (appends a leaf "
            "entry, which sessiontree reads but pi does not)."
        )
    else:
        say("Already there: nothing was written.")
    if move.editor_text is not None:
        say("The selected user message is not on the new branch; its text, to send again or change:")
        say(safe_text(move.editor_text, keep_newlines=True))


def branch_cmd(
    file: SessionArg,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="ID",
            help="The entry to move to (id, unique id prefix or label).",
            show_default=False,
        ),
    ],
    summarize: Annotated[
        bool,
        flag("--summarize", "Leave a summary of the abandoned branch at the new position (appends to FILE)."),
    ] = False,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    offline: OfflineOpt = False,
    persist_leaf: Annotated[
        bool, flag("--persist-leaf", "Record a bare move with a leaf entry (appends to FILE; pi ignores it).")
    ] = False,
    as_json: Annotated[bool, json_flag("the move and the appended entry")] = False,
) -> None:
    """Move to another entry of the tree, optionally summarizing the branch being left (pi's /tree). Writes to FILE only with --summarize or --persist-leaf."""
    from ..agent.navigation import branch_to

    if (focus or model or offline) and not summarize:
        fail("--focus, --model and --offline need --summarize", EXIT_USAGE)
    summarizer = _summarizer(model, offline) if summarize else None
    manager, path = open_read(file)
    target = entry_id(manager, to)
    writes = summarize or persist_leaf
    if writes:
        manager.close()
        manager = open_write(path, persist_leaf=persist_leaf)
    label = f"Summarizing the abandoned branch with {summarizer.name}…" if summarizer else "Moving…"
    with manager:
        seen = list(manager.problems)
        move = _run_with_spinner(
            label,
            lambda: branch_to(
                manager, target, summarize=summarize, summarizer=summarizer, custom_instructions=focus
            ),
        )
        if writes:
            report_writes(manager, seen)
    if as_json:
        emit_json(
            {
                "oldLeafId": move.old_leaf_id,
                "newLeafId": move.new_leaf_id,
                "messageText": move.editor_text,
                "summaryEntry": move.summary_entry,
                "written": move.summary_entry is not None
                or (persist_leaf and move.new_leaf_id != move.old_leaf_id),
            }
        )
        return
    _print_move(move, persist_leaf, summarize)
