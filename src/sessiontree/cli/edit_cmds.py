"""Commands that write: ``label`` and ``name`` append to FILE; ``fork`` and ``clone`` write a new file next to it.

Each validates its arguments on a read-only open before anything is written, then calls one library function
(``append_label_change``, ``append_session_info``, ``fork_session``, ``clone_session``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from sessiontree.format.safe_text import one_line, safe_text

from ._common import (
    EXIT_USAGE,
    SessionArg,
    emit_json,
    entry_id,
    fail,
    flag,
    handled,
    json_flag,
    note,
    open_read,
    open_write,
    report_writes,
    say,
)

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

IdArg = Annotated[str, typer.Argument(metavar="ID", help="The entry (id, unique id prefix or label).")]


@contextmanager
def _writing_beside(source: object, what: str) -> Iterator[None]:
    """An OS error writing the new session says whose fork or clone it was, and which file it was to be."""
    try:
        yield
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"cannot write the {what} of {source}: {where}{exc.strerror or exc}")


def fork_cmd(
    file: SessionArg,
    at: Annotated[
        str, typer.Option("--at", metavar="ID", help="The user message to fork before.", show_default=False)
    ],
    as_json: Annotated[bool, json_flag("the new file's path, leaf and the message text")] = False,
) -> None:
    """Copy the branch up to just before a user message into a new session file (pi's /fork); FILE is not changed. Prints the new file's path and the message's text, to edit and send again."""
    from sessiontree.storage.forking import fork_session

    manager, path = open_read(file)
    target = entry_id(manager, at)
    with handled(), _writing_beside(path, "fork"):
        result = fork_session(manager, target)
    if as_json:
        emit_json(
            {
                "path": str(result.path),
                "leafId": result.leaf_id,
                "entries": result.entries,
                "text": result.text,
            }
        )
        return
    say(safe_text(str(result.path)))
    note(f"{result.entries} entries up to {result.leaf_id}; the message forked before was:")
    if result.text:
        say(safe_text(result.text, keep_newlines=True))


def clone_cmd(
    file: SessionArg,
    leaf: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Clone the branch ending at this entry (default: the leaf)."),
    ] = None,
    as_json: Annotated[bool, json_flag("the new file's path and leaf")] = False,
) -> None:
    """Copy the active branch (root to leaf) into a new session file (pi's /clone); FILE is not changed. Prints the new file's path."""
    from sessiontree.storage.forking import clone_session

    manager, path = open_read(file)
    target = entry_id(manager, leaf) if leaf is not None else None
    with handled(), _writing_beside(path, "clone"):
        result = clone_session(manager, target)
    if as_json:
        emit_json({"path": str(result.path), "leafId": result.leaf_id, "entries": result.entries})
        return
    say(safe_text(str(result.path)))


def label_cmd(
    file: SessionArg,
    entry: IdArg,
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The label.", show_default=False)] = None,
    clear: Annotated[bool, flag("--clear", "Remove the entry's label instead.")] = False,
    as_json: Annotated[bool, json_flag("the appended label entry")] = False,
) -> None:
    """Set (or --clear) the label of an entry, like pi's tree view; appends a label entry to FILE."""
    if clear and text is not None:
        fail(f"--clear removes the label: give no TEXT with it (got {one_line(text, 60)!r})", EXIT_USAGE)
    if text is not None and not text.strip():
        fail("the label is empty (use --clear to remove a label)", EXIT_USAGE)
    manager, path = open_read(file)
    if text is None and not clear:
        _missing_label_text(manager, entry)
    target = entry_id(manager, entry)
    manager.close()
    with open_write(path) as writer, handled():
        seen = list(writer.problems)
        new_id = writer.append_label_change(target, None if clear else text)
        report_writes(writer, seen)
        appended = writer.get_entry(new_id)
    if as_json:
        emit_json(appended)
        return
    what = "cleared the label of" if clear else f"labelled {one_line(text or '', 60)!r}:"
    say(f"Appended label {new_id}: {what} {safe_text(target)}")


def _missing_label_text(manager: SessionManager, entry: str) -> NoReturn:
    """``label FILE X`` without TEXT: either the label is missing, or X is the label and the ID is."""
    from sessiontree.errors import SessionError
    from sessiontree.session.lookup import resolve_entry_id

    try:
        target = resolve_entry_id(manager, entry)
    except SessionError:
        fail(
            f"{one_line(entry, 60)!r} is not an entry of {safe_text(str(manager.get_session_file()))}: the "
            "entry comes first, then the label (sessiontree label FILE ID TEXT)",
            EXIT_USAGE,
        )
    fail(
        f"no label given for entry {safe_text(target)}: add the TEXT, or --clear to remove its label",
        EXIT_USAGE,
    )


def name_cmd(
    file: SessionArg,
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The name.", show_default=False)] = None,
    clear: Annotated[bool, flag("--clear", "Remove the session's name instead.")] = False,
    as_json: Annotated[bool, json_flag("the appended session_info entry")] = False,
) -> None:
    """Name the session (pi's /name); appends a session_info entry to FILE."""
    if clear == (text is not None and bool(text.strip())):
        fail("give either a non-empty TEXT or --clear", 2)
    manager, path = open_read(file)
    manager.close()
    with open_write(path) as writer, handled():
        seen = list(writer.problems)
        new_id = writer.append_session_info("" if clear else (text or ""))
        report_writes(writer, seen)
        appended = writer.get_entry(new_id)
        name = writer.get_session_name()
    if as_json:
        emit_json(appended)
        return
    say(f"Appended session_info {new_id}: " + (f"name {one_line(name, 60)!r}" if name else "name cleared"))
