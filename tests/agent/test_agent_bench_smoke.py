"""Smoke test for ``bench/harness.py``: a quick run prints its rows and verdicts (no timing is asserted here;
the targets live in the benchmark's own PASS/FAIL column)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, data: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "harness.py"), "--quick", "--data-dir", str(data), *args],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quick_run_prints_the_table(tmp_path: Path) -> None:
    table = run(data=tmp_path)
    for row in ("context messages at the leaf", "first prompt (builds the cache)", "harness overhead per turn",
                "overhead ratio, largest ÷ smallest", "context rebuilds / extensions"):  # fmt: skip
        assert row in table
    assert "500 entries" in table and "2k entries" in table
    assert table.splitlines()[-1].startswith("targets: ")


def test_quick_run_as_json(tmp_path: Path) -> None:
    results = json.loads(run("--json", data=tmp_path))
    assert [r["entries"] for r in results] == [500, 2000]
    assert all(r["rebuilds"] == 1 and r["extensions"] > 0 for r in results)
