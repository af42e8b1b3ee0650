"""What every command shares: output (plain lines, styles, JSON), errors and exit codes, option types, and
finding the session and the entries a command line names.

Every string taken from a session reaches the terminal through ``safe_text``; JSON output is plain JSON.
Holds no session logic: opening, lookups and listings are library calls.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from sessiontree.format.safe_text import json_for_terminal, safe_text

from ..errors import SessionError

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

    from ..storage import Problem

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CODES = (
    "Exit codes: 0 ok; 1 the session (or an entry, or a file) is missing or damaged, or the operation "
    "failed; 2 the command line is wrong."
)
_USAGE_KINDS = frozenset({"invalid_argument", "ambiguous", "invalid_fork_target"})
_MAX_WARNINGS = 5

SessionArg = Annotated[
    str,
    typer.Argument(
        metavar="FILE",
        help="A session .jsonl file, or the id (a unique prefix will do) or name of a session in pi's "
        "session directory.",
        show_default=False,
    ),
]


class _QuietHelp:
    """Shows ``-h, --help`` without a value placeholder, like every other flag."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class Command(_QuietHelp, TyperCommand):
    """A command whose help lists flags without ``<bool>``, and whose Ctrl+C ends it with one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # wherever it came: reading, printing, waiting for a model
            cancelled()


class Group(_QuietHelp, TyperGroup):
    """The application group, with the same help style; commands are built on first use."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.commands, *(name for name in self.lazy if name not in self.commands)]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with the first sentence of its help, wrapped rather than cut to one line."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in self.lazy:
            import importlib

            module, function = self.lazy[cmd_name]
            holder = typer.Typer(
                add_completion=False,
                rich_markup_mode=None,
                context_settings={"help_option_names": ["-h", "--help"]},
            )
            command = getattr(importlib.import_module(f"{__package__}.{module}"), function)
            add_command(holder, cmd_name, command)
            found = self.commands[cmd_name] = typer.main.get_command(holder)
            _restore_argument_help(found, command)
            if cmd_name not in _NO_STORE:
                _add_store_option(found)
        return found


def _no_section(ctx: Any, formatter: Any) -> None:
    """A help section left out."""


def _restore_argument_help(command: Any, function: Any) -> None:
    """Give each argument the help its annotation declares: click 8.5 added ``help`` to ``click.Argument``
    and its constructor resets the one typer 0.24 sets first, so ``--help`` would describe no argument."""
    from typer.utils import get_params_from_function

    declared = {
        name: getattr(meta.default, "help", None) for name, meta in get_params_from_function(function).items()
    }
    for param in command.params:
        if param.param_type_name == "argument" and not getattr(param, "help", None):
            param.help = declared.get(param.name)
    if hasattr(command, "format_arguments"):
        # click 8.5.1 prints documented arguments under "Positional arguments" in format_help, and typer's
        # format_options prints them again under "Arguments": keep typer's section only
        command.format_arguments = _no_section


STORE_ENV = "SESSIONTREE_STORE"
_STORE_KEY = "sessiontree.store"


def _remember_store(ctx: Any, param: Any, value: str | None) -> None:
    if value:
        ctx.meta[_STORE_KEY] = value


_NO_STORE = frozenset({"copy"})
"""Commands that name their stores in their arguments (``copy SRC DST``) and so take no ``--store``."""


def _add_store_option(command: Any) -> None:
    """Give a command ``--store URL`` (and ``$SESSIONTREE_STORE``): the store its FILE, listing, search or
    migration is in."""
    import click

    if any("--store" in getattr(p, "opts", ()) for p in command.params):
        return
    takes_file = any(p.param_type_name == "argument" and "FILE" in (p.metavar or "") for p in command.params)
    command.params.append(
        click.Option(
            ["--store"],
            metavar="URL",
            envvar=STORE_ENV,
            expose_value=False,
            is_eager=True,
            callback=_remember_store,
            help="A session store: a directory or jsonl:DIR (pi's files), sqlite:///PATH, postgresql://... "
            f"(default ${STORE_ENV}, else pi's session directory)."
            + (" FILE is then a session id (or a unique prefix of one) in it." if takes_file else ""),
        )
    )


