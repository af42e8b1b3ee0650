"""Read-only commands: list, latest, tree, context, show, stats. None of them changes a file.

Each opens sessions read-only through the library and renders the result; session text goes through the
display-safe helpers and ``--json`` prints plain JSON.
"""

from __future__ import annotations

import gc
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sessiontree.format.safe_text import cell_width, cut_to_width, one_line, safe_text

if TYPE_CHECKING:
    from sessiontree.storage.session_dirs import SessionInfo

from ._common import (
    EXIT_FAILED,
    SessionArg,
    Styler,
    current_store,
    emit_json,
    emit_json_list,
    entry_id,
    fail,
    flag,
    handled,
    json_flag,
    open_read,
    say,
    say_lines,
    terminal_width,
)

LimitOpt = Annotated[
    int | None, typer.Option("--limit", metavar="N", min=0, help="Show at most N rows.", show_default=False)
]


def list_cmd(
    all_: Annotated[bool, flag("--all", "Sessions of every project, not just this one.", "-a")] = False,
    cwd: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The project whose sessions to list (default: this directory)."),
    ] = None,
    session_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="List the sessions in this directory instead of pi's."),
    ] = None,
    paths: Annotated[bool, flag("--paths", "Print only the sessions' paths, one per line.")] = False,
    no_cache: Annotated[
        bool, flag("--no-cache", "Read every file; do not use or update the listing cache.")
    ] = False,
    as_json: Annotated[bool, json_flag("the sessions (pi's SessionInfo fields)")] = False,
) -> None:
    """List sessions, newest first: this project's in pi's session directory (~/.pi/agent/sessions).

    CHANGED is when the session last changed (its last entry, or its file or header when later: a fork made
    today shows today); ID is the shortest prefix of the session id that is unique in the listing (at least
    8 characters), which every command accepts. --json gives pi's SessionInfo fields unchanged.
    """
    from sessiontree.storage.listing_cache import list_sessions, session_dirs

    from .progress import listing_progress

    if session_dir is not None:
        _require_dir(session_dir)
    store = current_store()
    if store is not None and session_dir is None:
        from sessiontree.session.store_access import shared_repo

        with handled():
            repo = shared_repo(store)
            infos = repo.list(None if all_ else str((cwd or Path.cwd()).resolve()))
        dirs: list[Path] = []
        where_store = getattr(repo, "display", repo.url)
        if not all_:  # a store holds every project's sessions: say which project was asked for
            where_store += f" for {(cwd or Path.cwd()).resolve()} (--all lists every project's)"
    else:
        with handled(), listing_progress() as progress:
            dirs = session_dirs(str(cwd) if cwd is not None else None, session_dir, all_projects=all_)
            listing = list_sessions(dirs, on_progress=progress, use_cache=not no_cache, processes=True)
        infos = listing.infos
        where_store = None
    if as_json:
        emit_json_list(i.to_dict() for i in infos)
        return
    if paths:
        say_lines([safe_text(str(i.path)) for i in infos])
        return
    if not infos:
        where = safe_text(where_store) if where_store else ", ".join(safe_text(str(d)) for d in dirs)
        say(f"No sessions found in {where or '(no project directories)'}.")
        return
    from sessiontree.session.lookup import shortest_unique_prefixes

    style = Styler(sys.stdout)
    width = terminal_width()
    title_cells = max(20, min(60, width - 80))
    prefixes = shortest_unique_prefixes(i.id for i in infos)
    id_cells = max(8, *(cell_width(safe_text(p)) for p in prefixes.values()))
    changed = {id(i): last_changed(i) for i in infos}
    infos = sorted(infos, key=lambda i: changed[id(i)], reverse=True)
    header = (
        f"{'changed':<16}  {'msgs':>5}  {'id':<{id_cells}}  {'name / first message':<{title_cells}}  "
        + ("project" if all_ else "file")
    )
    lines = [style(header, "bold")]
    for info in infos:
        title = cut_to_width(one_line(info.name or info.first_message, title_cells), title_cells)
        pad = " " * (title_cells - cell_width(title))
        where = safe_text(info.cwd) if all_ else safe_text(str(info.path))
        shown = safe_text(prefixes[info.id])
        lines.append(
            f"{changed[id(info)].strftime('%Y-%m-%d %H:%M'):<16}  {info.message_count:>5}  "
            f"{shown}{' ' * (id_cells - cell_width(shown))}  {title}{pad}  {where}"
        )
    if all_ and where_store is None:  # a database store has no files to print
        lines.append("")
        lines.append(style("(--paths prints the files)", "dim"))
    say_lines(lines)


def last_changed(info: SessionInfo) -> datetime:
    """When a session last changed: the later of its last entry, its header (a fork or copy made today
    keeps the old entries' times) and, for a file, its modification time."""
    latest = max(info.modified, info.created)
    path = Path(str(info.path))
    try:
        mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC) if path.is_file() else None
    except OSError:
        mtime = None
    return max(latest, mtime) if mtime is not None else latest


def _require_dir(directory: Path) -> None:
    """A directory given on the command line must be one: a typo is an error, not an empty listing."""
    if not directory.expanduser().exists():
        fail(f"{safe_text(str(directory))}: no such directory")
    if not directory.expanduser().is_dir():
        fail(f"{safe_text(str(directory))}: not a directory")


def latest_cmd(
    cwd: Annotated[
        Path | None, typer.Option(metavar="DIR", help="The project (default: this directory).")
    ] = None,
    session_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Look in this directory instead of pi's.")
    ] = None,
) -> None:
    """Print the path of the most recently modified session (the one `pi -c` continues), for scripts."""
    from sessiontree.storage.listing_cache import session_dirs
    from sessiontree.storage.session_dirs import find_most_recent_session

    if session_dir is not None:
        _require_dir(session_dir)
    with handled():
        (directory,) = session_dirs(str(cwd) if cwd is not None else None, session_dir)
        found = find_most_recent_session(directory)
    if found is None:
        fail(f"No sessions found in {directory}", EXIT_FAILED)
    say(safe_text(str(found)))


