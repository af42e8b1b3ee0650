"""sessiontree against pi 1.6.0's own SessionManager: open + context build on the same files, side by side.

``.venv/bin/python -m bench.pi_compare`` (or ``python bench/pi_compare.py``) generates (or reuses, from
``bench/.data``) sessions of 10k, 100k and 300k entries with ``bench/generate.py``, builds pi's bundle with
``tools/pi_js/build.sh`` when needed, and for each size runs, in alternating fresh processes (the order
swaps every round), ``--repeats`` times each:

* sessiontree: ``bench/pi_compare_probe.py FILE``: import sessiontree, ``SessionManager.open(read_only=True)``,
  ``build_session_context()``;
* pi 1.6.0: ``node session-bench.mjs FILE 1``: ``SessionManager.open(FILE)``, ``buildSessionContext()``;
* the floor, in this process: read the file and split it on ``\\n`` (Python).

Every figure is a median, and every process is timed whole too (wall and CPU, from its start to its exit).
The interpreters alone (``python -c pass``, ``python -c "import sessiontree"``, ``node -e 0``) are timed the
same way. pi's column is left out, with the reason, when node or npm is missing or the build fails.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import DATA_DIR, ensure_session
from bench.pi_js import PI_VERSION, PiJs, prepare
from bench.run import _package_version, _revision, _seconds, _size_label

__all__ = ["Baselines", "SizeResult", "baseline_round", "main", "measure_size", "render_table"]

DEFAULT_SIZES = (10_000, 100_000, 300_000)
PROBE = Path(__file__).resolve().parent / "pi_compare_probe.py"
PROCESS_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Run:
    """One finished process: its JSON output (if any), wall time from spawn to exit, and CPU time."""

    output: dict[str, Any]
    wall_s: float
    cpu_s: float


def run_process(argv: Sequence[str], env: dict[str, str] | None = None, *, parse: bool = True) -> Run:
    """Run ``argv`` to its end; its wall time and its CPU time (user + system, from ``wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        timer = threading.Timer(PROCESS_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {proc.returncode}:\n{stderr.strip()}")
    output = json.loads(stdout) if parse else {}
    return Run(output=output, wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class SizeResult:
    """One generated session, measured by both sides (lists hold one item per fresh process)."""

    entries: int
    file_bytes: int
    main_path: int
    sessiontree: list[Run] = field(default_factory=list)
    pi: list[Run] = field(default_factory=list)
    floor_s: list[float] = field(default_factory=list)
    others: dict[str, list[Run]] = field(default_factory=dict)
    """More sessiontree sides, by label (``--cold``, ``--baseline``)."""

    def runs(self, side: str) -> list[Run]:
        if side == "sessiontree":
            return self.sessiontree
        if side == "pi":
            return self.pi
        return self.others.setdefault(side, [])

    def st(self, key: str, side: str = "sessiontree") -> float:
        """The median of one of the probe's figures (seconds)."""
        return _median([r.output[key] for r in self.runs(side)])

    def pi_phase(self, key: str) -> float:
        """The median of one of pi's phases (seconds); NaN when pi was not measured."""
        return _median([r.output["medians"][key] for r in self.pi])

    def pi_startup(self) -> float:
        """The median time from node's start to the first line of pi's benchmark (node + loading pi)."""
        return _median([r.output["startup_s"] for r in self.pi])

    def process(self, side: str, cpu: bool = False) -> float:
        return _median([r.cpu_s if cpu else r.wall_s for r in self.runs(side)])

    def messages(self, side: str) -> str:
        counts = sorted({int(r.output["messages"]) for r in self.runs(side)})
        return "/".join(f"{c:,}" for c in counts) if counts else "-"

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "file_bytes": self.file_bytes,
            "main_path": self.main_path,
            "floor_s": self.floor_s,
            "sessiontree": [
                {**r.output, "process_s": r.wall_s, "process_cpu_s": r.cpu_s} for r in self.sessiontree
            ],
            "pi": [{**r.output, "process_s": r.wall_s, "process_cpu_s": r.cpu_s} for r in self.pi],
            "others": {
                side: [{**r.output, "process_s": r.wall_s, "process_cpu_s": r.cpu_s} for r in runs]
                for side, runs in self.others.items()
            },
        }


@dataclass(frozen=True)
class Side:
    """One more way of running sessiontree's probe: a label for its rows, its environment."""

    label: str
    env: dict[str, str]


@dataclass
class Baselines:
    """The interpreters alone, and with sessiontree imported: one fresh process of each per round."""

    python_bare: list[Run] = field(default_factory=list)
    python_import: list[Run] = field(default_factory=list)
    node_bare: list[Run] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            name: [{"wall_s": r.wall_s, "cpu_s": r.cpu_s} for r in runs]
            for name, runs in (
                ("python_bare", self.python_bare),
                ("python_import", self.python_import),
                ("node_bare", self.node_bare),
            )
        }


def _pi_env(agent_dir: Path) -> dict[str, str]:
    # pi's config reads its agent directory lazily; an empty one keeps the user's ~/.pi out of the picture
    return {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir)}


