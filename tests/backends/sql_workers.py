"""Worker processes for the SQL concurrency and fault tests, and the checks of what they leave behind.

Workers are forked from a fork server that has already imported this module (cheap to start, and no
threads inherited from the test process). Each records what the store acknowledged in a log file, one
JSON line per ``os.write`` on an ``O_APPEND`` file, so a SIGKILL loses at most the record of an operation
that had not returned yet (a record torn by the kill is left out when read). Test code only: nothing here
is imported by the package.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import random
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from sessiontree import SessionManager, open_repo
from sessiontree.errors import SessionLockedError
from sessiontree.format.messages import assistant_message, tool_result_message, user_message

__all__ = [
    "Log",
    "contend",
    "hold_then_write",
    "many_sessions",
    "message_text",
    "open_fresh",
    "read_log",
    "set_up",
    "start",
    "steady_writer",
    "take_over",
    "turn_writer",
    "write_turn",
]

Record = dict[str, Any]
_CONTEXT: BaseContext | None = None


# -- processes -----------------------------------------------------------------------------------------
def _context() -> BaseContext:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        _CONTEXT = ctx
    return _CONTEXT


def start(target: Callable[..., None], *args: Any) -> BaseProcess:
    """Run ``target(*args)`` in a child of the fork server; the caller joins (or kills) it."""
    process = _context().Process(target=_guarded, args=(target, args), daemon=True)
    process.start()
    return process


def _guarded(target: Callable[..., None], args: tuple[Any, ...]) -> None:
    try:
        target(*args)
    except BaseException:
        log_path = next((a for a in args if isinstance(a, str) and a.endswith(".log")), None)
        if log_path is not None:
            Log(log_path).write(ev="crash", error=traceback.format_exc())
        raise


def join_all(processes: Sequence[BaseProcess], timeout: float) -> None:
    """Wait for every process; kill the ones still running after ``timeout`` seconds and fail."""
    deadline = time.monotonic() + timeout
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    late = [p for p in processes if p.is_alive()]
    for process in late:
        kill(process)
    assert not late, f"{len(late)} worker(s) still running after {timeout} s"
    failed = [p.exitcode for p in processes if p.exitcode != 0]
    assert not failed, f"workers exited with {failed}"


def kill(process: BaseProcess) -> None:
    """SIGKILL a worker and reap it."""
    if process.pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
    process.join(10)


# -- logs ----------------------------------------------------------------------------------------------
class Log:
    """An append-only record file, one ``write`` per record."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, **record: Any) -> None:
        record.setdefault("pid", os.getpid())
        record.setdefault("t", time.monotonic())
        data = (json.dumps(record) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def read_log(path: str | Path) -> list[Record]:
    """The records of a log (none when the worker never wrote one), without a last one torn by a SIGKILL
    (a write that crosses a page can stop between the pages): that operation was never acknowledged."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    whole, _, _torn = text.rpartition("\n")
    records = [json.loads(line) for line in whole.splitlines() if line.strip()]
    crashes = [r["error"] for r in records if r.get("ev") == "crash"]
    assert not crashes, f"a worker failed:\n{crashes[0]}"
    return records


def wait_for(path: str | Path, predicate: Callable[[list[Record]], bool], timeout: float = 20.0) -> None:
    """Poll a log until ``predicate`` holds for its records."""
    deadline = time.monotonic() + timeout
    while not predicate(read_log(path)):
        assert time.monotonic() < deadline, f"{path}: the worker did not get there in {timeout} s"
        time.sleep(0.005)


# -- turns ---------------------------------------------------------------------------------------------
def user(tag: str) -> dict[str, Any]:
    return user_message(f"user {tag}", 1)


def _assistant(tag: str) -> dict[str, Any]:
    calls = [
        {"type": "toolCall", "id": f"call-{tag}-{i}", "name": "read", "arguments": {"path": f"f{i}.py"}}
        for i in (1, 2)
    ]
    content = [{"type": "text", "text": f"assistant {tag}"}, *calls]
    return assistant_message(
        content, api="anthropic-messages", provider="anthropic", model="claude-test", timestamp=2
    )


def _tool_result(tag: str, i: int) -> dict[str, Any]:
    return tool_result_message(
        f"call-{tag}-{i}",
        "read",
        [{"type": "text", "text": f"result {tag} {i}"}],
        is_error=False,
        timestamp=3,
    )


TURN_KINDS = ("user", "assistant", "toolResult", "toolResult")


def write_turn(manager: SessionManager, tag: str, pause: Callable[[], None] = lambda: None) -> list[str]:
    """One turn in one transaction: user, assistant with two tool calls, two tool results; their ids."""
    ids: list[str] = []
    with manager.transaction():
        ids.append(manager.append_message(user(tag)))
        pause()
        ids.append(manager.append_message(_assistant(tag)))
        pause()
        ids.append(manager.append_message(_tool_result(tag, 1)))
        pause()
        ids.append(manager.append_message(_tool_result(tag, 2)))
    return ids


def message_text(entry: dict[str, Any]) -> str:
    """The text a test put in a message entry ('' for anything else)."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"]
    return " ".join(texts)


