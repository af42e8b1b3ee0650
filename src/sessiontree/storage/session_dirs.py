"""Where session files live and what is in them at a glance: pi's directory layout, listing, SessionInfo.

Reads files to describe them; never writes entries (the manager does). Directories it creates are 0700.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from sessiontree.format import pi_json as _json
from sessiontree.format.ids import parse_iso_ms
from sessiontree.storage.listed_lines import listed_parts

__all__ = [
    "PROCESS_BYTES",
    "SessionInfo",
    "SessionInfoBuilder",
    "build_session_info",
    "encode_cwd",
    "find_most_recent_session",
    "get_agent_dir",
    "get_default_session_dir",
    "get_sessions_root",
    "list_session_files",
    "read_files",
    "read_header",
    "session_file_name",
]

ProgressCallback = Callable[[int, int], None]
_HEADER_CAP = 1 << 20  # read at most 1 MiB for a header line (pi reads 512 bytes and misses long ones)


def get_agent_dir() -> Path:
    """``PI_CODING_AGENT_DIR`` (``~`` expanded) or ``~/.pi/agent``."""
    configured = os.environ.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(os.path.expanduser(configured))
    return Path.home() / ".pi" / "agent"


def get_sessions_root() -> Path:
    """``<agent dir>/sessions``."""
    return get_agent_dir() / "sessions"


def encode_cwd(cwd: str) -> str:
    """pi's per-project directory name: drop one leading separator, map ``/ \\ :`` to ``-``, wrap in ``--``."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + re.sub(r"[/\\:]", "-", trimmed) + "--"


def resolve_cwd(cwd: str | os.PathLike[str]) -> str:
    """Resolve a working directory as the coding agent does (``~``, ``file://`` URLs, relative paths)."""
    text = os.fspath(cwd)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return os.path.abspath(os.path.expanduser(text))


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 where they do not exist yet."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):  # Path.mkdir(parents=True) would give the parents the umask's mode
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(directory, 0o700)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)  # raises when ``path`` is not a directory
    return path


def get_default_session_dir(cwd: str, agent_dir: Path | None = None) -> Path:
    """``<agent dir>/sessions/--<encoded cwd>--`` for a (resolved) working directory."""
    root = (agent_dir / "sessions") if agent_dir is not None else get_sessions_root()
    return root / encode_cwd(resolve_cwd(cwd))


def session_file_name(timestamp_iso: str, session_id: str) -> str:
    """``<ISO timestamp with ':' and '.' as '-'>_<session id>.jsonl``."""
    return f"{timestamp_iso.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def read_header(path: Path) -> dict[str, Any] | None:
    """The session header of a file (first non-blank line, read whole up to 1 MiB), or ``None``."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if len(raw) > _HEADER_CAP:
                    return None
                line = raw.strip()
                if line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                if not line:
                    continue
                try:
                    value = _json.loads(line)
                except ValueError:
                    return None
                if (
                    isinstance(value, dict)
                    and value.get("type") == "session"
                    and isinstance(value.get("id"), str)
                ):
                    return value
                return None
    except OSError:
        return None
    return None


class SessionInfo:
    """What a session list shows: ids, paths, name, first message, counts and times."""

    __slots__ = (
        "all_messages_text",
        "created",
        "cwd",
        "first_message",
        "id",
        "message_count",
        "modified",
        "name",
        "parent_session_path",
        "path",
    )

    def __init__(
        self,
        path: Path | str,
        id: str,
        cwd: str,
        name: str | None,
        parent_session_path: str | None,
        created: datetime,
        modified: datetime,
        message_count: int,
        first_message: str,
        all_messages_text: str,
    ) -> None:
        self.path = path
        self.id = id
        self.cwd = cwd
        self.name = name
        self.parent_session_path = parent_session_path
        self.created = created
        self.modified = modified
        self.message_count = message_count
        self.first_message = first_message
        self.all_messages_text = all_messages_text

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape (dates as ISO strings)."""
        out: dict[str, Any] = {"path": str(self.path), "id": self.id, "cwd": self.cwd}
        if self.name is not None:
            out["name"] = self.name
        if self.parent_session_path is not None:
            out["parentSessionPath"] = self.parent_session_path
        out.update(
            {
                "created": _iso(self.created),
                "modified": _iso(self.modified),
                "messageCount": self.message_count,
                "firstMessage": self.first_message,
                "allMessagesText": self.all_messages_text,
            }
        )
        return out

    def __repr__(self) -> str:
        return f"SessionInfo(id={self.id!r}, name={self.name!r}, messages={self.message_count}, path={str(self.path)!r})"


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _dt(ms: float | None) -> datetime | None:
    """Epoch milliseconds as an aware datetime; ``None`` outside what a datetime can hold (or not finite)."""
    if ms is None or not _holdable(ms):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _holdable(ms: float) -> bool:
    """Whether ``_dt`` gives a datetime for ``ms`` (checked without making one; NaN fails both comparisons)."""
    return _FIRST_MS <= ms <= _LAST_MS