def floor(path: Path) -> float:
    """Read the whole file and split it on ``\\n``: the least any reader of the format does."""
    gc.collect()
    start = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    elapsed = time.perf_counter() - start
    del lines, data
    return elapsed


def baseline_round(base: Baselines, pi: PiJs | None) -> None:
    """One sample of each interpreter alone (and of ``import sessiontree``), added to ``base``."""
    base.python_bare.append(run_process([sys.executable, "-c", "pass"], parse=False))
    base.python_import.append(run_process([sys.executable, "-c", "import sessiontree"], parse=False))
    if pi is not None:
        base.node_bare.append(run_process([pi.node, "-e", "0"], parse=False))


def measure_size(
    path: Path,
    entries: int,
    main_path: int,
    *,
    repeats: int,
    pi: PiJs | None,
    agent_dir: Path,
    base: Baselines,
    st_env: dict[str, str] | None = None,
    others: Sequence[Side] = (),
) -> SizeResult:
    """Alternating fresh processes, ``repeats`` per side; the side that goes first moves every round.

    Each round also takes one floor sample (in this process) and one start-up sample of each interpreter
    into ``base``, so that those are spread over the same stretch of time as the rest. One unmeasured
    sessiontree process goes first, so that its index cache (in ``st_env``'s cache directory) holds the
    file: the measured processes re-open it, as resuming a session does.
    """
    result = SizeResult(entries=entries, file_bytes=path.stat().st_size, main_path=main_path)
    with open(path, "rb") as f:  # into the page cache: every process below reads from memory
        while f.read(1 << 24):
            pass
    st_argv = [sys.executable, str(PROBE), str(path)]
    pi_argv = [pi.node, str(pi.session_bench), str(path), "1"] if pi is not None else None
    run_process(st_argv, st_env)
    sides = ["sessiontree", *(["pi"] if pi_argv is not None else []), *(o.label for o in others)]
    env_of = {o.label: o.env for o in others}
    for run in range(repeats):
        result.floor_s.append(floor(path))
        shift = run % len(sides)
        for side in sides[shift:] + sides[:shift]:
            if side == "sessiontree":
                result.sessiontree.append(run_process(st_argv, st_env))
            elif side == "pi":
                assert pi_argv is not None
                result.pi.append(run_process(pi_argv, _pi_env(agent_dir)))
            else:
                result.runs(side).append(run_process(st_argv, env_of[side]))
        baseline_round(base, pi)
    return result


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if a == a and b == b and b > 0 else "-"


