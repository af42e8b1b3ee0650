"""``sessiontree demo [FILE]``: the whole pipeline on a copy of a session (the shipped example by default).

Tree, context, an offline compaction, a branch with a summary and a re-open check, all through the
library's public functions; the original file is never touched and the temporary copy is removed afterwards
(kept, and named, with ``--workdir``).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sessiontree.format.safe_text import safe_text

from ._common import EXIT_FAILED, StoreTarget, fail, handled, say, session_path, without_store

if TYPE_CHECKING:
    from .. import SessionManager

EXAMPLE = "coding-session.jsonl"


def example_session() -> Path:
    """The example session shipped inside the package (a coding session with branches and a compaction)."""
    from importlib import resources

    return Path(str(resources.files("sessiontree") / "data" / EXAMPLE))


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def _tokens(manager: SessionManager) -> int:
    """The context's tokens as the next request would carry them (after a compaction: estimated)."""
    from .context_size import context_tokens

    return context_tokens(manager.build_session_context().messages)


def _first_user_entry(manager: SessionManager) -> str | None:
    for entry in manager.get_branch():
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user":
            return str(entry["id"])
    return None


def _panel(title: str, body: str) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    Console(highlight=False, emoji=False).print(
        Panel(Text(safe_text(body, keep_newlines=True)), title=Text(title), expand=False)
    )


def _step(title: str) -> None:
    from rich.console import Console
    from rich.rule import Rule
    from rich.text import Text

    sys.stdout.flush()
    Console(highlight=False, emoji=False).print(Rule(Text(title)))


def demo_cmd(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]",
            help="A session file (copied, never modified); default: the shipped example.",
            show_default=False,
        ),
    ] = None,
    keep_recent_tokens: Annotated[
        int, typer.Option(metavar="N", help="Tokens of recent history kept verbatim.")
    ] = 200,
    workdir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Put the copy here and keep it (default: a temporary directory, removed at the end).",
        ),
    ] = None,
) -> None:
    """Run the tour on a copy: tree → context → compact (offline) → branch with a summary → re-open."""
    import anyio

    from .. import SessionManager
    from ..agent.navigation import branch_to
    from ..compaction.offline import OfflineSummarizer
    from ..compaction.session_ops import compact_session
    from ..compaction.settings import CompactionSettings
    from ..errors import SessionError
    from ..llm.convert import convert_to_llm
    from .inspect_cmds import context_cmd, tree_cmd

    # FILE may be a session in a --store; the shipped example is a file, and the store is never opened for it
    source = session_path(file) if file is not None else example_session()
    if not isinstance(source, StoreTarget) and not source.is_file():
        fail(f"{source}: the example session is missing from this installation", EXIT_FAILED)
    temporary = workdir is None
    target_dir = Path(tempfile.mkdtemp(prefix="sessiontree-demo-")) if workdir is None else workdir
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        name = f"{source.session_id}.jsonl" if isinstance(source, StoreTarget) else source.name
        copy = target_dir / name
        with handled():
            if isinstance(source, StoreTarget):  # a database session: its exact lines, as a file
                from ..session.copying import copy_session

                copy_session(f"{source.url}#{source.session_id}", str(copy))
            else:
                shutil.copyfile(source, copy)
        _step(f"1. The tree of {name} (a copy in {target_dir})")
        with without_store():  # the tour runs on its copy, a file
            tree_cmd(str(copy))
            _step("2. What the model sees at the leaf")
            context_cmd(str(copy))
        with handled():
            manager = SessionManager.open(copy)
        with manager:
            before = _tokens(manager)
            _step("3. Compact with the offline summarizer (no model, no network)")
            settings = CompactionSettings(keep_recent_tokens=keep_recent_tokens)
            try:
                entry = anyio.run(lambda: compact_session(manager, OfflineSummarizer(), settings=settings))
            except SessionError as exc:
                say(f"compaction skipped: {safe_text(str(exc))}")
            else:
                _panel(f"compaction {entry['id']}", str(entry["summary"]))
                kept = len(entry.get("retainedTail") or [])
                say(
                    f"context: ~{before} tokens before, ~{_tokens(manager)} after; "
                    f"{_plural(kept, 'message')} kept verbatim"
                )
            _step("4. Go back to the first request, leaving a summary of the abandoned work")
            first = _first_user_entry(manager)
            if first is None:
                say("no user message to go back to")
            else:
                move = anyio.run(lambda: branch_to(manager, first, summarize=True))
                say(
                    f"leaf {move.old_leaf_id} → {move.new_leaf_id or '(before the first entry)'}; "
                    f"{_plural(move.entries_abandoned, 'entry', 'entries')} "
                    "summarized"
                )
                if move.editor_text is not None:
                    say(f"the request to send again: {safe_text(move.editor_text)!r}")
                if move.summary_entry is not None:
                    _panel(f"branch summary {move.summary_entry['id']}", str(move.summary_entry["summary"]))
            messages = manager.build_session_context().messages
            say(f"the next request would carry {_plural(len(convert_to_llm(messages)), 'model message')}")
            leaf = manager.get_leaf_id()
            expected = manager.build_session_context().to_dict()
        _step("5. Re-open from disk")
        with handled():
            reopened = SessionManager.open(copy, read_only=True)
        same = reopened.get_leaf_id() == leaf and reopened.build_session_context().to_dict() == expected
        say(
            f"{safe_text(str(copy))}: {_plural(len(reopened.get_entries()), 'entry', 'entries')}, "
            f"context after re-open identical: {'yes' if same else 'NO'}"
        )
        for problem in reopened.problems:
            say(f"{problem.kind} {safe_text(problem.message)}")
        reopened.close()
    finally:
        if temporary:
            shutil.rmtree(target_dir, ignore_errors=True)
    if temporary:
        say(f"(the copy in {target_dir} was removed; --workdir DIR keeps it)")
    else:
        say(f"(the copy is kept in {safe_text(str(target_dir))})")
    if not same:
        raise typer.Exit(EXIT_FAILED)
