"""The adapter benchmark: an Agents SDK turn (``get_items`` + ``add_items``) on a 10k-item session, for
TreeSession beside the SDK's own SQLiteSession and AdvancedSQLiteSession, in one run, printing a table.

``.venv/bin/python bench/integrations.py`` fills each back end with the same items (turns of a user
message, a tool call, its output and an answer, added one turn per call as the Runner adds them), then times
``--turns`` more turns on each: the whole history read, then the turn's items added. Every back end is a row
(``BACKENDS``: a name and a factory); the ratios are to SQLiteSession, measured in the same run. It writes
only in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import SQLiteSession
from agents.extensions.memory.advanced_sqlite_session import AdvancedSQLiteSession

from sessiontree import SessionManager
from sessiontree.integrations.openai_agents import TreeSession

__all__ = ["BACKENDS", "BackendResult", "main", "measure", "render_table", "turn_items"]

Factory = Callable[[Path], Any]

BACKENDS: dict[str, Factory] = {
    "TreeSession (JSONL)": lambda d: TreeSession(SessionManager.create(str(d), d / "sessions")),
    "TreeSession (SQLite)": lambda d: TreeSession.open(f"sqlite:///{d}/tree.db"),
    "SQLiteSession": lambda d: SQLiteSession("bench", d / "sqlite.db"),
    "AdvancedSQLiteSession": lambda d: AdvancedSQLiteSession(
        session_id="bench", db_path=d / "advanced.db", create_tables=True
    ),
}
"""The rows, in order; a new back end of TreeSession is one more entry."""

BASELINE = "SQLiteSession"
ITEMS_PER_TURN = 4


def turn_items(n: int) -> list[dict[str, Any]]:
    """One realistic turn: a question, a function call, its output, an answer (about 1 kB)."""
    call = f"call_{n}"
    return [
        {
            "role": "user",
            "content": f"Turn {n}: please look at src/module_{n % 50}.py and fix the failing test.",
        },
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": call,
            "name": "read_file",
            "arguments": json.dumps({"path": f"src/module_{n % 50}.py"}, separators=(",", ":")),
        },
        {"type": "function_call_output", "call_id": call, "output": "def f(x):\n    return x + 1\n" * 8},
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{n}",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": f"The test fails because f is off by one in module {n % 50}; " * 3,
                    "annotations": [],
                    "logprobs": [],
                }
            ],
        },
    ]


@dataclass
class BackendResult:
    name: str
    items: int
    fill_s: float
    get_items_s: float
    add_items_s: float

    @property
    def turn_s(self) -> float:
        return self.get_items_s + self.add_items_s


async def measure(name: str, factory: Factory, items: int, turns: int, directory: Path) -> BackendResult:
    """Fill a fresh session of ``factory`` with ``items`` items, then time ``turns`` turns (medians)."""
    session = factory(directory)
    start = time.perf_counter()
    for n in range(items // ITEMS_PER_TURN):
        await session.add_items(turn_items(n))
    fill = time.perf_counter() - start
    gets: list[float] = []
    adds: list[float] = []
    for n in range(turns):
        t0 = time.perf_counter()
        history = await session.get_items()
        t1 = time.perf_counter()
        await session.add_items(turn_items(items + n))
        t2 = time.perf_counter()
        assert len(history) == items + n * ITEMS_PER_TURN
        gets.append(t1 - t0)
        adds.append(t2 - t1)
    close = getattr(session, "close", None)
    if callable(close):
        result = close()
        if asyncio.iscoroutine(result):
            await result
    return BackendResult(name, items, fill, statistics.median(gets), statistics.median(adds))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def render_table(results: list[BackendResult]) -> str:
    base = next((r for r in results if r.name == BASELINE), results[0])
    header = ("back end", "fill", "get_items", "add_items", "turn", f"turn ÷ {BASELINE}")
    rows = [header] + [
        (
            r.name,
            _ms(r.fill_s),
            _ms(r.get_items_s),
            _ms(r.add_items_s),
            _ms(r.turn_s),
            f"{r.turn_s / base.turn_s:.2f}×",
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        f"{results[0].items:,} items; medians of the timed turns (get_items of the whole history + add_items)"
    ]
    for row in rows:
        lines.append(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="items in the session before timing")
    parser.add_argument("--turns", type=int, default=20, help="turns timed on each back end")
    parser.add_argument("--quick", action="store_true", help="smoke run: 400 items, 3 turns")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    items, turns = (400, 3) if args.quick else (args.items, args.turns)
    results: list[BackendResult] = []
    with tempfile.TemporaryDirectory(prefix="sessiontree-bench-") as tmp:
        for index, (name, factory) in enumerate(BACKENDS.items()):
            directory = Path(tmp) / str(index)
            directory.mkdir()
            results.append(asyncio.run(measure(name, factory, items, turns, directory)))
    if args.json:
        print(json.dumps([{**asdict(r), "turn_s": r.turn_s} for r in results], indent=2))
    else:
        print(render_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