def current_store() -> str | None:
    """The store URL this command line chose (``--store`` or ``$SESSIONTREE_STORE``), or ``None``."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is not None and _STORE_KEY in ctx.meta:
        return ctx.meta[_STORE_KEY] or None
    return os.environ.get(STORE_ENV) or None


@contextmanager
def without_store() -> Iterator[None]:
    """Inside, FILE arguments are files (or sessions in pi's directory) whatever ``--store`` says: for a
    command that works on a file of its own, as ``demo`` on its copy."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        yield
        return
    had, chosen = _STORE_KEY in ctx.meta, ctx.meta.get(_STORE_KEY)
    ctx.meta[_STORE_KEY] = None
    try:
        yield
    finally:
        if had:
            ctx.meta[_STORE_KEY] = chosen
        else:
            del ctx.meta[_STORE_KEY]


class StoreTarget(str):
    """A session in a database store, shown as ``<store>#<id>`` where a command would show a file path."""

    url: str
    session_id: str

    def __new__(cls, url: str, session_id: str, shown: str) -> StoreTarget:
        target = super().__new__(cls, shown)
        target.url, target.session_id = url, session_id
        return target

    @property
    def stem(self) -> str:
        return self.session_id

    @property
    def name(self) -> str:
        return self.session_id


def lazy_group(commands: dict[str, tuple[str, str]]) -> type[Group]:
    """A ``Group`` class that builds ``commands`` (name -> (module in this package, function)) when used."""
    return type("LazyGroup", (Group,), {"lazy": dict(commands)})


def add_command(app: typer.Typer, name: str, function: Any) -> None:
    """Register ``function`` as command ``name``, with the exit code table under its help."""
    app.command(name, cls=Command, epilog=EXIT_CODES)(function)


def flag(name: str, help: str, *aliases: str) -> Any:
    """A boolean ``--name`` option without a value placeholder in ``--help``."""
    return typer.Option(name, *aliases, help=help, metavar="", show_default=False)


def json_flag(what: str) -> Any:
    """The ``--json`` option of a command that prints ``what``."""
    return flag("--json", f"Print {what} as JSON (plain JSON of the stored values) instead of text.")


# -- output ----------------------------------------------------------------------------------------------
def _color_enabled(stream: Any) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Styler:
    """ANSI styles for text sessiontree itself writes, only when the stream is a terminal (and no NO_COLOR)."""

    def __init__(self, stream: Any) -> None:
        self.enabled = _color_enabled(stream)

    def __call__(self, text: str, style: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def say(text: str = "") -> None:
    """Print a line of display text (already made safe by the caller) to stdout."""
    sys.stdout.write(text + "\n")


def say_lines(lines: Iterator[str] | list[str]) -> None:
    """Print many lines at once (fast for tens of thousands of rows)."""
    write = sys.stdout.write
    buffer: list[str] = []
    for line in lines:
        buffer.append(line)
        if len(buffer) >= 4096:
            write("\n".join(buffer) + "\n")
            buffer.clear()
    if buffer:
        write("\n".join(buffer) + "\n")


def emit_json(value: Any) -> None:
    """Print ``value`` as JSON (pi's encoding; terminal-unsafe characters as ``\\u`` escapes)."""
    from sessiontree.format.pi_json import dumps

    sys.stdout.write(json_for_terminal(dumps(value)) + "\n")


def emit_json_list(items: Iterable[Any]) -> None:
    """``emit_json(list(items))``, written an item at a time: the same text, without holding every item (a
    listing's texts are a gigabyte's worth of sessions) or the whole text at once."""
    from sessiontree.format.pi_json import dumps

    write = sys.stdout.write
    write("[")
    for n, item in enumerate(items):
        write(("," if n else "") + json_for_terminal(dumps(item)))
    write("]\n")


def _err(prefix: str, style: str, message: str) -> None:
    styler = Styler(sys.stderr)
    sys.stderr.write(f"{styler(prefix, style)} {safe_text(message, keep_newlines=True)}\n")


def note(message: str) -> None:
    """Tell the user something sessiontree did on the side (a migration, a torn line set aside)."""
    _err("note:", "cyan", message)


def warn(message: str) -> None:
    """Warn on stderr."""
    _err("warning:", "yellow", message)


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """Print one error line on stderr and stop with ``code``."""
    _err("error:", "red", message)
    raise typer.Exit(code)


def exit_code_for(error: SessionError) -> int:
    """2 for what the command line got wrong (bad or ambiguous arguments), 1 for everything else."""
    return EXIT_USAGE if error.kind in _USAGE_KINDS else EXIT_FAILED


@contextmanager
def handled() -> Iterator[None]:
    """Turn library errors into one clear line and the exit code table."""
    try:
        yield
    except SessionError as exc:
        fail(str(exc), exit_code_for(exc))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        cancelled()


def cancelled() -> NoReturn:
    """Ctrl+C, the same for every command: one line (see ``interrupts.cancel_message``) and exit code 130."""
    from .interrupts import EXIT_CANCELLED, cancel_message

    fail(cancel_message(), EXIT_CANCELLED)


def terminal_width() -> int:
    """The terminal's width in cells (``COLUMNS`` wins; 100 when there is no terminal)."""
    return max(20, shutil.get_terminal_size((100, 24)).columns)


# -- sessions and entries ----------------------------------------------------------------------------------
def session_path(ref: str) -> Any:
    """The session ``ref`` names: with ``--store``, an id (or unique prefix) in that store (a file path for
    file stores, a ``StoreTarget`` for database stores); else a path, or a session id, unique id prefix or
    name in pi's session directory (this project first)."""
    from sessiontree.session.lookup import resolve_session_file, select_session
    from sessiontree.storage.listing_cache import list_sessions, session_dirs
    from sessiontree.storage.session_dirs import get_sessions_root

    from .progress import listing_progress

    store = current_store()
    if store is not None:
        return _in_store(store, ref)
    with handled():
        path = resolve_session_file(ref)
        if path is not None:
            return path
        here = session_dirs()
        with listing_progress() as progress:
            groups = (
                listing.infos
                for listing in (
                    list_sessions(here, on_progress=progress, processes=True),
                    list_sessions(session_dirs(all_projects=True), on_progress=progress, processes=True),
                )
            )
            return select_session(ref, groups, [*here, get_sessions_root()])


def _in_store(store: str, ref: str) -> Path | StoreTarget:
    from sessiontree.session.store_access import shared_repo
    from sessiontree.storage.repository import JsonlRepo

    with handled():
        repo = shared_repo(store)
        if isinstance(repo, JsonlRepo):
            candidate = Path(ref).expanduser()
            return candidate if candidate.suffix == ".jsonl" and candidate.exists() else repo.path_of(ref)
        sid = repo.resolve(ref)
    display = getattr(repo, "display", repo.url)
    return StoreTarget(store, sid, f"{display}#{sid}")


def open_session(target: Path | StoreTarget, *, read_only: bool, **options: Any) -> SessionManager:
    """Open what ``session_path`` found (a file, or a session in a database store)."""
    from sessiontree.session.manager import SessionManager

    if isinstance(target, StoreTarget):
        return SessionManager.open(target.session_id, store=target.url, read_only=read_only, **options)
    return SessionManager.open(target, read_only=read_only, **options)


def report_problems(manager: SessionManager, file: Path, *, skip: frozenset[str] = frozenset()) -> None:
    """Warn about damage found while opening (the first few; ``check`` lists them all)."""
    problems = [p for p in manager.problems if p.kind not in skip]
    notes = [p for p in problems if p.is_note]
    damage = [p for p in problems if not p.is_note]
    for problem in notes:
        note(problem.message)
    for problem in damage[:_MAX_WARNINGS]:
        warn(problem.message)
    if len(damage) > _MAX_WARNINGS:
        warn(f"{len(damage) - _MAX_WARNINGS} more problems; `sessiontree check {file}` lists them all")


# Notes that only matter to a command that writes (a read follows a symbolic link without surprise).
_WRITE_NOTES = frozenset({"symlink"})


def open_read(ref: str) -> tuple[SessionManager, Path]:
    """Open the session ``ref`` names read-only (nothing is locked or written), warning about damage."""
    from sessiontree.storage import JsonlStore

    path = session_path(ref)
    with handled():
        manager = open_session(path, read_only=True)
        if isinstance(manager.store, JsonlStore) and not manager.store.is_persisted:
            # No header (an empty or blank file): not a session, for every command as for `check`.
            from sessiontree.session.check import no_header_problem

            problem = no_header_problem(manager.store, Path(path))
            manager.close()
            fail(problem.message)
        report_problems(manager, path, skip=_WRITE_NOTES)
    return manager, path


def open_write(path: Path, **options: Any) -> SessionManager:
    """Open ``path`` to write, after the caller validated everything on a read-only open; says when the file
    was migrated and where the original is."""
    with handled():
        manager = open_session(path, read_only=False, **options)
    if not isinstance(path, StoreTarget):
        from .interrupts import opened_to_write

        opened_to_write(Path(path))
    for problem in manager.problems:
        if problem.kind in ("migrated", "symlink"):
            note(problem.message)
    return manager


def report_writes(manager: SessionManager, seen: list[Problem]) -> None:
    """Say what a write did on the side, e.g. where a torn last line was put."""
    for problem in manager.problems:
        if problem.kind in ("torn_tail_moved", "changed_on_disk") and problem not in seen:
            note(problem.message)


def entry_id(manager: SessionManager, ref: str) -> str:
    """The entry ``ref`` names: an id, a unique id prefix (4+ characters) or a label."""
    from sessiontree.session.lookup import resolve_entry_id

    with handled():
        return resolve_entry_id(manager, ref)
