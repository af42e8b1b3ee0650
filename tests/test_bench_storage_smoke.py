"""Smoke test for the storage benchmark: ``bench/storage.py --quick`` runs end to end on JSONL and SQLite and
prints every row; it checks what the run measured (the twin reads as much as the big session, no turn
failed, every session listed), never a timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ROWS = (
    "5k-entry session: import",
    "entries the context at the leaf reads",
    "open + context at the leaf",
    "÷ JSONL's open + context",
    "1k-entry twin: entries the context reads",
    "5k ÷ 1k",
    "durable (fsync; FULL; synchronous_commit on)",
    "relaxed (flush; NORMAL; off)",
    "2 writers on 2 sessions, turns per second",
    "Agents SDK SQLiteSession",
    "Agents SDK SQLAlchemySession",
    "failed turns",
    "10 sessions: list (first run)",
    'search "timeout"',
    "targets: not checked (stated for 100k entries and a 1k twin)",
)


def test_quick_storage_run(tmp_path: Path) -> None:
    out = tmp_path / "storage.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "storage.py"),
            *("--quick", "--no-postgres", "--writers", "2", "--sessions", "10"),
            *("--data-dir", str(tmp_path / "data"), "--output", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    for row in ROWS:
        assert row in done.stdout, f"missing row {row!r}:\n{done.stdout}"
    doc = json.loads(out.read_text("utf-8"))
    sqlite = doc["reads"]["stores"]["SQLite"]
    assert sqlite["read_big"] == sqlite["read_small"] >= doc["reads"]["segment"]  # the settings in force too
    assert (
        sqlite["messages_big"] == sqlite["messages_small"] == doc["reads"]["stores"]["JSONL"]["messages_big"]
    )
    assert set(doc["appends"]) == {"JSONL fsync", "JSONL flush", "SQLite FULL", "SQLite NORMAL"}
    assert set(doc["turns"]) == {
        "sessiontree JSONL",
        "sessiontree SQLite",
        "SQLiteSession SQLite",
        "SQLAlchemySession SQLite",
    }
    for name, run in doc["turns"].items():
        assert (run["turns"], run["errors"]) == (6, 0), (name, run["first_error"])
    for store in ("JSONL", "SQLite"):
        assert doc["listing"][store]["listed"] == 10
        assert doc["listing"][store]["hits timeout"] > 0