def turn_tag(entry: dict[str, Any]) -> str:
    """The tag of a turn's entry (``user T``, ``assistant T``, ``result T i``)."""
    text = message_text(entry)
    return text.split(" ")[1] if " " in text else ""


# -- workers -------------------------------------------------------------------------------------------
def _sleep_until(start_at: float) -> None:
    time.sleep(max(0.0, start_at - time.time()))


def set_up(url: str, log_path: str, start_at: float) -> None:
    """Apply the migrations of a (fresh) database, starting at ``start_at`` with the other workers."""
    _sleep_until(start_at)
    with open_repo(url) as repo:
        Log(log_path).write(ev="setup", applied=repo.setup(), version=repo.schema_version())  # type: ignore[attr-defined]


def open_fresh(urls: Sequence[str], log_path: str, start_at: float, gap: float) -> None:
    """Set up each of ``urls`` (new SQLite files: a read creates none) at ``start_at + k * gap``, when the
    other workers do too, recording what happened: a store opened, or the error it raised."""
    log = Log(log_path)
    for k, url in enumerate(urls):
        _sleep_until(start_at + k * gap)
        try:
            with open_repo(url) as repo:
                repo.setup()
                log.write(ev="opened", url=url, version=repo.schema_version())  # type: ignore[attr-defined]
        except Exception as exc:  # the test reports every failure, not the first
            log.write(ev="error", url=url, error=f"{type(exc).__name__}: {exc}")


def contend(url: str, sid: str, log_path: str, bursts: int, per_burst: int, start_at: float) -> None:
    """Take the session's lease ``bursts`` times (retrying while another writer has it), append
    ``per_burst`` messages each time, then close: the next writer takes over and continues."""
    log = Log(log_path)
    rng = random.Random(os.getpid())
    _sleep_until(start_at)
    with open_repo(url) as repo:
        for burst in range(bursts):
            manager = repo.open(sid, stale_leaf="latest")
            try:
                tag = f"{os.getpid()}.{burst}.0"
                while True:
                    try:
                        first = manager.append_message(user(tag))
                        break
                    except SessionLockedError as exc:
                        log.write(ev="refused", kind=exc.kind, msg=str(exc))
                        time.sleep(rng.uniform(0.001, 0.01))
                began = time.monotonic()
                log.write(ev="ack", id=first, tag=tag)
                for i in range(1, per_burst):
                    tag = f"{os.getpid()}.{burst}.{i}"
                    log.write(ev="ack", id=manager.append_message(user(tag)), tag=tag)
                time.sleep(rng.uniform(0.0, 0.005))
                ended = time.monotonic()
            finally:
                manager.close()
            log.write(ev="hold", began=began, ended=ended)
            time.sleep(rng.uniform(0.0, 0.01))


def many_sessions(url: str, worker: int, sessions: int, rounds: int, log_path: str, start_at: float) -> None:
    """Create ``sessions`` sessions and write them all round-robin: single appends, and every fourth
    round a turn in one transaction."""
    log = Log(log_path)
    _sleep_until(start_at)
    with open_repo(url) as repo:
        managers = [repo.create(f"/work/worker-{worker}/{k}") for k in range(sessions)]
        try:
            for r in range(rounds):
                for manager in managers:
                    sid = manager.get_session_id()
                    if r % 4 == 3:
                        ids = write_turn(manager, f"{sid}/{r}")
                        log.write(ev="ack", sid=sid, ids=ids, tag=f"{sid}/{r}", turn=True)
                    else:
                        tag = f"{sid}/{r}"
                        log.write(ev="ack", sid=sid, ids=[manager.append_message(user(tag))], tag=tag)
        finally:
            for manager in managers:
                manager.close()


def turn_writer(url: str, sid: str, log_path: str, go: str) -> None:
    """Open the session, wait for ``go`` to exist, then write turns until killed, pausing inside each
    turn's transaction and between turns (an agent's pace: the write lock of a SQLite file is free most of
    the time). A refused lease (a killed writer's, not expired yet) is retried, a lost one reopened."""
    log = Log(log_path)
    rng = random.Random(os.getpid())
    with open_repo(url) as repo:
        manager = repo.open(sid, stale_leaf="latest")
        log.write(ev="ready")
        while not os.path.exists(go):
            time.sleep(0.001)
        n = 0
        while True:
            tag = f"{os.getpid()}.{n}"
            log.write(ev="begin", tag=tag)
            try:
                ids = write_turn(manager, tag, lambda: time.sleep(rng.uniform(0.0, 0.001)))
            except SessionLockedError as exc:
                log.write(ev="refused", kind=exc.kind, msg=str(exc))
                if exc.kind == "lease_lost":
                    manager.close()
                    manager = repo.open(sid, stale_leaf="latest")
                time.sleep(0.01)
                continue
            log.write(ev="ack", tag=tag, ids=ids)
            n += 1
            time.sleep(rng.uniform(0.002, 0.012))


