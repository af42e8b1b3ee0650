"""The per-turn workload of the storage benchmark: 8 writers on 8 sessions at once, each in a process of its
own, each turn reading the context and appending a user message, an assistant message with two tool calls
and their two results in one transaction; for sessiontree and for the OpenAI Agents SDK's sessions.

The SDK's sessions do the same work on the same database file or server: ``get_items()`` (the whole history,
which is what the SDK gives a model), then one ``add_items`` of the turn's items (5 in the Responses format:
the assistant's two tool calls are items of their own). Errors are counted, not raised: a row says how many
turns failed and why. Only benchmark code; writes where its caller points it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.generate import _START_MS, MessageFactory
from sessiontree.integrations.openai_agents.mapping import default_items

__all__ = ["KINDS", "TurnResult", "prefill", "run_turns", "turn_messages"]

Message = dict[str, Any]

KINDS = ("sessiontree", "SQLiteSession", "SQLAlchemySession")
"""Who writes: sessiontree (any store URL or a JSONL directory), the SDK's SQLiteSession (a SQLite file)
and its SQLAlchemySession (a SQLAlchemy async URL)."""


def turn_messages(turns: int, seed: int) -> list[list[Message]]:
    """``turns`` realistic turns: user, assistant with two tool calls, the two tool results."""
    factory = MessageFactory(random.Random(seed))
    ts = _START_MS
    out: list[list[Message]] = []
    for _ in range(turns):
        ts += 30_000
        user = factory.user(ts)
        assistant = factory.assistant(ts + 5_000, tool_calls=2, thinking=False)
        calls = [b for b in assistant["content"] if b["type"] == "toolCall"]
        results = [factory.tool_result(call, ts + 6_000 + i) for i, call in enumerate(calls)]
        out.append([user, assistant, *results])
    return out


def _items(turn: Sequence[Message]) -> list[dict[str, Any]]:
    return [item for message in turn for item in default_items(message)]


# -- one writer per kind -------------------------------------------------------------------------------
def _sessiontree_writer(target: str, sid: str) -> tuple[Callable[[list[Message]], None], Callable[[], None]]:
    from sessiontree import SessionManager, open_repo

    if target.startswith(("sqlite:", "postgresql:")):
        repo = open_repo(target)
        manager = repo.open(sid)
        close: Callable[[], None] = lambda: (manager.close(), repo.close())  # noqa: E731
    else:  # JSONL: ``sid`` is the session's file
        manager = SessionManager.open(sid)
        close = manager.close

    def turn(messages: list[Message]) -> None:
        manager.build_session_context()
        with manager.transaction():
            for message in messages:
                manager.append_message(message)

    return turn, close


def _sdk_session(kind: str, target: str, sid: str, *, create: bool = False) -> Any:
    if kind == "SQLiteSession":
        from agents import SQLiteSession

        return SQLiteSession(sid, target)
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

    # tables of its own: SQLiteSession's (agent_sessions, agent_messages) may share the file
    return SQLAlchemySession.from_url(
        sid, url=target, sessions_table="sa_sessions", messages_table="sa_messages", create_tables=create
    )


async def _sdk_close(session: Any) -> None:
    engine = getattr(session, "_engine", None)
    if engine is not None:
        await engine.dispose()
    elif hasattr(session, "close"):
        session.close()


@dataclass
class TurnResult:
    """One writer's run: when it started and ended (monotonic clock, shared by the processes), turns."""

    began: float
    ended: float
    turns: int
    errors: int = 0
    first_error: str | None = None


def _worker(kind: str, target: str, sid: str, turns: list[list[Message]], barrier: Any, queue: Any) -> None:
    errors, first_error = 0, None

    def failed(exc: BaseException) -> None:
        nonlocal errors, first_error
        errors += 1
        first_error = first_error or f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    if kind == "sessiontree":
        turn, close = _sessiontree_writer(target, sid)
        barrier.wait()
        began = time.monotonic()
        for messages in turns:
            try:
                turn(messages)
            except Exception as exc:
                failed(exc)
        ended = time.monotonic()
        close()
    else:

        async def run() -> tuple[float, float]:
            session = _sdk_session(kind, target, sid)
            await session.get_items()  # connect before the clock starts
            barrier.wait()
            began = time.monotonic()
            for messages in turns:
                try:
                    await session.get_items()
                    await session.add_items(_items(messages))
                except Exception as exc:
                    failed(exc)
            ended = time.monotonic()
            await _sdk_close(session)
            return began, ended

        began, ended = asyncio.run(run())
    queue.put(TurnResult(began, ended, len(turns) - errors, errors, first_error))


def prefill(kind: str, target: str, sids: Sequence[str], history: list[list[Message]]) -> None:
    """Give each SDK session the same history the sessiontree sessions start with (tables made here)."""

    async def fill() -> None:
        for n, sid in enumerate(sids):
            session = _sdk_session(kind, target, sid, create=n == 0)  # tables once, before the writers
            await session.add_items([item for turn in history for item in _items(turn)])
            await _sdk_close(session)

    asyncio.run(fill())


@dataclass
class Workload:
    """The whole run of one kind on one store: turns per second over the wall time of all writers."""

    turns: int
    seconds: float
    errors: int
    first_error: str | None
    results: list[TurnResult] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.turns / self.seconds if self.seconds > 0 else 0.0


def run_turns(kind: str, target: str, sids: Sequence[str], turns: int, seed: int) -> Workload:
    """One writer process per session, all released at once; the wall time runs from the first start to
    the last end."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(sids))
    queue = ctx.Queue()
    work = [turn_messages(turns, seed * 1000 + n) for n in range(len(sids))]
    processes = [
        ctx.Process(target=_worker, args=(kind, target, sid, work[n], barrier, queue))
        for n, sid in enumerate(sids)
    ]
    for process in processes:
        process.start()
    results = [queue.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(60)
    began = min(r.began for r in results)
    ended = max(r.ended for r in results)
    errors = sum(r.errors for r in results)
    first = next((r.first_error for r in results if r.first_error), None)
    return Workload(sum(r.turns for r in results), ended - began, errors, first, results)


def sqlalchemy_url(target: str) -> str:
    """The SQLAlchemy async URL of a store URL (``sqlite+aiosqlite``, ``postgresql+psycopg``)."""
    if target.startswith("sqlite:"):
        return "sqlite+aiosqlite:" + target[len("sqlite:") :]
    return "postgresql+psycopg:" + target.split(":", 1)[1]


def sqlite_path(target: str) -> Path:
    """The file of a ``sqlite:///`` URL."""
    return Path(target[len("sqlite://") :])
