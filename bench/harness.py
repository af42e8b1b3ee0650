"""The agent harness benchmark: per-turn overhead of ``AgentHarness`` on generated sessions of 1k and 100k
entries with an instant scripted model, side by side in one run, with the issue's targets.

``.venv/bin/python bench/harness.py`` (``--quick`` for a small smoke run, ``--json`` for data, ``--stores`` to
pick the back ends). A turn is one request plus its tool round; measured are whole prompts on a copy of each
session in every store (a JSONL file with ``flush`` durability; the same file imported into SQLite and into
PostgreSQL: ``$SESSIONTREE_TEST_POSTGRES_URL``'s server, else a throwaway cluster from
``tests/pg_server.py``; each at the JSONL file's durability: SQLite ``synchronous=NORMAL``, PostgreSQL
``synchronous_commit=off``), after one warm-up prompt that builds the context cache. Subtracted from the wall time: the
scripted model's own streaming and the tool's execution, each measured separately in the same run, so the
rows show what the harness adds (snapshot, conversion, hooks, persistence, save points, compaction checks).
It writes only under a temporary directory and the benchmark data directory.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import DATA_DIR, ensure_session
from bench.storage import database, import_file, postgres_server
from sessiontree import SessionManager, open_repo
from sessiontree.agent import AgentHarness, AgentTool, ScriptedModel, ToolResult, reply, tool_call
from sessiontree.llm import Context, complete, convert_to_llm

__all__ = ["HarnessResult", "main", "measure", "render"]

DEFAULT_SIZES = (1_000, 100_000)
STORES = {"jsonl": "JSONL file", "sqlite": "SQLite", "postgres": "PostgreSQL"}
# Each store at the durability the JSONL file gets here (``flush``: written, not fsynced per entry), so the
# rows compare what the harness and the store do rather than the disk's fsync.
SQLITE_SYNC = "NORMAL"
PG_COMMIT = "off"
TARGET_MS = 2.0
TARGET_RATIO = 2.0
USAGE = (1_000, 10, 0, 0)  # explicit usage: the instant model estimates nothing


async def _noop(_call_id: str, _args: dict[str, Any], _signal: Any, _update: Any) -> ToolResult:
    return ToolResult([{"type": "text", "text": "ok"}])


NOOP = AgentTool("noop", "does nothing", {"type": "object", "properties": {}}, _noop, repeatable=True)


@dataclass
class HarnessResult:
    """Per-turn times on one session size (seconds; medians of the repeats)."""

    entries: int
    """Entries of the generated session (before the measured prompts)."""
    context_messages: int
    cold_prompt_s: float
    text_turn_s: float
    tool_turn_s: float
    model_s: float
    tool_s: float
    rebuilds: int
    extensions: int
    round_trips_s: tuple[float, float] | None = None
    """A database store's ``SELECT 1`` round trip: back to back, and after 1 ms of work in this process (what
    an append meets after a turn's other work: the server's process, and its processor, idle since)."""

    @property
    def overhead_s(self) -> float:
        """Harness time per turn: the tool-turn mix minus the model's and the tool's own time."""
        return max(0.0, self.tool_turn_s - self.model_s - self.tool_s)

    @property
    def text_overhead_s(self) -> float:
        return max(0.0, self.text_turn_s - self.model_s)


def _script(turns: int, tools: int) -> list[Any]:
    """A prompt of ``turns`` requests: ``tools`` calls in each but the last."""
    steps = [
        reply(*(tool_call("noop", id=f"c{t}_{i}") for i in range(tools)), usage=USAGE)
        for t in range(turns - 1)
    ]
    return [*steps, reply("done", usage=USAGE)]


async def _model_alone(messages: list[dict[str, Any]], repeats: int) -> float:
    """What the instant model costs per request on this context (it records the request and streams)."""
    model = ScriptedModel([reply("done", usage=USAGE)] * repeats, context_window=10_000_000)
    converted = convert_to_llm(messages)
    started = time.perf_counter()
    for _ in range(repeats):
        await complete(model, Context(messages=converted, system_prompt="s"))
    return (time.perf_counter() - started) / repeats


async def _tool_alone(repeats: int) -> float:
    started = time.perf_counter()
    for _ in range(repeats):
        await _noop("c", {}, None, None)
    return (time.perf_counter() - started) / repeats


async def _measure(path: Path, prompts: int, turns: int, url: str | None = None) -> HarnessResult:
    if url is None:
        manager = SessionManager.open(path)
    else:  # the same session imported into a database store
        repo = open_repo(url)
        manager = repo.open(import_file(repo, path))
    entries = len(manager.get_entries())
    model = ScriptedModel(context_window=10_000_000)  # large enough that the checks run and never compact
    h = AgentHarness(manager, model, tools=[NOOP])
    model.add(*_script(1, 0))
    started = time.perf_counter()
    await h.prompt("warm up")
    cold = time.perf_counter() - started
    text_times: list[float] = []
    for i in range(prompts):
        model.add(*_script(1, 0))
        gc.collect()
        started = time.perf_counter()
        await h.prompt(f"question {i}")
        text_times.append(time.perf_counter() - started)
    tool_times: list[float] = []
    for i in range(prompts):
        model.add(*_script(turns, 1))
        gc.collect()
        started = time.perf_counter()
        await h.prompt(f"task {i}")
        tool_times.append((time.perf_counter() - started) / turns)
    messages = manager.build_session_context().messages
    round_trips = _round_trips(url) if url is not None and url.startswith("postgresql") else None
    model_s = await _model_alone(messages, max(3, prompts))
    tool_s = await _tool_alone(1000)
    result = HarnessResult(
        entries=entries,
        context_messages=len(messages),
        cold_prompt_s=cold,
        text_turn_s=statistics.median(text_times),
        tool_turn_s=statistics.median(tool_times),
        model_s=model_s,
        tool_s=tool_s,
        rebuilds=h.context_cache.rebuilds,
        extensions=h.context_cache.extensions,
        round_trips_s=round_trips,
    )
    manager.close()
    return result


def _round_trips(url: str, repeats: int = 200, work_s: float = 0.001) -> tuple[float, float]:
    """Median ``SELECT 1`` round trips on a connection of its own: back to back, then each after ``work_s``
    of busy work here (a PostgreSQL append meets the second kind: on a virtual machine a processor that went
    idle takes a while to wake)."""
    import psycopg

    def timed(gap: float) -> float:
        times = []
        for _ in range(repeats):
            if gap:
                until = time.perf_counter() + gap
                while time.perf_counter() < until:
                    pass
            started = time.perf_counter()
            conn.execute("SELECT 1").fetchall()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        timed(0.0)  # warm up: the plan, the connection's buffers
        return timed(0.0), timed(work_s)


def measure(
    entries: int, *, prompts: int, turns: int, data_dir: Path, work: Path, url: str | None = None
) -> HarnessResult:
    """Copy a generated session of ``entries`` entries (into the store at ``url`` when given, else as a
    file) and time prompts on it."""
    session = ensure_session(entries, 1, variant="pi", data_dir=data_dir)
    copy = work / session.path.name
    shutil.copyfile(session.path, copy)
    try:
        return anyio.run(_measure, copy, prompts, turns, url)
    finally:
        copy.unlink(missing_ok=True)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _size(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def render(results: Sequence[HarnessResult]) -> str:
    """The table: one column per size, then the targets and verdicts."""
    small, large = results[0], results[-1]
    ratio = large.overhead_s / small.overhead_s if small.overhead_s else float("inf")
    rows = [
        ("context messages at the leaf", [f"{r.context_messages:,}" for r in results], "", ""),
        ("first prompt (builds the cache)", [_ms(r.cold_prompt_s) for r in results], "", ""),
        ("text turn, wall", [_ms(r.text_turn_s) for r in results], "", ""),
        ("  harness overhead per text turn", [_ms(r.text_overhead_s) for r in results], "", ""),
        ("tool turn, wall", [_ms(r.tool_turn_s) for r in results], "", ""),
        ("  instant model per request", [_ms(r.model_s) for r in results], "", ""),
        ("  no-op tool per call", [_ms(r.tool_s) for r in results], "", ""),
        (
            "  harness overhead per turn",
            [_ms(r.overhead_s) for r in results],
            f"≤ {TARGET_MS:g} ms @{_size(large.entries)}",
            "PASS" if large.overhead_s * 1e3 <= TARGET_MS else "FAIL",
        ),
        (
            "  overhead ratio, largest ÷ smallest",
            [""] * (len(results) - 1) + [f"{ratio:.2f}×"],
            f"≤ {TARGET_RATIO:g}×",
            "PASS" if ratio <= TARGET_RATIO else "FAIL",
        ),
        ("context rebuilds / extensions", [f"{r.rebuilds} / {r.extensions}" for r in results], "", ""),
    ]
    if all(r.round_trips_s is not None for r in results):
        trips = [r.round_trips_s for r in results if r.round_trips_s is not None]
        rows += [
            ("server round trip (SELECT 1), back to back", [_ms(t[0]) for t in trips], "", ""),
            ("  the same after 1 ms of work here", [_ms(t[1]) for t in trips], "", ""),
        ]
    head = ["measurement", *(f"{_size(r.entries)} entries" for r in results), "target", "result"]
    body = [[label, *cells, target, verdict] for label, cells, target, verdict in rows]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines = []
    for row in [head, *body]:
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(widths[i]) for i, c in enumerate(row[1:-2], 1)),
            row[-2].ljust(widths[-2]),
            row[-1],
        ]
        lines.append("  ".join(cells).rstrip())
    rule = "-" * max(len(line) for line in lines)
    verdicts = [row[-1] for row in body if row[-1]]
    return "\n".join(
        [rule, lines[0], rule, *lines[1:], rule, f"targets: {verdicts.count('PASS')} of {len(verdicts)} pass"]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (see ``--help``)."""
    parser = argparse.ArgumentParser(
        description="Per-turn overhead of the agent harness at 1k and 100k entries."
    )
    parser.add_argument("--sizes", help="comma-separated entry counts (default 1000,100000)")
    parser.add_argument("--prompts", type=int, default=30, help="prompts per kind and size (default 30)")
    parser.add_argument("--turns", type=int, default=5, help="requests per tool prompt (default 5)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 500 and 2,000 entries, 5 prompts")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where generated sessions are cached")
    parser.add_argument(
        "--stores",
        default=",".join(STORES),
        help=f"comma-separated back ends, of {', '.join(STORES)} (default all)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    stores = [name.strip().lower() for name in args.stores.split(",") if name.strip()]
    if not stores or set(stores) - set(STORES):
        parser.error(f"--stores takes some of {', '.join(STORES)}, not {args.stores!r}")
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else [500, 2_000]
        if args.quick
        else list(DEFAULT_SIZES)
    )
    prompts = 5 if args.quick else args.prompts
    args.data_dir.mkdir(parents=True, exist_ok=True)
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    by_store: dict[str, list[HarnessResult]] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        for store in stores:
            urls: list[str | None] = [None] * len(sizes)
            if store == "sqlite":
                urls = [f"sqlite:///{work}/harness-{n}.db?synchronous={SQLITE_SYNC}" for n in sizes]
            elif store == "postgres":
                try:
                    server, _ = stack.enter_context(postgres_server())
                    urls = [
                        stack.enter_context(database(server, f"sessiontree_harness_{os.getpid()}_{n}"))
                        for n in sizes
                    ]
                except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                    skipped[store] = str(exc).splitlines()[0]
                    continue
                urls = [f"{u}{'&' if '?' in u else '?'}synchronous_commit={PG_COMMIT}" for u in urls if u]
            _log(f"{STORES[store]}: {', '.join(_size(n) for n in sizes)} entries")
            by_store[store] = [
                measure(n, prompts=prompts, turns=args.turns, data_dir=args.data_dir, work=work, url=url)
                for n, url in zip(sizes, urls, strict=True)
            ]
    if args.json:
        print(
            json.dumps(
                {
                    "stores": {
                        STORES[k]: [{**asdict(r), "overhead_s": r.overhead_s} for r in v]
                        for k, v in by_store.items()
                    },
                    "skipped": {STORES[k]: v for k, v in skipped.items()},
                },
                indent=1,
            )
        )
    else:
        for store, results in by_store.items():
            print(f"{STORES[store]}:")
            print(render(results))
        for store, why in skipped.items():
            print(f"{STORES[store]}: not measured: {why}")
    return 0


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
