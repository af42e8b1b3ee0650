"""Smoke test for the benchmark suite: the generator and the runner still work end to end.

Runs ``bench/run.py --quick`` on a ~2,000-entry session and checks the table's shape only; it asserts no
timings (those live in the benchmark's own PASS/FAIL column, never in the test suite).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sessiontree import SessionManager

REPO = Path(__file__).resolve().parent.parent

ROWS = (
    "file size",
    "entries on the leaf path",
    "branches / compactions",
    "floor: read bytes + split lines",
    "open (read-only)",
    "build context at the leaf",
    "context messages",
    "open + context",
    "open + context ÷ floor",
    "re-open (index cache)",
    "build context (context cache)",
    "re-open + context",
    "re-open + context ÷ floor",
    "get_tree",
    "appends, flush mode",
    "appends per second",
    "prepare_compaction at the leaf",
    "messages summarized / kept",
    "same, session never compacted",
    "messages summarized",
    "peak RSS, open + context (process)",
    "above the interpreter baseline",
    "above baseline ÷ file size",
    "whole process ÷ file size",
    "CPU time ÷ wall time while measuring",
)


def test_generator_writes_a_valid_branched_session(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO))
    try:
        from bench.generate import generate_session
    finally:
        sys.path.remove(str(REPO))
    path = tmp_path / "s.jsonl"
    info = generate_session(path, 2_000, seed=3)
    again = generate_session(tmp_path / "t.jsonl", 2_000, seed=3)
    assert path.read_bytes() == again.path.read_bytes()  # deterministic
    manager = SessionManager.open(path, read_only=True)
    assert len(manager.get_entries()) == info.entries == 2_000
    assert manager.problems == []
    assert len(manager.get_branch()) == info.main_path_length
    assert info.branches > 0
    assert manager.build_session_context().messages


def test_quick_run_prints_every_row(tmp_path: Path) -> None:
    out_json = tmp_path / "results.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "run.py"),
            "--quick",
            "--sizes",
            "2000",
            "--data-dir",
            str(tmp_path / "data"),
            "--output",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    table = done.stdout
    assert "2k entries" in table
    lines = table.splitlines()
    for row in ROWS:
        assert any(row in line for line in lines), f"missing row {row!r}:\n{table}"
    assert (
        sum(
            "not checked (stated for 100k)" in line or "not checked (stated for 300k)" in line
            for line in lines
        )
        == 6
    )
    main, _, cli = table.partition("\n\n")
    assert not any(line.rstrip().endswith(("PASS", "FAIL")) for line in main.splitlines())  # none is for 2k
    assert main.splitlines()[-1].startswith("targets: 0 of 0 checked pass")
    for row in (
        "sessiontree tree --active",
        "sessiontree tree (process CPU time)",
        "list, cold cache",
        "list, warm cache",
        "sessiontree --help (wall)",
        'python -c "import sessiontree"',
    ):
        assert row in cli, row
    document = json.loads(out_json.read_text("utf-8"))
    assert [r["entries"] for r in document["results"]] == [2_000]
    assert len(document["targets"]) == 6
