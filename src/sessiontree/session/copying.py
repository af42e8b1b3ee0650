"""Copying sessions between any two stores (``sessiontree copy``): the exact bytes where nothing is lost, and
a refusal that says what would be lost otherwise (unless the caller accepts a lossy copy).

A side of a copy is a session file or ``STORE_URL#SESSION_ID``; a bare store URL as the destination takes
the source's session id. Reads through the store layer; writes only the destination.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sessiontree.errors import CorruptSessionError, SessionError, StorageError
from sessiontree.format import pi_json as _json
from sessiontree.session.store_access import shared_repo
from sessiontree.storage import JsonlStore, Problem
from sessiontree.storage.repository import JsonlRepo, file_lines
from sessiontree.storage.urls import is_store_url

__all__ = [
    "LOSSY_KINDS",
    "CopyResult",
    "SessionSource",
    "check_copy",
    "copy_session",
    "read_source",
    "split_ref",
]

LOSSY_KINDS = frozenset(
    {"bad_line", "torn_tail", "blank_lines", "extra_header", "missing_newline", "migrated"}
)
"""Problems that make a file's copy differ from its bytes (lines left out, a newline added, a migration)."""


@dataclass
class SessionSource:
    """What a copy reads: the exact header block and entry lines, or (``exact=False``) what is readable."""

    where: str
    header_block: bytes
    lines: Iterator[bytes]
    count: int
    exact: bool
    problems: list[Problem] = field(default_factory=list)
    recorded: list[Problem] = field(default_factory=list)
    """Problems recorded with the source when it was imported lossily: history that every copy into a
    database store carries on (the rows themselves copy exactly)."""
    crlf: bool = False

    def losses(self) -> list[str]:
        """What a copy would not carry over, one line each (empty for an exact copy)."""
        found = [p.message for p in self.problems if p.kind in LOSSY_KINDS]
        if found and self.crlf:
            found.append(f"{self.where}: its CRLF line endings would become LF")
        return found

    def to_record(self) -> list[Problem]:
        """What the destination keeps as the record of what was lost on the way (empty for exact copies)."""
        return [*self.recorded, *([] if self.exact else self.problems)]


@dataclass(frozen=True, slots=True)
class CopyResult:
    """Where the copy went (``<store>#<id>`` or a file), how many entries, and whether it is byte-exact."""

    destination: str
    session_id: str
    entries: int
    exact: bool


def split_ref(ref: str) -> tuple[str, str | None]:
    """``STORE_URL#SESSION_ID`` into its parts (no ``#``: the whole text and ``None``)."""
    if "#" in ref and is_store_url(ref):
        url, _, sid = ref.rpartition("#")
        return url, sid or None
    return ref, None


def read_source(ref: str) -> SessionSource:
    """The session a copy reads: a file path, or ``STORE_URL#SESSION_ID``."""
    url, sid = split_ref(ref)
    if is_store_url(url):
        if sid is None:
            raise SessionError(
                f"{ref}: name the session to copy as {url}#SESSION_ID", kind="invalid_argument"
            )
        repo = shared_repo(url)
        if isinstance(repo, JsonlRepo):  # a directory of pi's files: each session is a file like any other
            return _file_source(repo.path_of(sid))
        manager = repo.open(sid, read_only=True)
        try:
            # A store's rows copy exactly, whatever they hold; what an earlier lossy import lost is kept
            # as a record and goes along, it is not a loss of this copy.
            recorded = list(getattr(manager.store, "import_problems", ()))
            count = len(manager.index)
            real_id = manager.get_session_id()
        finally:
            manager.close()
        header, lines = repo.export(real_id)
        return SessionSource(f"{url}#{real_id}", header, lines, count, True, recorded=recorded)
    return _file_source(Path(ref).expanduser())


