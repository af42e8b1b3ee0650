"""``sessiontree check FILE [--repair [--force]]``: every problem the loader finds, and the repair.

A thin shell over ``storage.repair``: the check never writes; ``--repair`` changes FILE (keeping every byte it
takes out beside it) and refuses files that are not sessions unless ``--force``.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from sessiontree.format.safe_text import safe_text

from ._common import (
    EXIT_FAILED,
    EXIT_USAGE,
    SessionArg,
    StoreTarget,
    Styler,
    emit_json,
    fail,
    flag,
    handled,
    json_flag,
    say,
    session_path,
)


def _needs_repair(problem: Any) -> bool:
    """Damage, or an old format version (repair migrates it); notes of what a read did are not."""
    return not problem.is_note or problem.kind == "migrated"


def check_cmd(
    file: SessionArg,
    repair: Annotated[
        bool,
        flag("--repair", "Repair what can be repaired; changes FILE (what is taken out is kept beside it)."),
    ] = False,
    force: Annotated[
        bool, flag("--force", "With --repair: rewrite even a file that does not look like a session.")
    ] = False,
    as_json: Annotated[bool, json_flag("the problems (and the repair report)")] = False,
) -> None:
    """Report every problem the loader finds (read-only); exit 1 when the file is damaged."""
    from sessiontree.format.entries import session_header
    from sessiontree.format.ids import iso_from_ms, now_ms, uuid7
    from sessiontree.session.check import check_session_file, check_stored_session

    from ..storage.repair import RepairReport, repair_session_file

    if force and not repair:
        fail("--force only applies with --repair", EXIT_USAGE)
    path = session_path(file)
    report: Any = None
    with handled():
        if isinstance(path, StoreTarget):  # a database session: its lines and every row checked
            if repair:
                fail(
                    "--repair mends session files; copy a damaged stored session out to repair it", EXIT_USAGE
                )
            problems = check_stored_session(path.url, path.session_id)
        else:
            problems = check_session_file(path)
            if repair and not any(_needs_repair(p) for p in problems):
                report = RepairReport(path)  # nothing to repair: the file is not even opened to write
            elif repair:
                report = repair_session_file(
                    path,
                    new_header_factory=lambda: session_header(uuid7(), iso_from_ms(now_ms()), os.getcwd()),
                    force=force,
                )
                problems = check_session_file(path)
    damaged = any(not p.is_note for p in problems)
    if as_json:
        emit_json(
            {
                "path": str(path),
                "ok": not damaged,
                "problems": [p.to_dict() for p in problems],
                "repair": report.to_dict() if report is not None else None,
            }
        )
    else:
        style = Styler(sys.stdout)
        if report is not None:
            for line in report.describe():
                say(f"{style('repair:', 'cyan')} {safe_text(line)}")
        for problem in problems:  # each message already names the file and the line
            say(f"{style(problem.kind, 'yellow')} {safe_text(problem.message)}")
        if not problems:
            say(f"{style('ok', 'green')} {safe_text(str(path))}")
    if damaged:
        raise typer.Exit(EXIT_FAILED)
