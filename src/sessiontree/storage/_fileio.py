"""Low-level file helpers for the JSONL store: exclusive creation, whole writes, atomic rewrites, free names.

Pure OS plumbing on paths and descriptors; it must not know what a session or an entry is.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from ..errors import StorageError
from . import lock

__all__ = [
    "FILE_MODE",
    "AlreadyExistsError",
    "atomic_replace",
    "ensure_dir",
    "first_free",
    "fsync_dir",
    "open_regular",
    "read_all",
    "require_safe_dir",
    "resolve_session_dir",
    "unsafe_dir_reason",
    "write_all",
    "write_new_file",
]

FILE_MODE = 0o600
DIR_MODE = 0o700
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class AlreadyExistsError(StorageError):
    """Something is already at the path an exclusive write was to create."""


def ensure_dir(directory: Path) -> None:
    """Create ``directory`` and missing parents with mode 0700 (existing ones are left alone)."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(path, DIR_MODE)  # a umask must not loosen it


def fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename or a new file in it survives a crash (best effort where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse fsync on directories
            os.fsync(fd)
    finally:
        os.close(fd)


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """Open ``path`` without blocking and return the descriptor, refusing anything but a regular file.

    ``O_NONBLOCK`` keeps a FIFO (or a device) named like a session from hanging the open; it has no effect
    on regular files. Raises ``FileNotFoundError`` for a missing path and ``StorageError`` otherwise.
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StorageError(f"{path}: cannot open: {exc.strerror or exc}", path=str(path)) from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise StorageError(f"{path}: cannot stat: {exc.strerror or exc}", path=str(path)) from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StorageError(f"{path}: not a regular file ({_kind_of(mode)})", path=str(path))
    os.set_blocking(fd, True)  # a regular file: the flag only mattered for the open itself
    return fd


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def unsafe_dir_reason(directory: Path) -> str | None:
    """Why writing session files in ``directory`` is unsafe, as ssh judges its own files, or ``None``.

    Unsafe: writable by every user without the sticky bit (anyone could swap our files), or owned by another
    (non-root) user and writable by group or others. A symbolic link to a directory is followed only when
    the link is ours (or root's) and its target is writable by no one but its owner: another user who can
    plant a link where a session directory goes must not be able to point our writes at a directory of theirs.
    """
    try:
        st = os.stat(directory)
        link = os.lstat(directory)
    except OSError:
        return None  # missing: it is created 0700 by us
    if stat.S_ISLNK(link.st_mode):
        reason = _link_reason(link, st)
        if reason is not None:
            return reason
    sticky = bool(st.st_mode & stat.S_ISVTX)
    if st.st_mode & stat.S_IWOTH and not sticky:
        return f"it is writable by every user (mode {stat.S_IMODE(st.st_mode):o})"
    if st.st_uid not in (os.geteuid(), 0) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it belongs to another user (uid {st.st_uid}) and others can write to it"
    return None


def _link_reason(link: os.stat_result, target: os.stat_result | None) -> str | None:
    """Why following a symbolic link (``lstat`` result) to a session directory is unsafe, or ``None``.

    The link must be ours or root's: another user who can write where it stands must not be able to point
    our writes at a directory of theirs. With ``target`` (the link is the session directory itself), the
    directory it names must be writable by its owner alone.
    """
    if link.st_uid not in (os.geteuid(), 0):
        return f"it is a symbolic link that belongs to another user (uid {link.st_uid})"
    if target is not None and target.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is a symbolic link to a directory that others can write to (mode {stat.S_IMODE(target.st_mode):o})"
    return None


def resolve_session_dir(directory: Path) -> Path:
    """``directory`` with every symbolic link resolved, after checking each link on the way (``StorageError``
    names the link and why it is refused): a link another user planted is never followed."""
    directory = Path(os.path.abspath(directory.expanduser()))
    current = Path(directory.anchor)
    parts = directory.parts[1:]
    for n, part in enumerate(parts, start=1):
        current = current / part
        try:
            link = os.lstat(current)
        except OSError:
            break  # the rest does not exist yet: it is created 0700 by us
        if not stat.S_ISLNK(link.st_mode):
            continue
        try:
            target = os.stat(current) if n == len(parts) else None
        except OSError:
            target = None
        reason = _link_reason(link, target)
        if reason is not None:
            raise StorageError(
                f"{current}: refusing to use this session directory: {reason}", path=str(current)
            )
    return directory.resolve()


def require_safe_dir(directory: Path) -> None:
    """Raise ``StorageError`` unless ``directory`` is safe to write session files in."""
    reason = unsafe_dir_reason(directory)
    if reason is not None:
        raise StorageError(
            f"{directory}: refusing to write session files in this directory: {reason}", path=str(directory)
        )


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` with one ``os.write`` (continuing only if the kernel wrote less)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_all(path: Path) -> bytes:
    """The whole (regular) file as bytes."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return handle.read()


def first_free(base: Path, suffix: str) -> Path:
    """``<base><suffix><n>`` for the first n >= 1 that does not exist."""
    n = 1
    while True:
        candidate = base.with_name(f"{base.name}{suffix}{n}")
        if not os.path.lexists(candidate):
            return candidate
        n += 1


def write_new_file(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path`` (0600, must not exist) and fsync it."""
    require_safe_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, FILE_MODE)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_file(directory: Path, stem: str) -> tuple[Path, int]:
    for n in range(1000):
        temp = directory / f".{stem}.tmp-{os.getpid()}-{n}"
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | _CLOEXEC, FILE_MODE)
        except FileExistsError:
            continue
        return temp, fd
    raise StorageError(f"{directory}: cannot create a temporary file", path=str(directory))


def _as_error_of(exc: OSError, path: Path) -> OSError:
    """The error naming the file being written rather than its temporary file (which no longer exists)."""
    return OSError(exc.errno, exc.strerror, str(path))


def _take_mode_and_owner(fd: int, path: Path) -> None:
    """Give the new file behind ``fd`` the mode and owner of the file it replaces (as far as allowed)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return  # a new file keeps FILE_MODE
    os.fchmod(fd, st.st_mode & 0o7777)
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            with contextlib.suppress(PermissionError):  # not root: at least the group, when we belong to it
                os.fchown(fd, -1, st.st_gid)


def atomic_replace(
    path: Path, data: bytes, *, exclusive: bool = False, keep_open: bool = False
) -> int | None:
    """Write ``data`` to a temp file in the same directory, fsync, move it to ``path``, fsync the directory.

    ``exclusive`` fails (``AlreadyExistsError``) when ``path`` already exists instead of replacing it. With
    ``keep_open`` the new file is writer-locked before it becomes visible and its ``O_APPEND`` descriptor is
    returned for further appends (the caller owns it). A replaced file's mode and owner carry over to the new
    one; a new file is 0600.
    """
    ensure_dir(path.parent)
    require_safe_dir(path.parent)
    try:
        temp, fd = _temp_file(path.parent, path.name)
    except OSError as exc:
        raise _as_error_of(exc, path) from None
    try:
        if not exclusive:
            _take_mode_and_owner(fd, path)
        if keep_open:
            lock.acquire(fd, path)
        write_all(fd, data)
        os.fsync(fd)
        if exclusive:
            try:
                os.link(temp, path)
            except FileExistsError as exc:
                raise AlreadyExistsError(f"{path}: already exists", path=str(path)) from exc
            except OSError:  # no hard links on this file system: check, then rename
                if os.path.lexists(path):
                    raise AlreadyExistsError(f"{path}: already exists", path=str(path)) from None
                os.replace(temp, path)
            else:
                os.unlink(temp)
        else:
            os.replace(temp, path)
        fsync_dir(path.parent)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        if isinstance(exc, OSError) and exc.filename in (None, str(temp)):
            raise _as_error_of(exc, path) from None
        raise
    if keep_open:
        return fd
    os.close(fd)
    return None
