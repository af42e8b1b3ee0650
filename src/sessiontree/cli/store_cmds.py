"""Commands about stores rather than one session: ``copy`` between any two stores, ``search``, and ``db``
(schema migrations of a database store).

Thin shells over ``sessiontree.session.copying``, ``Repo.search`` and ``Repo.setup``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sessiontree.format.safe_text import one_line, safe_text

from ._common import (
    EXIT_USAGE,
    current_store,
    emit_json,
    fail,
    flag,
    handled,
    json_flag,
    note,
    say,
    say_lines,
)

SideArg = Annotated[
    str,
    typer.Argument(
        metavar="SRC",
        help="A session file, or STORE_URL#SESSION_ID (with --all: a store URL or a directory).",
        show_default=False,
    ),
]
DestArg = Annotated[
    str,
    typer.Argument(
        metavar="DST",
        help="A new session file, STORE_URL#SESSION_ID, or a store URL (the copy keeps the source's id).",
        show_default=False,
    ),
]


def copy_cmd(
    source: SideArg,
    destination: DestArg,
    all_: Annotated[bool, flag("--all", "Copy every session of the SRC store.")] = False,
    lossy: Annotated[
        bool, flag("--lossy", "Copy what can be read from a damaged file (bad lines, a torn tail) anyway.")
    ] = False,
    as_json: Annotated[bool, json_flag("what was copied")] = False,
) -> None:
    """Copy sessions between any two stores (files, SQLite, PostgreSQL), byte for byte; writes only DST.

    A file with damage (bad lines, a torn last line, blank lines) is refused unless --lossy, and the refusal
    says what would not be copied.
    """
    from sessiontree.session.copying import copy_session
    from sessiontree.session.store_access import shared_repo

    from .progress import listing_progress

    sources = [source]
    if all_:
        with handled():
            repo = shared_repo(source)
            sources = [f"{repo.url}#{info.id}" for info in repo.list()]
        if not sources:
            fail(f"No sessions in {safe_text(source)}.")
    results = []
    with listing_progress(label="copying entries", minimum=2000) as progress, handled():
        for one in sources:
            result = copy_session(one, destination, lossy=lossy, on_progress=progress)
            results.append(result)
            if not as_json:
                how = "byte for byte" if result.exact else "lossy: damaged lines left out"
                say(f"{safe_text(result.destination)}  ({result.entries} entries, {how})")
    if as_json:
        emit_json(
            [
                {
                    "destination": r.destination,
                    "sessionId": r.session_id,
                    "entries": r.entries,
                    "exact": r.exact,
                }
                for r in results
            ]
        )


def search_cmd(
    text: Annotated[
        str, typer.Argument(metavar="TEXT", help="Words to find (all of them).", show_default=False)
    ],
    cwd: Annotated[str | None, typer.Option(metavar="DIR", help="Only sessions of this project.")] = None,
    limit: Annotated[int, typer.Option(metavar="N", help="At most N hits.")] = 20,
    as_json: Annotated[bool, json_flag("the hits")] = False,
) -> None:
    """Search message text and session names in a store (--store; default pi's session directory)."""
    from sessiontree.session.store_access import shared_repo

    if limit < 1:
        fail("--limit must be at least 1", EXIT_USAGE)
    with handled():
        repo = shared_repo(current_store() or "jsonl:")
        hits = repo.search(text, cwd=cwd, limit=limit)
    if as_json:
        emit_json([h.to_dict() for h in hits])
        return
    if not hits:
        say(f"No matches in {safe_text(getattr(repo, 'display', repo.url))}.")
        return
    say_lines(
        f"{safe_text(h.session_id[:8])}  {safe_text(h.entry_id)}  {one_line(h.snippet, 100)}"
        + (f"  [{one_line(h.session_name, 30)}]" if h.session_name else "")
        for h in hits
    )


def db_cmd(
    action: Annotated[
        str,
        typer.Argument(
            metavar="ACTION", help="migrate: apply the schema migrations; status: show the version."
        ),
    ],
) -> None:
    """Set up or inspect a database store (--store sqlite:///PATH or postgresql://...)."""
    from sessiontree.session.store_access import shared_repo
    from sessiontree.storage.sql.repository import SqlRepo
    from sessiontree.storage.sql.schema import SCHEMA_VERSION

    store = current_store()
    if store is None or not store.lower().startswith(("sqlite:", "postgresql:", "postgres:")):
        fail("name a database store with --store sqlite:///PATH or --store postgresql://...", EXIT_USAGE)
    if action not in ("migrate", "status"):
        fail(f"unknown action {safe_text(action)!r} (migrate or status)", EXIT_USAGE)
    with handled():
        repo = shared_repo(store)
        assert isinstance(repo, SqlRepo)
        if action == "migrate":
            done = repo.setup()
            for line in done:
                say(f"applied migration {safe_text(line)}")
            if not done:
                note("nothing to apply")
        version = repo.schema_version()
    say(f"schema version {version} of {SCHEMA_VERSION}")