_FIRST_MS = (datetime(1, 1, 2, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000
_LAST_MS = (datetime(9999, 12, 30, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000


def _message_ms(value: Any) -> float | None:
    """A message's numeric ``timestamp`` as epoch ms, or ``None`` (not a number, or out of any date range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and not -_INT_LIMIT < value < _INT_LIMIT:
        return None  # float() would overflow on a few hundred digits
    return float(value)


_INT_LIMIT = 10**16


def _text_of(content: Any, sep: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


class SessionInfoBuilder:
    """What a listing shows, gathered entry by entry: counts, the first user message, name, last activity.

    Used on whole files (``build_session_info``) and by database stores, which keep these as columns.
    """

    __slots__ = ("first_message", "keep_texts", "last_activity", "message_count", "name", "texts")

    def __init__(self, *, keep_texts: bool = True) -> None:
        self.keep_texts = keep_texts
        """Whether ``texts`` gathers every message's text (else only the first user message's is taken)."""
        self.message_count = 0
        self.first_message: str | None = None
        self.texts: list[str] = []
        self.name: str | None = None
        self.last_activity: float | None = None

    def add(self, entry: Any) -> None:
        """Take one decoded entry into account (any JSON value is accepted)."""
        if not isinstance(entry, dict):
            return
        kind = entry.get("type")
        if kind != "message":
            if kind == "session_info":
                self.take(kind, entry.get("name"), False, None, None, None, None)
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            self.take(kind, None, False, None, None, None, None)
            return
        role = message.get("role")
        text = _text_of(message.get("content"), " ") if self._wants_text(role) else None
        self.take(kind, None, True, role, text, message.get("timestamp"), entry.get("timestamp"))

    def add_line(self, line: bytes) -> None:
        """``add`` of the entry on ``line`` (a line that is not JSON is skipped), without decoding what a
        listing does not show (``listed_lines``); the same result as ``add(loads(line))``."""
        parts = listed_parts(line, self._takes_text())
        if parts is None:
            try:
                entry = _json.loads(line)
            except ValueError:
                return
            self.add(entry)
        else:
            self.take(*parts)

    def _takes_text(self) -> bool:
        """Whether a user or assistant message's text is still taken (every one, or until the first)."""
        return self.keep_texts or self.first_message is None

    def _wants_text(self, role: Any) -> bool:
        return role in ("user", "assistant") and self._takes_text()

    def take(
        self,
        kind: Any,
        raw_name: Any,
        has_message: bool,
        role: Any,
        text: str | None,
        message_stamp: Any,
        entry_stamp: Any,
    ) -> None:
        """One entry's parts (``listed_lines.ListedParts``; ``text`` given when ``_wants_text(role)``)."""
        if kind == "session_info":
            self.name = raw_name.strip() or None if isinstance(raw_name, str) else None
        if kind != "message":
            return
        self.message_count += 1
        if not has_message or role not in ("user", "assistant"):
            return
        if self.keep_texts:
            if text:
                self.texts.append(text)
                if role == "user" and self.first_message is None:
                    self.first_message = text
        elif role == "user" and self.first_message is None:
            self.first_message = text or None
        activity = _message_ms(message_stamp)
        if activity is None or not _holdable(activity):
            activity = parse_iso_ms(entry_stamp)
        if activity is not None and _holdable(activity):
            self.last_activity = activity if self.last_activity is None else max(self.last_activity, activity)

    def info(self, path: Path | str, header: dict[str, Any], fallback: datetime) -> SessionInfo:
        """The ``SessionInfo``; ``fallback`` stands in for dates the session does not give (a file's mtime)."""
        header_created = _dt(parse_iso_ms(header.get("timestamp")))
        cwd = header.get("cwd")
        parent = header.get("parentSession")
        return SessionInfo(
            path,
            str(header.get("id")),
            cwd if isinstance(cwd, str) else "",
            self.name,
            parent if isinstance(parent, str) else None,
            header_created or fallback,
            _dt(self.last_activity) or header_created or fallback,
            self.message_count,
            self.first_message or "(no messages)",
            " ".join(self.texts),
        )


_BLOCK = 1 << 16
_NO_HEADER: Any = object()


def _blocks(fh: BinaryIO) -> Iterator[bytes]:
    """The file in blocks of whole lines (joined by ``\\n``, without the last ``\\n``), read 64 KiB at a time.

    Iterating the file instead reads a line at a time, and each read lets go of the interpreter lock: a
    listing's threads then spend more time handing it over than reading (a cold listing of 1,000 sessions,
    1 GB: 1.4 million lock waits). Blocks below the allocator's 128 KiB threshold for mapping fresh memory
    reuse the same memory (1 MiB blocks took 360,000 page faults over that gigabyte, 64 KiB ones 26,000).
    """
    pending: list[bytes] = []  # the start of a line longer than what was read so far
    while True:
        block = fh.read(_BLOCK)
        if not block:
            break
        cut = block.rfind(b"\n")
        if cut < 0:
            pending.append(block)
            continue
        if pending:
            pending.append(block[:cut])
            yield b"".join(pending)
            pending.clear()
        elif cut:
            yield block[:cut]
        pending.append(block[cut + 1 :])
    if pending:
        yield b"".join(pending)


def build_session_info(path: Path) -> SessionInfo | None:
    """Describe one session file, or ``None`` when it is unreadable or has no valid header (its first line
    that is JSON). Lines that are not JSON are skipped."""
    try:
        with path.open("rb") as fh:
            header: Any = _NO_HEADER
            builder = SessionInfoBuilder()
            add_line = builder.add_line
            for block in _blocks(fh):
                for raw in block.split(b"\n"):
                    line = raw.strip()
                    if not line:
                        continue
                    if header is not _NO_HEADER:
                        add_line(line)
                        continue
                    try:
                        header = _json.loads(line)
                    except ValueError:
                        continue
                    if not (isinstance(header, dict) and header.get("type") == "session"):
                        return None
            if header is _NO_HEADER:
                return None
        mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        return builder.info(path, header, mtime)
    except (OSError, UnicodeDecodeError):
        return None


PROCESS_BYTES = 64 << 20
"""Files to read of at least this many bytes in all are read in processes when a caller allows it."""


def read_files(
    paths: list[Path], size: int, *, workers: int = 10, processes: bool = False
) -> Iterator[SessionInfo | None]:
    """``build_session_info`` of every path, in order: in ``workers`` threads (the files are read while other
    threads decode), or with ``processes`` and ``size`` (their bytes) of at least ``PROCESS_BYTES``, in a
    process per CPU (decoding is Python's work, which threads of one process take turns at). Where processes
    cannot be started, or one dies, the files not described yet are read in threads.

    Processes are started afresh (``spawn``): they import the main module again, which a script must guard
    with ``if __name__ == "__main__"`` (the command line does; it is why the library's default is threads).
    """
    done = 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if processes and cpus > 1 and size >= PROCESS_BYTES and len(paths) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        try:
            pool = ProcessPoolExecutor(min(cpus, 8), mp_context=multiprocessing.get_context("spawn"))
        except (OSError, ValueError, ImportError, NotImplementedError):  # no processes here: threads
            pool = None
        if pool is not None:
            try:
                for info in pool.map(build_session_info, paths, chunksize=4):
                    done += 1
                    yield info
                return
            except (BrokenProcessPool, OSError):  # a process died (killed, out of memory): threads go on
                pass
            finally:  # also when the caller stops early (Ctrl+C): the files not started are not read
                pool.shutdown(wait=True, cancel_futures=True)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        yield from threads.map(build_session_info, paths[done:])


def list_session_files(directory: Path) -> list[Path]:
    """The ``*.jsonl`` files directly in ``directory`` (none when it does not exist), sorted by name."""
    try:
        with os.scandir(directory) as found:
            # a name with a ".jsonl" suffix (".jsonl" alone is a hidden file's name, as for Path.suffix);
            # is_file follows links and needs no stat for a plain file
            names = sorted(
                e.name for e in found if len(e.name) > 6 and e.name.endswith(".jsonl") and _is_file(e)
            )
    except OSError:
        return []
    return [directory / name for name in names]


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def collect_session_infos(
    files: list[Path], on_progress: ProgressCallback | None = None, cwd_filter: str | None = None
) -> list[SessionInfo]:
    """Describe ``files`` (at most 10 at a time, as pi), newest ``modified`` first."""
    infos: list[SessionInfo] = []
    total = len(files)
    for done, info in enumerate(read_files(files, 0), start=1):
        if on_progress is not None:
            on_progress(done, total)
        if info is None:
            continue
        if cwd_filter is not None and resolve_cwd(info.cwd or ".") != cwd_filter:
            continue
        infos.append(info)
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos


def find_most_recent_session(directory: Path, cwd_filter: str | None = None) -> Path | None:
    """The most recently modified valid session file in ``directory`` (optionally for one cwd)."""
    best: tuple[float, Path] | None = None
    for path in list_session_files(directory):
        header = read_header(path)
        if header is None:
            continue
        if cwd_filter is not None:
            cwd = header.get("cwd")
            if not isinstance(cwd, str) or resolve_cwd(cwd) != cwd_filter:
                continue
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, path)
    return None if best is None else best[1]
