"""``sessiontree export FILE``: one branch as an HTML page, Markdown or a JSONL session file.

A thin shell over ``sessiontree.export``; FILE is only read, and an existing output file is replaced only
with ``--force``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

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
    say,
)


def export_cmd(
    file: SessionArg,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            metavar="PATH",
            help="Where to write (default: <session file name>.<format> here; - for stdout).",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="html|md|jsonl",
            help="The format: a self-contained HTML page, Markdown, or a session file of the branch.",
        ),
    ] = "html",
    leaf: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Export the branch ending at this entry (default: the leaf)."),
    ] = None,
    force: Annotated[bool, flag("--force", "Replace PATH when it exists.")] = False,
    as_json: Annotated[bool, json_flag("where the export was written")] = False,
) -> None:
    """Export the active branch (or the one ending at --leaf) as HTML, Markdown or JSONL; FILE is not changed."""
    from ..export import FORMATS, export_session
    from ..storage import _fileio

    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}", EXIT_USAGE)
    manager, path = open_read(file)
    target = entry_id(manager, leaf) if leaf is not None else None
    with handled():
        data = export_session(manager, fmt, target)  # type: ignore[arg-type]
    if out is not None and str(out) == "-":
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
        else:
            sys.stdout.write(data.decode("utf-8"))
        return
    destination = out if out is not None else Path(f"{path.stem}.{fmt}")
    if destination.is_dir():
        destination = destination / f"{path.stem}.{fmt}"
    with handled():
        if os.path.lexists(destination):
            if not force:
                fail(f"{destination}: already exists (use --force to replace it)", EXIT_USAGE)
            _fileio.atomic_replace(destination, data)
        else:
            _fileio.atomic_replace(destination, data, exclusive=True)
    if as_json:
        emit_json({"path": str(destination), "format": fmt, "bytes": len(data)})
        return
    say(safe_text(str(destination)))