def _rows(results: Sequence[SizeResult], with_pi: bool) -> list[tuple[str, list[str]]]:
    def cells(fn: Callable[[SizeResult], str]) -> list[str]:
        return [fn(r) for r in results]

    rows: list[tuple[str, list[str]]] = [
        ("file size", cells(lambda r: f"{r.file_bytes / 1e6:.1f} MB")),
        ("entries on the leaf path", cells(lambda r: f"{r.main_path:,}")),
        ("context messages: sessiontree", cells(lambda r: r.messages("sessiontree"))),
        ("floor: read bytes + split lines (Python)", cells(lambda r: _seconds(_median(r.floor_s)))),
        ("sessiontree: open (read-only)", cells(lambda r: _seconds(r.st("open_s")))),
        ("sessiontree: build context", cells(lambda r: _seconds(r.st("context_s")))),
        ("sessiontree: open + context", cells(lambda r: _seconds(r.st("open_context_s")))),
        (
            "  sessiontree ÷ floor, open + context",
            cells(lambda r: _ratio(r.st("open_context_s"), _median(r.floor_s))),
        ),
    ]
    if with_pi:
        rows += [
            (f"context messages: pi {PI_VERSION}", cells(lambda r: r.messages("pi"))),
            (f"pi {PI_VERSION}: SessionManager.open", cells(lambda r: _seconds(r.pi_phase("open_s")))),
            (f"pi {PI_VERSION}: buildSessionContext", cells(lambda r: _seconds(r.pi_phase("context_s")))),
            (f"pi {PI_VERSION}: open + context", cells(lambda r: _seconds(r.pi_phase("open_context_s")))),
            (
                "  pi ÷ floor, open + context",
                cells(lambda r: _ratio(r.pi_phase("open_context_s"), _median(r.floor_s))),
            ),
            (
                "pi ÷ sessiontree, open + context",
                cells(lambda r: _ratio(r.pi_phase("open_context_s"), r.st("open_context_s"))),
            ),
            (
                "  same in CPU time",
                cells(lambda r: _ratio(r.pi_phase("open_context_cpu_s"), r.st("open_context_cpu_s"))),
            ),
            (
                "pi ÷ sessiontree, context alone",
                cells(lambda r: _ratio(r.pi_phase("context_s"), r.st("context_s"))),
            ),
        ]
    rows += [
        ("whole process: sessiontree (python)", cells(lambda r: _seconds(r.process("sessiontree")))),
        ("  CPU time", cells(lambda r: _seconds(r.process("sessiontree", cpu=True)))),
    ]
    if with_pi:
        rows += [
            (f"whole process: pi {PI_VERSION} (node)", cells(lambda r: _seconds(r.process("pi")))),
            ("  CPU time", cells(lambda r: _seconds(r.process("pi", cpu=True)))),
            ("  node start + loading pi (in-process)", cells(lambda r: _seconds(r.pi_startup()))),
            (
                "whole process, pi ÷ sessiontree",
                cells(lambda r: _ratio(r.process("pi"), r.process("sessiontree"))),
            ),
            (
                "  same in CPU time",
                cells(lambda r: _ratio(r.process("pi", cpu=True), r.process("sessiontree", cpu=True))),
            ),
        ]
    for side in sorted({label for r in results for label in r.others}):
        rows += _other_rows(results, side, with_pi)
    rows.append(
        (
            "CPU ÷ wall, sessiontree processes",
            cells(lambda r: f"{r.process('sessiontree', cpu=True) / r.process('sessiontree'):.0%}"),
        )
    )
    return rows


def _other_rows(results: Sequence[SizeResult], side: str, with_pi: bool) -> list[tuple[str, list[str]]]:
    """The rows of one more sessiontree side: its times, and the ratios to the floor, pi and the default."""

    def cells(fn: Callable[[SizeResult], str]) -> list[str]:
        return [fn(r) for r in results]

    rows: list[tuple[str, list[str]]] = [
        (f"{side}: context messages", cells(lambda r: r.messages(side))),
        (f"{side}: open (read-only)", cells(lambda r: _seconds(r.st("open_s", side)))),
        (f"{side}: build context", cells(lambda r: _seconds(r.st("context_s", side)))),
        (f"{side}: open + context", cells(lambda r: _seconds(r.st("open_context_s", side)))),
        (
            f"  {side} ÷ floor, open + context",
            cells(lambda r: _ratio(r.st("open_context_s", side), _median(r.floor_s))),
        ),
        (
            f"  {side} ÷ sessiontree, open + context",
            cells(lambda r: _ratio(r.st("open_context_s", side), r.st("open_context_s"))),
        ),
        (
            "    same in CPU time",
            cells(lambda r: _ratio(r.st("open_context_cpu_s", side), r.st("open_context_cpu_s"))),
        ),
    ]
    if with_pi:
        rows += [
            (
                f"pi ÷ {side}, open + context",
                cells(lambda r: _ratio(r.pi_phase("open_context_s"), r.st("open_context_s", side))),
            ),
            (
                "  same in CPU time",
                cells(lambda r: _ratio(r.pi_phase("open_context_cpu_s"), r.st("open_context_cpu_s", side))),
            ),
            (
                f"pi ÷ {side}, context alone",
                cells(lambda r: _ratio(r.pi_phase("context_s"), r.st("context_s", side))),
            ),
        ]
    rows += [
        (f"whole process: {side}", cells(lambda r: _seconds(r.process(side)))),
        ("  CPU time", cells(lambda r: _seconds(r.process(side, cpu=True)))),
    ]
    if with_pi:
        rows.append(
            (
                f"whole process, pi ÷ {side}",
                cells(lambda r: _ratio(r.process("pi"), r.process(side))),
            )
        )
    return rows


