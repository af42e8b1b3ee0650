"""Regenerate the example session (``src/sessiontree/data/coding-session.jsonl``, shipped in the package and
linked from ``examples/coding-session.jsonl``): a realistic, deterministic coding-agent session.

It has model and thinking changes, tool calls with results (one failing), an abandoned branch with a branch
summary, labels, a session name and a compaction, written through ``SessionManager`` with a fixed clock and
fixed ids so the file is byte-for-byte reproducible: ``python examples/make_example.py``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio

from sessiontree import SessionManager
from sessiontree.compaction.offline import OfflineSummarizer
from sessiontree.compaction.session_ops import compact_session
from sessiontree.compaction.settings import CompactionSettings

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent / "src" / "sessiontree" / "data" / "coding-session.jsonl"
START_MS = 1_764_410_400_000  # 2025-11-29T10:00:00.000Z
MODEL = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}


def _usage(inp: int, out: int) -> dict[str, Any]:
    cost_in, cost_out = inp * 3 / 1e6, out * 15 / 1e6
    return {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": inp + out,
        "cost": {
            "input": cost_in,
            "output": cost_out,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": cost_in + cost_out,
        },
    }


class Writer:
    def __init__(self, manager: SessionManager, clock: itertools.count[int]) -> None:
        self.m = manager
        self.clock = clock
        self.calls = itertools.count(1)

    def user(self, text: str) -> str:
        return self.m.append_message(
            {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": next(self.clock)}
        )

    def assistant(
        self,
        text: str | None,
        calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
        thinking: str | None = None,
        tokens: tuple[int, int] = (1200, 180),
    ) -> list[str]:
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        ids = []
        for name, args in calls:
            call_id = f"toolu_{next(self.calls):04d}"
            ids.append(call_id)
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
        self.m.append_message(
            {
                "role": "assistant",
                "content": content,
                **MODEL,
                "usage": _usage(*tokens),
                "stopReason": "toolUse" if calls else "stop",
                "timestamp": next(self.clock),
            }
        )
        return ids

    def result(self, call_id: str, name: str, text: str, is_error: bool = False) -> str:
        return self.m.append_message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": text}],
                "isError": is_error,
                "timestamp": next(self.clock),
            }
        )


PARSER_PY = '''def parse_duration(text: str) -> int:
    """Parse '1h30m' into seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    total, number = 0, ""
    for ch in text:
        if ch.isdigit():
            number += ch
        else:
            total += int(number) * units[ch]
    return total
