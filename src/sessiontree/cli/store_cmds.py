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
    warn,
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
    all_or_none: Annotated[
        bool,
        flag(
            "--all-or-none",
            "With --all: check every session first and copy none if any of them cannot be copied.",
        ),
    ] = False,
    as_json: Annotated[bool, json_flag("what was copied")] = False,
) -> None:
    """Copy sessions between any two stores (files, SQLite, PostgreSQL), byte for byte; writes only DST.

    A file with damage (bad lines, a torn last line, blank lines) is refused unless --lossy, and the refusal
    says what would not be copied. With --all every session that can be copied is, each refusal is reported,
    and the exit code is 1 when any was refused (--all-or-none: copy none of them then).
    """
    from sessiontree.errors import SessionError
    from sessiontree.session.copying import check_copy, copy_session
    from sessiontree.session.store_access import shared_repo

    from .progress import listing_progress

    if all_or_none and not all_:
        fail("--all-or-none goes with --all", EXIT_USAGE)
    sources = [source]
    if all_:
        with handled():
            repo = shared_repo(source)
            sources = [f"{repo.url}#{info.id}" for info in repo.list()]
        if not sources:
            fail(f"No sessions in {safe_text(source)}.")
    refused: list[tuple[str, SessionError]] = []
    if all_or_none:
        with handled():
            taken = _ids_in(destination)
        for one in sources:
            try:
                check_copy(one, destination, lossy=lossy, taken=taken)
            except SessionError as exc:
                refused.append((one, exc))
        if refused:
            for one, error in refused:
                warn(f"cannot copy {safe_text(one)}: {safe_text(str(error), keep_newlines=True)}")
            fail(f"{len(refused)} of {len(sources)} sessions cannot be copied; copied none (--all-or-none)")
    results = []
    with listing_progress(label="copying entries", minimum=2000) as progress, handled():
        for one in sources:
            try:
                result = copy_session(one, destination, lossy=lossy, on_progress=progress)
            except SessionError as exc:
                if not all_:
                    raise
                refused.append((one, exc))
                warn(f"not copied: {safe_text(one)}: {safe_text(str(exc), keep_newlines=True)}")
                continue
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
    if refused:
        fail(f"copied {len(results)} of {len(sources)} sessions; {len(refused)} refused (listed above)")


def _ids_in(destination: str) -> set[str] | None:
    """The session ids already in a destination store (``None`` when it is not a store)."""
    from sessiontree.errors import SessionNotFoundError
    from sessiontree.session.copying import split_ref
    from sessiontree.session.store_access import shared_repo
    from sessiontree.storage.urls import is_store_url

    url, _ = split_ref(destination)
    if not is_store_url(url):
        return None
    try:
        return {info.id for info in shared_repo(url).list()}
    except SessionNotFoundError:  # the store does not exist yet: nothing in it is taken
        return set()


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
    from sessiontree.session.lookup import shortest_unique_prefixes

    prefixes = shortest_unique_prefixes(h.session_id for h in hits)
    say_lines(
        f"{safe_text(prefixes[h.session_id])}  {safe_text(h.entry_id)}  {one_line(h.snippet, 100)}"
        + (f"  [{one_line(h.session_name, 30)}]" if h.session_name else "")
        + (f"  {safe_text(h.location)}" if h.location else "")
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
