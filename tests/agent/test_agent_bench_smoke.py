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
    table = run("--stores", "jsonl,sqlite", data=tmp_path)  # PostgreSQL: a cluster to start, left out here
    for store in ("JSONL file:", "SQLite:"):
        part = table.split(store, 1)[1]
        for row in ("context messages at the leaf", "first prompt (builds the cache)", "harness overhead per turn",
                    "overhead ratio, largest ÷ smallest", "context rebuilds / extensions"):  # fmt: skip
            assert row in part
        assert "500 entries" in part and "2k entries" in part
    assert table.splitlines()[-1].startswith("targets: ")


def test_quick_run_as_json(tmp_path: Path) -> None:
    document = json.loads(run("--json", "--stores", "jsonl", data=tmp_path))
    assert document["skipped"] == {}
    results = document["stores"]["JSONL file"]
    assert [r["entries"] for r in results] == [500, 2000]
    assert all(r["rebuilds"] == 1 and r["extensions"] > 0 for r in results)


def test_an_unknown_store_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "harness.py"), "--quick", "--stores", "jsonl,mongo"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2 and "--stores" in done.stderr


def test_a_postgres_column_gets_the_servers_round_trips(postgres_url: str) -> None:
    """The floor a PostgreSQL turn stands on, measured on the run's server: back to back, and after work."""
    sys.path.insert(0, str(REPO))
    from bench import harness

    back_to_back, after_work = harness._round_trips(postgres_url, repeats=20, work_s=0.0005)
    assert 0 < back_to_back < 1 and 0 < after_work < 1
    base = dict(entries=1000, context_messages=9, cold_prompt_s=0.01, text_turn_s=0.002, tool_turn_s=0.002,
                model_s=0.0001, tool_s=0.0, rebuilds=1, extensions=3)  # fmt: skip
    with_trips = harness.render([harness.HarnessResult(**base, round_trips_s=(0.0001, 0.0003))])  # type: ignore[arg-type]
    assert "server round trip (SELECT 1), back to back" in with_trips and "0.300 ms" in with_trips
    assert "server round trip" not in harness.render([harness.HarnessResult(**base)])  # type: ignore[arg-type]
