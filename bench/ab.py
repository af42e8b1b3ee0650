"""A/B timing of the open path against an earlier revision: did a change cost open + context more than noise?

``.venv/bin/python bench/ab.py --baseline HEAD~3 [--entries 100000] [--rounds 5]`` checks the baseline out
into a temporary git worktree and times, in fresh interpreters taking turns (A, B, A, B, ...), the floor
(read + split), ``SessionManager.open(read_only=True)``, ``build_session_context()`` and ``get_tree()`` on
the same generated session, each the best of several runs per interpreter; it prints both columns and the
ratio B/A, measured side by side in one run because the machine is noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import ensure_session

REPO = Path(__file__).resolve().parent.parent

_PROBE = r"""
import gc, json, sys, time
from sessiontree import SessionManager
path, repeat = sys.argv[1], int(sys.argv[2])
best = {"floor": 1e9, "open": 1e9, "context": 1e9, "open+context": 1e9, "get_tree": 1e9}
for _ in range(repeat):
    gc.collect()
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        f.read().split(b"\n")
    t1 = time.perf_counter()
    manager = SessionManager.open(path, read_only=True)
    t2 = time.perf_counter()
    manager.build_session_context()
    t3 = time.perf_counter()
    manager.get_tree()
    t4 = time.perf_counter()
    for key, value in (("floor", t1 - t0), ("open", t2 - t1), ("context", t3 - t2),
                       ("open+context", t3 - t1), ("get_tree", t4 - t3)):
        best[key] = min(best[key], value)
    manager.close()
    del manager
print(json.dumps(best))
"""


def _probe(src: Path, session: Path, repeat: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(session), str(repeat)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", required=True, help="a git revision to compare with (A)")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5, help="interpreters per side, taking turns")
    parser.add_argument("--repeat", type=int, default=3, help="runs per interpreter (best kept)")
    args = parser.parse_args(argv)
    session = ensure_session(args.entries).path
    with tempfile.TemporaryDirectory(prefix="sessiontree-ab-") as tmp:
        worktree = Path(tmp) / "baseline"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(worktree), args.baseline],
            check=True,
        )
        try:
            sides = {"A": worktree / "src", "B": REPO / "src"}
            best: dict[str, dict[str, float]] = {"A": {}, "B": {}}
            for _ in range(args.rounds):
                for side, src in sides.items():
                    for key, value in _probe(src, session, args.repeat).items():
                        best[side][key] = min(best[side].get(key, 1e9), value)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)], check=True
            )
    print(
        f"{args.entries:,} entries ({session.stat().st_size / 1e6:.1f} MB); A = {args.baseline}, B = working tree"
    )
    print(f"{'measurement':<16}{'A':>12}{'B':>12}{'B / A':>10}")
    for key in best["A"]:
        a, b = best["A"][key], best["B"][key]
        print(f"{key:<16}{a * 1000:>10.1f}ms{b * 1000:>10.1f}ms{b / a:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
