"""The agent harness benchmark: per-turn overhead of ``AgentHarness`` on generated sessions of 1k and 100k
entries with an instant scripted model, side by side in one run, with the issue's targets.

``.venv/bin/python bench/harness.py`` (``--quick`` for a small smoke run, ``--json`` for data). A turn is one
request plus its tool round; measured are whole prompts on a copy of each session (JSONL file, ``flush``
durability), after one warm-up prompt that builds the context cache. Subtracted from the wall time: the
scripted model's own streaming and the tool's execution, each measured separately in the same run, so the
rows show what the harness adds (snapshot, conversion, hooks, persistence, save points, compaction checks).
It writes only under a temporary directory and the benchmark data directory.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
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
from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, AgentTool, ScriptedModel, ToolResult, reply, tool_call
from sessiontree.llm import Context, complete, convert_to_llm

__all__ = ["HarnessResult", "main", "measure", "render"]

DEFAULT_SIZES = (1_000, 100_000)
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


async def _measure(path: Path, prompts: int, turns: int) -> HarnessResult:
    manager = SessionManager.open(path)
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
    )
    manager.close()
    return result


def measure(entries: int, *, prompts: int, turns: int, data_dir: Path, work: Path) -> HarnessResult:
    """Copy a generated session of ``entries`` entries and time prompts on it."""
    session = ensure_session(entries, 1, variant="pi", data_dir=data_dir)
    copy = work / session.path.name
    shutil.copyfile(session.path, copy)
    try:
        return anyio.run(_measure, copy, prompts, turns)
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
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else [500, 2_000]
        if args.quick
        else list(DEFAULT_SIZES)
    )
    prompts = 5 if args.quick else args.prompts
    args.data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        results = [
            measure(n, prompts=prompts, turns=args.turns, data_dir=args.data_dir, work=Path(tmp))
            for n in sizes
        ]
    if args.json:
        print(json.dumps([{**asdict(r), "overhead_s": r.overhead_s} for r in results], indent=1))
    else:
        print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