def tree_cmd(
    file: SessionArg,
    active: Annotated[bool, flag("--active", "Only the active path: from the root to the leaf.")] = False,
    depth: Annotated[
        int | None,
        typer.Option(
            "--depth",
            metavar="N",
            min=0,
            help="Show branches nested at most N levels deep; deeper ones are folded into a count, except "
            "the active path, which is always shown.",
        ),
    ] = None,
    limit: LimitOpt = None,
    as_json: Annotated[bool, json_flag("the rows (with role, preview and timestamp)")] = False,
) -> None:
    """Show the session tree: branches, labels, and the active path (● marks the leaf, • the active path)."""
    from ._tree_view import TreeOptions, tree_json, tree_lines

    manager, _ = open_read(file)
    options = TreeOptions(active=active, depth=depth, limit=limit, width=terminal_width())
    with handled():
        if as_json:
            emit_json(tree_json(manager, options))
            return
        gc.disable()  # tens of thousands of short-lived strings and records, no cycles: skip collections
        try:
            say_lines(tree_lines(manager, options, Styler(sys.stdout)))
        finally:
            gc.enable()


def context_cmd(
    file: SessionArg,
    leaf: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Build the context at this entry (id, id prefix or label)."),
    ] = None,
    full: Annotated[bool, flag("--full", "Print each message's whole text instead of one line.")] = False,
    as_json: Annotated[bool, json_flag("the context (messages, thinking level, model, tools)")] = False,
) -> None:
    """Show what the model sees at the leaf: messages (after compaction), model, thinking level, tokens."""
    from sessiontree.tree.views import entry_preview, message_full_text

    from ..llm.tokens import estimate_context_tokens, estimate_tokens

    manager, _ = open_read(file)
    target = entry_id(manager, leaf) if leaf is not None else None
    with handled():
        ctx = manager.build_session_context(target)
    if as_json:
        emit_json(ctx.to_dict())
        return
    style = Styler(sys.stdout)
    model = ctx.model or {}
    tools = ctx.active_tool_names
    say(
        f"model: {one_line(str(model.get('provider', '-')), 40)}/{one_line(str(model.get('modelId', '-')), 60)}"
        f"   thinking: {one_line(str(ctx.thinking_level), 20)}"
        + (f"   tools: {one_line(', '.join(map(str, tools)), 200)}" if isinstance(tools, list) else "")
    )
    width = terminal_width()
    lines = []
    for i, message in enumerate(ctx.messages):
        tokens = estimate_tokens(message)
        lead = f"{i:>4} ~{tokens:>6} "
        if full:
            role = one_line(str(message.get("role", "?")), 40)
            lines.append(style(f"{lead}{role}", "bold"))
            lines.append(safe_text(message_full_text(message), keep_newlines=True))
            lines.append("")
        else:
            preview = entry_preview({"type": "message", "message": message}, width - len(lead) - 20)
            lines.append(style(lead, "dim") + cut_to_width(preview, width - len(lead)))
    say_lines(lines)
    estimate = estimate_context_tokens(ctx.messages)
    basis = "the last reported usage plus estimates" if estimate.last_usage_index is not None else "estimates"
    say(f"{len(ctx.messages)} messages, ~{estimate.tokens} tokens ({basis}; per message: characters / 4)")


def show_cmd(
    file: SessionArg,
    entry: Annotated[str, typer.Argument(metavar="ID", help="The entry (id, id prefix or label).")],
) -> None:
    """Print one entry as stored (JSON)."""
    manager, _ = open_read(file)
    target = entry_id(manager, entry)
    with handled():
        emit_json(manager.get_entry(target))


def stats_cmd(file: SessionArg, as_json: Annotated[bool, json_flag("the figures")] = False) -> None:
    """Entries, branches, messages by role, tokens and cost: in total and on the active branch."""
    from sessiontree.session.stats import session_stats

    manager, path = open_read(file)
    with handled():
        stats = session_stats(manager)
    if as_json:
        emit_json(stats.to_dict())
        return

    def usage(label: str, totals: object) -> list[str]:
        from sessiontree.session.stats import UsageTotals

        assert isinstance(totals, UsageTotals)
        roles = ", ".join(f"{safe_text(role)} {n}" for role, n in sorted(totals.by_role.items())) or "none"
        return [
            f"{label}: {totals.messages} messages ({roles}), {totals.tool_calls} tool calls",
            f"  tokens: {totals.input:,} input, {totals.output:,} output, {totals.cache_read:,} cache read, "
            f"{totals.cache_write:,} cache write ({totals.total_tokens:,} total); cost ${totals.cost:.4f}",
        ]

    kinds = ", ".join(f"{safe_text(k)} {n}" for k, n in sorted(stats.by_type.items()))
    say_lines(
        [
            f"file: {safe_text(str(path))}",
            f"session: {safe_text(stats.session_id)}"
            + (f" ({one_line(stats.name, 60)})" if stats.name else ""),
            f"entries: {stats.entries} ({kinds or 'none'})",
            f"branches: {stats.leaves} tips, {stats.branch_points} branch points; {stats.labels} labels",
            *usage("whole file", stats.total),
            *usage(f"active branch ({stats.active_entries} entries)", stats.active),
            f"  context at the leaf: {stats.context_messages} messages, ~{stats.context_tokens:,} tokens",
        ]
    )
