"""One writer per session: the chat takes the writer role when it opens a session, so a second chat on the
same session says so at once (naming the process that holds it) instead of failing at the first send.

Names the holder of a file's lock from ``/proc/locks`` where there is one (Linux); a database session's
lease names its holder itself. Reads only; the lock itself is the storage layer's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sessiontree.format.safe_text import one_line

from ...errors import SessionLockedError

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = ["claim", "lock_holder"]


def _command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    if len(words) > 1 and Path(words[0]).name.startswith("python") and words[1] == "-m":
        words = words[2:]  # python -m sessiontree chat … → sessiontree chat …
    elif words:
        words[0] = Path(words[0]).name
    return one_line(" ".join(words), 80)


def lock_holder(path: str | Path, locks: Path = Path("/proc/locks")) -> str | None:
    """``process 1234 (sessiontree chat …)`` holding ``path``'s lock, or None when that cannot be told."""
    try:
        st = os.stat(path)
        table = locks.read_text()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter, not the holder
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
            try:
                pid = int(fields[4])
            except ValueError:
                return None
            if pid <= 0:
                return None
            command = _command_of(pid)
            return f"process {pid}" + (f" ({command})" if command else "")
    return None


def claim(manager: SessionManager) -> None:
    """Take the writer role of ``manager``'s session; ``SessionLockedError`` saying who has it, if anyone."""
    try:
        manager.claim_writer()
    except SessionLockedError as error:
        file = manager.get_session_file()
        if file is None:
            raise SessionLockedError(
                f"{error}; close it there first, or open it read-only with sessiontree tree / context",
                path=error.path,
            ) from None
        who = lock_holder(file) or "another process"
        raise SessionLockedError(
            f"{file} is open for writing in {who}; close it there first, or continue from a copy: "
            f"sessiontree clone {file}",
            path=file,
        ) from None