def _baseline_rows(
    base: Baselines, results: Sequence[SizeResult], with_pi: bool
) -> list[tuple[str, str, str]]:
    def wall(runs: list[Run]) -> float:
        return _median([r.wall_s for r in runs])

    def cpu(runs: list[Run]) -> float:
        return _median([r.cpu_s for r in runs])

    bare, imp = base.python_bare, base.python_import
    rows = [
        ("python -c pass", _seconds(wall(bare)), _seconds(cpu(bare))),
        ('python -c "import sessiontree"', _seconds(wall(imp)), _seconds(cpu(imp))),
        (
            "  import sessiontree (the difference)",
            _seconds(wall(imp) - wall(bare)),
            _seconds(cpu(imp) - cpu(bare)),
        ),
    ]
    in_process = _median([r.output["import_s"] for res in results for r in res.sessiontree])
    rows.append(("  the same, timed in the probes", _seconds(in_process), ""))
    if with_pi:
        rows.append(("node -e 0", _seconds(wall(base.node_bare)), _seconds(cpu(base.node_bare))))
    return rows


def _table(head: list[str], body: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def line(row: list[str]) -> str:
        return "  ".join(
            [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]
        )

    rule = "-" * len(line(head))
    return [rule, line(head), rule, *(line(r) for r in body), rule]


def render_table(results: Sequence[SizeResult], base: Baselines, header: str, skipped: str | None) -> str:
    """The comparison table (one column per size), then the interpreters' start-up."""
    with_pi = skipped is None
    head = ["measurement", *(f"{_size_label(r.entries)} entries" for r in results)]
    out = [
        *header.splitlines(),
        *_table(head, [[label, *values] for label, values in _rows(results, with_pi)]),
    ]
    out += _table(
        ["start-up (fresh processes, medians)", "wall", "CPU"],
        [list(r) for r in _baseline_rows(base, results, with_pi)],
    )
    for r in results:
        for side in r.others:
            if r.messages(side) != r.messages("sessiontree"):
                out.append(
                    f"WARNING: at {_size_label(r.entries)} entries {side}'s context has {r.messages(side)} messages, sessiontree's {r.messages('sessiontree')}"
                )
    mismatched = [r for r in results if with_pi and r.messages("pi") != r.messages("sessiontree")]
    for r in mismatched:
        out.append(
            f"WARNING: at {_size_label(r.entries)} entries pi's context has {r.messages('pi')} messages, sessiontree's {r.messages('sessiontree')}"
        )
    if skipped is not None:
        out.append(f"pi {PI_VERSION} not measured: {skipped}")
    return "\n".join(out)


def _header(repeats: int, pi: PiJs | None) -> str:
    revision = _revision()
    at = f" at {revision}" if revision else ""
    load = f", load average {os.getloadavg()[0]:.2f} at the end" if hasattr(os, "getloadavg") else ""
    node = f"node {pi.node_version}" if pi is not None else "node not used"
    return (
        f"sessiontree{at} vs pi {PI_VERSION}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n"
        f"{platform.python_implementation()} {platform.python_version()} (msgspec {_package_version('msgspec') or 'not installed'}), "
        f"{node}, {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs{load}\n"
        f"medians of {repeats} fresh processes per side, alternating; generated sessions, compactions as pi writes them\n"
        "sessiontree re-opens each file with its index cache (one unmeasured process first); 'no index cache' "
        "scans every file whole"
    )


def _compile_package() -> None:
    """Write sessiontree's bytecode first, as installing a wheel does (else each process compiles it)."""
    import compileall

    import sessiontree

    compileall.compile_dir(Path(sessiontree.__file__).parent, quiet=1)


@contextlib.contextmanager
def _checkout(revision: str) -> Iterator[Path]:
    """``revision`` of this repository in a temporary git worktree (removed afterwards)."""
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="sessiontree-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "--detach", "-q", str(tree), revision], check=True
        )
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="entry counts (default 10000,100000,300000)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="fresh processes per side and size (default 5)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where generated sessions are cached")
    parser.add_argument(
        "--pi-dir",
        type=Path,
        help="pi's bundle (default $SESSIONTREE_PI_JS_DIR or ~/.cache/sessiontree-pi-js)",
    )
    parser.add_argument("--no-build", action="store_true", help="use the bundle as it is; never run build.sh")
    parser.add_argument("--no-pi", action="store_true", help="measure sessiontree only")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="also measure sessiontree without its index cache (every file scanned whole)",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also measure sessiontree at this git revision (checked out in a temporary worktree; with "
        "--cold, also without its index cache there)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    parser.add_argument("--output", type=Path, help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes takes comma-separated entry counts, not {args.sizes!r}")
    if not sizes or min(sizes) < 1 or args.repeats < 1:
        parser.error("--sizes needs positive entry counts and --repeats a positive count")

    found = "--no-pi was given" if args.no_pi else prepare(args.pi_dir, build=not args.no_build)
    pi = found if isinstance(found, PiJs) else None
    skipped = found if isinstance(found, str) else None
    if skipped is not None:
        print(f"pi {PI_VERSION} not measured: {skipped}", file=sys.stderr, flush=True)
    _compile_package()
    results: list[SizeResult] = []
    base = Baselines()
    with contextlib.ExitStack() as stack:
        agent_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="pi-agent-dir-"))
        cache_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="sessiontree-cache-"))
        st_env = {**os.environ, "SESSIONTREE_CACHE_DIR": cache_dir}
        st_env.pop("SESSIONTREE_INDEX_CACHE", None)
        others: list[Side] = []
        if args.cold:
            others.append(Side("no index cache", {**st_env, "SESSIONTREE_INDEX_CACHE": "0"}))
        if args.baseline:
            src = stack.enter_context(_checkout(args.baseline)) / "src"
            import compileall

            compileall.compile_dir(src / "sessiontree", quiet=1)
            others.append(Side(f"at {args.baseline}", {**st_env, "PYTHONPATH": str(src)}))
            if args.cold:  # the same first open at both revisions
                others.append(
                    Side(
                        f"at {args.baseline}, no index cache",
                        {**st_env, "PYTHONPATH": str(src), "SESSIONTREE_INDEX_CACHE": "0"},
                    )
                )
        for size in sizes:
            print(
                f"{_size_label(size)} entries: generating or reusing the session…",
                file=sys.stderr,
                flush=True,
            )
            session = ensure_session(size, args.seed, data_dir=args.data_dir)
            print(
                f"{_size_label(size)} entries: measuring ({args.repeats} rounds)…",
                file=sys.stderr,
                flush=True,
            )
            results.append(
                measure_size(
                    session.path,
                    session.entries,
                    session.main_path_length,
                    repeats=args.repeats,
                    pi=pi,
                    agent_dir=Path(agent_dir),
                    base=base,
                    st_env=st_env,
                    others=others,
                )
            )
    header = _header(args.repeats, pi)
    data = {
        "header": header,
        "sizes": [r.to_dict() for r in results],
        "baselines": base.to_dict(),
        "pi_skipped": skipped,
    }
    if args.output is not None:
        args.output.write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(render_table(results, base, header, skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
