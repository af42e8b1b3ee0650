"""Crash test: a scripted multi-turn coding run (parallel tool calls, writes, an edit, a shell command) is
SIGKILLed at random points — at a random event, or after a random delay — with fsync at every save point.

Every file must re-open; its context must convert to a valid request for each wire format (tool calls
paired); nothing acknowledged at a save point may be missing; ``resume()`` must finish the run, and the final
context must equal an uninterrupted run's apart from the interruption notes. One fork-server process does
the work (``tests/agent/crash_server.py``). The default run kills 300 times; set
``SESSIONTREE_CRASH_KILLS`` for a longer one.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("SESSIONTREE_CRASH_KILLS", "300"))
SHM = Path("/dev/shm")
"""Where the sessions go when it exists: fsync is still called at every save point, but costs nothing there
(a SIGKILL loses no page cache either way, so what is tested is the same)."""


class Server:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.agent.crash_server"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(self, case: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(case) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the fork server died"
        return json.loads(line)  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def same_apart_from_notes(resumed: list[dict[str, Any]], reference: list[dict[str, Any]], notes: int) -> bool:
    if len(resumed) != len(reference):
        return False
    seen = 0
    for got, want in zip(resumed, reference, strict=True):
        if got["role"] == "toolResult" and got["isError"] and "was interrupted" in got["content"][0]["text"]:
            seen += 1
            if (got["toolCallId"], got["toolName"]) != (want["toolCallId"], want["toolName"]):
                return False
            continue
        if got != want:
            return False
    return seen == notes


def test_killed_runs_reopen_make_valid_requests_keep_what_was_acknowledged_and_resume(tmp_path: Path) -> None:
    if SHM.is_dir() and os.access(SHM, os.W_OK):
        tmp_path = Path(tempfile.mkdtemp(prefix="sessiontree-crash-", dir=SHM))
    rng = random.Random(8)
    server = Server()
    try:
        reference = server.run({"dir": str(tmp_path / "reference")})
        run_time = reference["run_seconds"]
        assert reference["problems"] == [] and reference["events"] and not reference["killed"]
        assert reference["notes"] == 0 and not reference["resumed"]
        events = reference["events"]
        kills = cases = notes = resumed = 0
        failures: list[str] = []
        while kills < KILLS and cases < 3 * KILLS:
            case: dict[str, Any] = {"dir": str(tmp_path / f"case{cases}")}
            if cases % 2 == 0:
                case["event"] = rng.randint(1, events)
            else:
                case["delay"] = rng.uniform(0, run_time)
            report = server.run(case)
            cases += 1
            if not report["killed"]:
                continue
            kills += 1
            notes += report["notes"]
            resumed += report["resumed"]
            if report["problems"]:
                failures.append(f"{case}: {report['problems']}")
            elif not same_apart_from_notes(report["messages"], reference["messages"], report["notes"]):
                failures.append(f"{case}: final context differs from the uninterrupted run")
    finally:
        server.close()
        if str(tmp_path).startswith(str(SHM)):
            shutil.rmtree(tmp_path, ignore_errors=True)
    print(f"\ncrash test: {kills} kills in {cases} cases, {resumed} resumed runs, {notes} interruption notes")
    assert not failures, "\n".join(failures[:10])
    assert kills >= KILLS
    assert resumed > kills // 2 and notes > 0