'''

FAILING = """FAILED tests/test_parser.py::test_parse_duration_resets_number - AssertionError: assert 5430 == 5400
1 failed, 11 passed in 0.42s"""


def build(path: Path) -> None:
    clock = itertools.count(START_MS, 7_000)
    ids = (f"{n:08x}" for n in itertools.count(0x5E55_0001))
    manager = SessionManager.create(
        "/home/dev/durations",
        path.parent,
        clock=lambda: next(clock),
        id_factory=lambda existing: next(ids),
        session_id_factory=lambda: "019acd9e-5a40-7000-8000-00000000e7a1",
    )
    w = Writer(manager, itertools.count(START_MS + 500, 7_000))
    manager.append_model_change("anthropic", "claude-sonnet-4-5")
    manager.append_thinking_level_change("medium")
    start = w.user("The test test_parse_duration_resets_number fails. Please find out why and fix it.")
    manager.append_label_change(start, "task")
    (c1,) = w.assistant(
        "Let me run the tests first.",
        [("bash", {"command": "pytest -q tests/test_parser.py"})],
        thinking="Run the failing test to see the actual value.",
    )
    w.result(c1, "bash", FAILING, is_error=True)
    (c2,) = w.assistant(
        "The sum is 30 seconds too high. Reading the parser.", [("read", {"path": "src/durations/parser.py"})]
    )
    w.result(c2, "read", PARSER_PY)
    fork_point = w.assistant(
        "Found it: `number` is never reset after a unit, so '1h30m' adds 1 then 130. Two options: reset the "
        "accumulator, or rewrite the parser with a regular expression.",
        tokens=(1800, 90),
    )
    del fork_point
    decision = manager.get_leaf_id()
    assert decision is not None
    # The abandoned approach: a regex rewrite that broke other tests.
    w.user("Try the regex rewrite.")
    (c3,) = w.assistant(
        "Rewriting with re.findall.",
        [
            (
                "write",
                {
                    "path": "src/durations/parser.py",
                    "content": "import re\n\ndef parse_duration(text):\n    return sum(int(n) * {'h': 3600, 'm': 60, 's': 1}[u]"
                    " for n, u in re.findall(r'(\\d+)([hms])', text))\n",
                },
            )
        ],
    )
    w.result(c3, "write", "Wrote 2 lines to src/durations/parser.py")
    (c4,) = w.assistant(None, [("bash", {"command": "pytest -q"})])
    w.result(
        c4,
        "bash",
        "FAILED tests/test_parser.py::test_rejects_unknown_unit - DID NOT RAISE KeyError\n"
        "1 failed, 11 passed in 0.40s",
        is_error=True,
    )
    abandoned_leaf = w.assistant(
        "The regex silently skips unknown units, so test_rejects_unknown_unit fails."
    )
    del abandoned_leaf
    manager.branch_with_summary(
        decision,
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
        "## Goal\nRewrite parse_duration with a regular expression.\n\n## Progress\n- [x] Rewrote "
        "src/durations/parser.py with re.findall\n\n## Key Learnings\n- The regex version ignores unknown units;"
        " tests/test_parser.py::test_rejects_unknown_unit expects a KeyError.\n\n## Why Abandoned\nIt broke "
        "test_rejects_unknown_unit; resetting the accumulator is the smaller fix.\n\n<modified-files>\n"
        "src/durations/parser.py\n</modified-files>",
        {"readFiles": [], "modifiedFiles": ["src/durations/parser.py"]},
    )
    w.user("Go with resetting the accumulator, and keep unknown units an error.")
    (c5,) = w.assistant(
        "Resetting `number` after each unit.",
        [
            (
                "edit",
                {
                    "path": "src/durations/parser.py",
                    "oldText": "            total += int(number) * units[ch]\n",
                    "newText": '            total += int(number) * units[ch]\n            number = ""\n',
                },
            )
        ],
    )
    w.result(c5, "edit", "Edited src/durations/parser.py (1 line added)")
    (c6,) = w.assistant(None, [("bash", {"command": "pytest -q"})])
    fixed = w.result(c6, "bash", "12 passed in 0.39s")
    manager.append_label_change(fixed, "green")
    w.assistant("All 12 tests pass. The bug was the accumulator not being reset between units.")
    manager.append_session_info("Fix parse_duration accumulator")
    # Compact what came before (offline summarizer, small window so this short session has history to condense).
    anyio.run(
        lambda: compact_session(
            manager, OfflineSummarizer(), settings=CompactionSettings(keep_recent_tokens=150)
        )
    )
    w.user("Now add support for days ('2d4h').")
    (c7,) = w.assistant(
        "Adding 'd' to the unit table.",
        [
            (
                "edit",
                {
                    "path": "src/durations/parser.py",
                    "oldText": 'units = {"h": 3600,',
                    "newText": 'units = {"d": 86400, "h": 3600,',
                },
            )
        ],
        tokens=(2600, 120),
    )
    w.result(c7, "edit", "Edited src/durations/parser.py")
    (c8,) = w.assistant(
        "And a test.",
        [
            (
                "write",
                {
                    "path": "tests/test_days.py",
                    "content": "from durations.parser import parse_duration\n\ndef test_days():\n"
                    "    assert parse_duration('2d4h') == 187200\n",
                },
            )
        ],
    )
    w.result(c8, "write", "Wrote 4 lines to tests/test_days.py")
    (c9,) = w.assistant(None, [("bash", {"command": "pytest -q"})])
    w.result(c9, "bash", "13 passed in 0.41s")
    w.assistant("Days are supported and tested (13 tests pass).", tokens=(3100, 60))
    manager.close()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp) / "x.jsonl")
        (written,) = Path(tmp).glob("*.jsonl")
        TARGET.write_bytes(written.read_bytes())
    print(f"wrote {TARGET}")