def hold_then_write(
    url: str, sid: str, log_path: str, go: str, attempts: tuple[str, ...] = ("append", "turn")
) -> None:
    """Take the lease with one append, then wait for ``go`` to exist and try each of ``attempts`` (an
    ``append``, a ``turn``), logging what was written or refused; then close."""
    log = Log(log_path)
    with open_repo(url) as repo:
        manager = repo.open(sid)
        log.write(ev="ack", id=manager.append_message(user("A-first")), tag="A-first")
        log.write(ev="ready")
        while not os.path.exists(go):
            time.sleep(0.002)
        for attempt in attempts:
            try:
                if attempt == "append":
                    written = [manager.append_message(user("A-after"))]
                else:
                    written = write_turn(manager, "A-turn")
                log.write(ev="written", attempt=attempt, ids=written)
            except SessionLockedError as exc:
                log.write(ev="refused", attempt=attempt, kind=exc.kind, msg=str(exc))
        manager.close()
        log.write(ev="closed")


def take_over(url: str, sid: str, log_path: str, appends: int) -> None:
    """Open the session, retry the first append until the lease is free, then append more and close."""
    log = Log(log_path)
    with open_repo(url) as repo:
        manager = repo.open(sid)
        log.write(ev="opened", leaf=manager.get_leaf_id())
        while True:
            try:
                first = manager.append_message(user("B-0"))
                break
            except SessionLockedError as exc:
                log.write(ev="refused", kind=exc.kind, msg=str(exc))
                time.sleep(0.005)
        log.write(ev="ack", id=first, tag="B-0", problems=[p.kind for p in manager.problems])
        for i in range(1, appends):
            log.write(ev="ack", id=manager.append_message(user(f"B-{i}")), tag=f"B-{i}")
        manager.close()


def steady_writer(url: str, worker: int, appends: int, log_path: str, start_at: float) -> None:
    """A session of its own, written as fast as it goes: appends, and a turn every tenth."""
    log = Log(log_path)
    _sleep_until(start_at)
    with open_repo(url) as repo:
        manager = repo.create(f"/work/steady-{worker}")
        try:
            for i in range(appends):
                tag = f"{worker}.{i}"
                ids = write_turn(manager, tag) if i % 10 == 9 else [manager.append_message(user(tag))]
                log.write(ev="ack", sid=manager.get_session_id(), ids=ids, tag=tag)
        finally:
            manager.close()


# -- checks --------------------------------------------------------------------------------------------
@dataclass
class Stored:
    """A session as the store has it: its entries in append order, checked to form one chain."""

    entries: list[dict[str, Any]]

    @property
    def ids(self) -> list[str]:
        return [str(e["id"]) for e in self.entries]

    def by_id(self) -> dict[str, dict[str, Any]]:
        return {str(e["id"]): e for e in self.entries}


def stored(url: str, sid: str, *, chain: bool = True) -> Stored:
    """Open ``sid`` read-only in a fresh repository; every id once, parents valid (one chain if asked)."""
    with open_repo(url) as repo:
        manager = repo.open(sid, read_only=True)
        try:
            assert manager.problems == [], [p.message for p in manager.problems]
            entries = manager.get_entries()
            context = manager.build_session_context()
        finally:
            manager.close()
    ids = [str(e["id"]) for e in entries]
    assert len(set(ids)) == len(ids), "duplicate entry ids"
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        parent = entry.get("parentId")
        assert parent is None or parent in seen, (
            f"entry {entry['id']} has parent {parent} not written before it"
        )
        if chain:
            assert parent == (ids[i - 1] if i else None), f"entry {i} does not continue from entry {i - 1}"
        seen.add(str(entry["id"]))
    if chain and entries:
        assert len(context.messages) == sum(1 for e in entries if e["type"] == "message")
    return Stored(entries)


def turns_of(entries: Sequence[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The session's turns (``tag``, four entries), failing on any partial or interleaved turn."""
    i = 0
    while i < len(entries):
        group = list(entries[i : i + 4])
        kinds = tuple(e.get("message", {}).get("role") for e in group)
        tags = {turn_tag(e) for e in group}
        assert kinds == TURN_KINDS and len(tags) == 1, f"partial turn at entry {i}: {kinds}, {tags}"
        yield tags.pop(), group
        i += 4
