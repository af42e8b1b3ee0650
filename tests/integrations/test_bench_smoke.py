"""Smoke test of the adapter benchmark: ``bench/integrations.py --quick`` runs and gives one row per back end
(no timing is asserted: targets live in benchmarks, never in tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_quick_run_gives_a_row_per_back_end() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "integrations.py"), "--quick", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == [
        "TreeSession (JSONL)",
        "TreeSession (SQLite)",
        "SQLiteSession",
        "AdvancedSQLiteSession",
    ]
    assert all(r["items"] == 400 and r["get_items_s"] > 0 and r["add_items_s"] > 0 for r in rows)
    table = subprocess.run(
        [sys.executable, str(REPO / "bench" / "integrations.py"), "--quick"],
        capture_output=True, text=True, check=True, cwd=REPO,
    ).stdout  # fmt: skip
    assert "turn ÷ SQLiteSession" in table
