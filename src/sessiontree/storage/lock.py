"""Advisory single-writer lock on a session file (``fcntl.flock`` on the file's own descriptor).

Locks are per open file description, so a second store in the same process conflicts too. It must not
decide when to lock: the stores take it at their first write and release it on ``close()``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from ..errors import SessionLockedError

__all__ = ["acquire", "is_locked", "release"]


def acquire(fd: int, path: Path | str) -> None:
    """Take the exclusive lock on ``fd`` without waiting; ``SessionLockedError`` naming ``path`` if held."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        raise SessionLockedError(
            f"{path} is locked by another writer (another process or session manager has it open for "
            "writing)",
            path=str(path),
        ) from exc


def release(fd: int) -> None:
    """Release the lock held on ``fd`` (closing the descriptor releases it too)."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def is_locked(path: Path | str) -> bool:
    """Whether some writer currently holds ``path``'s lock (``False`` when the file does not exist)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # never wait on a FIFO
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
