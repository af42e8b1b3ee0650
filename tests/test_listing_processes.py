"""A cold listing of many bytes reads its files in processes (``session_dirs.read_files``, what the command
line asks for): the same descriptions, in the same order, as threads give; threads take over the files left
when a process dies."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from sessiontree.storage import session_dirs
from sessiontree.storage.listing_cache import list_sessions
from sessiontree.storage.session_dirs import read_files

_HEADER = {"type": "session", "version": 3, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def _sessions(directory: Path, count: int) -> list[Path]:
    paths = []
    for n in range(count):
        lines = [json.dumps({**_HEADER, "id": f"0199{n:04x}-0000-7000-8000-000000000000"})]
        for k in range(40 + n):
            message = {"role": "user" if k % 2 else "assistant", "content": f"session {n} message {k}"}
            lines.append(
                json.dumps({"type": "message", "id": f"{n}-{k}", "parentId": None, "message": message})
            )
        if n % 5 == 3:
            lines.append("{damaged")
        path = directory / f"2026-01-01T00-00-00-000Z_{n:03d}.jsonl"
        path.write_text("\n".join(lines) + "\n", "utf-8")
        paths.append(path)
    paths.append(directory / "not-a-session.jsonl")
    paths[-1].write_text("[1, 2]\n", "utf-8")
    return paths


def _described(infos: list[object]) -> list[object]:
    return [None if i is None else i.to_dict() for i in infos]  # type: ignore[attr-defined]


@pytest.fixture
def many_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_dirs, "PROCESS_BYTES", 0)  # these small files count as many bytes


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


pytestmark = pytest.mark.skipif(_cpus() < 2, reason="one CPU: a listing never starts processes")


def test_processes_describe_the_files_as_threads_do(tmp_path: Path, many_bytes: None) -> None:
    paths = _sessions(tmp_path, 24)
    in_threads = list(read_files(paths, 0))
    assert not multiprocessing.active_children()
    described = read_files(paths, 1, processes=True)
    first = next(described)
    assert multiprocessing.active_children(), "the files were not read in processes"
    in_processes = [first, *described]
    assert _described(in_processes) == _described(in_threads)
    assert in_threads[-1] is None and sum(i is not None for i in in_threads) == 24


def test_threads_read_what_is_left_when_the_processes_die(tmp_path: Path, many_bytes: None) -> None:
    paths = _sessions(tmp_path, 40)
    expected = _described(list(read_files(paths, 0)))
    described = read_files(paths, 1, processes=True)
    got = [next(described)]
    for child in multiprocessing.active_children():
        os.kill(child.pid or 0, signal.SIGKILL)
    got.extend(described)
    assert _described(got) == expected


def test_a_small_listing_starts_no_process(tmp_path: Path) -> None:
    paths = _sessions(tmp_path, 6)
    size = sum(p.stat().st_size for p in paths)
    assert size < session_dirs.PROCESS_BYTES
    described = read_files(paths, size, processes=True)
    next(described)
    assert not multiprocessing.active_children()
    list(described)


def test_a_listing_in_processes_is_the_listing_in_threads(
    tmp_path: Path, many_bytes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sessions(tmp_path, 12)
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(tmp_path / "cache-a"))
    threads = list_sessions([tmp_path])
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(tmp_path / "cache-b"))
    processes = list_sessions([tmp_path], processes=True)
    assert processes.read == threads.read == 13
    assert _described(processes.infos) == _described(threads.infos)  # type: ignore[arg-type]
    again = list_sessions([tmp_path], processes=True)  # from the cache written in processes' listing
    assert again.read == 0 and _described(again.infos) == _described(threads.infos)  # type: ignore[arg-type]