def _file_source(path: Path) -> SessionSource:
    store = JsonlStore.open(path, read_only=True)
    try:
        if store.header is None:  # e.g. a file whose only line is a torn header
            raise CorruptSessionError(
                f"{path}: line 1: not a complete session header, so there is no session to copy "
                "(not even with --lossy)",
                path=str(path),
            )
        problems = list(store.problems)
        count = len(store)
        if not any(p.kind in LOSSY_KINDS for p in problems):
            header, lines = file_lines(store.path or path)
            return SessionSource(str(path), header, lines, count, True, problems)
        migrated = any(p.kind == "migrated" for p in problems)
        header_bytes = _json.dumps_bytes(store.header) if migrated else _header_line(store.path or path)
        rows = [_json.dumps_bytes(store.entry_at(i)) if migrated else store.raw_at(i) for i in range(count)]
        # The readable lines are copied without their line endings' \r, and the header to match.
        crlf = header_bytes.endswith(b"\r")
        return SessionSource(
            str(path), header_bytes.rstrip(b"\r"), iter(rows), count, False, problems, crlf=crlf
        )
    finally:
        store.close()


def _header_line(path: Path) -> bytes:
    header, _ = file_lines(path)
    return header


def _refuse_losses(src: SessionSource, lossy: bool) -> None:
    losses = src.losses()
    if losses and not lossy:
        listed = "\n  ".join(losses[:20]) + (f"\n  … and {len(losses) - 20} more" if len(losses) > 20 else "")
        raise SessionError(
            f"{src.where} cannot be copied byte for byte; these would not be copied as they are:\n  {listed}\n"
            "(copy with --lossy to take what can be read)",
            kind="lossy",
        )


def _header_of(src: SessionSource) -> dict[str, object]:
    header = _json.first_object(src.header_block)
    if header is None:
        raise CorruptSessionError(f"{src.where}: no session header", path=src.where)
    return header


def check_copy(source: str, destination: str, *, lossy: bool = False, taken: set[str] | None = None) -> None:
    """Raise what ``copy_session`` would raise before writing anything (the source unreadable or lossy, the
    destination's id or file taken); ``taken`` holds ids already in a destination store."""
    src = read_source(source)
    _refuse_losses(src, lossy)
    sid = str(_header_of(src).get("id"))
    url, _ = split_ref(destination)
    if is_store_url(url):
        if taken is not None and sid in taken:
            raise StorageError(f"{url}#{sid}: already exists (delete it first, or copy to a new id)")
    elif Path(url).expanduser().exists():
        raise StorageError(f"{url}: already exists (sessiontree never overwrites a session file)")


def copy_session(
    source: str,
    destination: str,
    *,
    lossy: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> CopyResult:
    """Copy one session; raises ``SessionError`` (kind ``lossy``) listing what would be lost unless ``lossy``.

    A session with no entries (a header alone) is copied too. Into a database store, what a lossy copy left
    out is recorded with the session (and carried on by later copies, which are exact).
    """
    src = read_source(source)
    _refuse_losses(src, lossy)
    lines = _counting(src.lines, src.count, on_progress)
    header = _header_of(src)
    url, sid = split_ref(destination)
    if is_store_url(url):
        repo = shared_repo(url)
        if sid is not None and sid != header.get("id"):
            raise SessionError(
                f"{destination}: the copy keeps the source's session id {header.get('id')}; name it as "
                f"{url}#{header.get('id')} or give just the store URL",
                kind="invalid_argument",
            )
        new_id = repo.import_session(src.header_block, lines, problems=src.to_record())
        return CopyResult(f"{url}#{new_id}", new_id, src.count, src.exact)
    target = Path(url).expanduser()
    if target.exists():
        raise StorageError(f"{target}: already exists (sessiontree never overwrites a session file)")
    from sessiontree.storage import _fileio

    blob = b"".join([src.header_block, b"\n", *(line + b"\n" for line in lines)])
    _fileio.atomic_replace(target, blob, exclusive=True)
    return CopyResult(str(target), str(header.get("id")), src.count, src.exact)


def _counting(
    lines: Iterator[bytes], total: int, on_progress: Callable[[int, int], None] | None
) -> Iterator[bytes]:
    for n, line in enumerate(lines, start=1):
        yield line
        if on_progress is not None and (n % 500 == 0 or n == total):
            on_progress(n, total)
