"""The command line's rows of the benchmark: ``tree --active`` on a large session, ``tree`` on the example,
and ``list`` over a thousand sessions with a cold and a warm listing cache, side by side in one run.

Every figure is a real ``python -m sessiontree`` process (stdout to /dev/null), so start-up and imports
count. Generated files go to the benchmark's data directory; the listing cache lives in a temporary
directory of its own, never the user's.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.generate import ensure_session

__all__ = ["CliResult", "measure_cli", "render_cli_table"]

EXAMPLE = Path(__file__).resolve().parent.parent / "src" / "sessiontree" / "data" / "coding-session.jsonl"
FULL = {"tree_entries": 100_000, "sessions": 1_000, "session_entries": 1_600, "bases": 10}
QUICK = {"tree_entries": 2_000, "sessions": 60, "session_entries": 300, "bases": 3}


@dataclass
class CliResult:
    """One row: what was measured, on what, the figure, and the target when one is stated for this size."""

    label: str
    subject: str
    value_s: float
    target: str = ""
    verdict: str = ""
    cpu_s: float | None = None


def _run(args: list[str], env: dict[str, str], *, module: bool = True) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+system) of one CLI process (``python ARGS`` when not ``module``);
    the machine's other load shows in the wall time only, so the table gives both."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    argv = [sys.executable, "-m", "sessiontree", *args] if module else [sys.executable, *args]
    with open(os.devnull, "wb") as sink:
        subprocess.run(argv, stdout=sink, stderr=sink, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _best(args: list[str], env: dict[str, str], repeats: int) -> tuple[float, float]:
    runs = [_run(args, env) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def _best_python(args: list[str], env: dict[str, str], repeats: int) -> tuple[float, float]:
    """Like ``_best`` for a plain ``python ARGS`` process."""
    runs = [_run(args, env, module=False) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def _session_farm(data_dir: Path, count: int, entries: int, bases: int) -> tuple[Path, int]:
    """``count`` session files (copies of ``bases`` generated sessions under fresh ids) and their total size."""
    farm = data_dir / f"list-{count}x{entries}"
    farm.mkdir(parents=True, exist_ok=True)
    files = sorted(farm.glob("*.jsonl"))
    if len(files) != count:
        for old in files:
            old.unlink()
        sources = [
            ensure_session(entries, seed, data_dir=data_dir).path.read_bytes() for seed in range(1, bases + 1)
        ]
        for n in range(count):
            blob = sources[n % bases]
            header, _, body = blob.partition(b"\n")
            sid = f"0199{n:04x}-0000-7000-8000-{n:012x}"
            header = header.replace(
                header[header.index(b'"id":"') + 6 : header.index(b'"', header.index(b'"id":"') + 6)],
                sid.encode(),
            )
            (farm / f"2025-07-08T06-00-00-000Z_{sid}.jsonl").write_bytes(header + b"\n" + body)
        files = sorted(farm.glob("*.jsonl"))
    return farm, sum(f.stat().st_size for f in files)


def _read_once(farm: Path) -> None:
    """Read every session file of ``farm`` once, so that the cold listing reads them from the page cache."""
    for path in farm.glob("*.jsonl"):
        with path.open("rb") as fh:
            while fh.read(1 << 20):
                pass


def _verdict(value: float, limit: float, stated: bool) -> str:
    if not stated:
        return "not checked (stated for the full run)"
    return "PASS" if value < limit else "FAIL"


def _compile_package() -> None:
    """Write the package's bytecode, as installing a wheel does: a checkout run with PYTHONDONTWRITEBYTECODE
    set would otherwise compile every module from source in every process (about 60 ms of each figure)."""
    import compileall

    import sessiontree

    compileall.compile_dir(Path(sessiontree.__file__).parent, quiet=1)


def measure_cli(data_dir: Path, *, quick: bool, repeats: int = 3) -> list[CliResult]:
    """The CLI rows (targets checked only at the sizes they are stated for: the full run)."""
    _compile_package()
    sizes = QUICK if quick else FULL
    stated = not quick
    env = {**os.environ, "COLUMNS": "120", "PI_CODING_AGENT_DIR": str(data_dir / "no-pi-dir")}
    results: list[CliResult] = []

    big = ensure_session(sizes["tree_entries"], 1, data_dir=data_dir)
    wall, cpu = _best(["tree", "--active", str(big.path)], env, repeats)
    label = f"{sizes['tree_entries'] // 1000}k entries"
    verdict = _verdict(wall, 1.0, stated)
    results.append(CliResult("sessiontree tree --active (wall)", label, wall, "< 1 s @100k", verdict, cpu))
    wall, cpu = _best(["tree", str(big.path)], env, 1)
    results.append(CliResult("sessiontree tree, whole tree (wall)", label, wall, cpu_s=cpu))

    _, cpu = _best(["tree", str(EXAMPLE)], env, repeats * 2)
    results.append(
        CliResult(
            "sessiontree tree (process CPU time)", "the example", cpu, "< 200 ms", _verdict(cpu, 0.2, True)
        )
    )
    bare, bare_cpu = _best_python(["-c", "pass"], env, repeats * 2)
    results.append(CliResult("python -c pass (wall)", "", bare, cpu_s=bare_cpu))
    imported, imported_cpu = _best_python(["-c", "import sessiontree"], env, repeats * 2)
    results.append(CliResult('python -c "import sessiontree" (wall)', "", imported, cpu_s=imported_cpu))
    results.append(
        CliResult(
            "  ÷ python -c pass",
            "",
            imported / bare if bare else float("nan"),
            "≤ 3×",
            "PASS" if imported <= 3 * bare else "FAIL",
        )
    )
    wall, cpu = _best(["--help"], env, repeats * 2)
    results.append(
        CliResult("sessiontree --help (wall)", "", wall, "≤ 200 ms", _verdict(wall, 0.2, True), cpu)
    )

    farm, total = _session_farm(data_dir, sizes["sessions"], sizes["session_entries"], sizes["bases"])
    subject = f"{sizes['sessions']:,} sessions, {total / 1e9:.2f} GB"
    with tempfile.TemporaryDirectory(prefix="sessiontree-bench-cache-") as cache:
        listing_env = {**env, "SESSIONTREE_CACHE_DIR": cache}
        _read_once(farm)  # from the page cache, as every other row (a machine may have evicted the files)
        cold, cold_cpu = _run(["list", "--session-dir", str(farm)], listing_env)
        warm, warm_cpu = _best(["list", "--session-dir", str(farm)], listing_env, repeats)
        json_warm, json_cpu = _best(["list", "--session-dir", str(farm), "--json"], listing_env, 1)
    stated_list = stated and total >= 1e9
    results.append(CliResult("sessiontree list, cold cache (wall)", subject, cold, cpu_s=cold_cpu))
    results.append(
        CliResult(
            "sessiontree list, warm cache (wall)",
            subject,
            warm,
            "≤ 200 ms @1,000 / 1 GB",
            _verdict(warm, 0.2, stated_list),
            warm_cpu,
        )
    )
    results.append(CliResult("  warm ÷ cold", subject, warm / cold if cold else float("nan")))
    results.append(CliResult("sessiontree list --json, warm (all texts)", subject, json_warm, cpu_s=json_cpu))
    return results


def render_cli_table(results: list[CliResult]) -> str:
    """A plain text table of the CLI rows."""

    def figure(r: CliResult) -> str:
        if r.label.strip().endswith(("÷ cold", "÷ python -c pass")):
            return f"{r.value_s:.3f}×"
        return f"{r.value_s * 1000:.0f} ms" if r.value_s < 1 else f"{r.value_s:.2f} s"

    def cpu(r: CliResult) -> str:
        if r.cpu_s is None:
            return ""
        return f"{r.cpu_s * 1000:.0f} ms" if r.cpu_s < 1 else f"{r.cpu_s:.2f} s"

    rows = [["command line", "on", "measured", "CPU", "target", "result"]]
    rows += [[r.label, r.subject, figure(r), cpu(r), r.target, r.verdict] for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = [
        "  ".join(
            [
                row[0].ljust(widths[0]),
                row[1].ljust(widths[1]),
                row[2].rjust(widths[2]),
                row[3].rjust(widths[3]),
                row[4].ljust(widths[4]),
                row[5],
            ]
        ).rstrip()
        for row in rows
    ]
    rule = "-" * max(len(line) for line in lines)
    return "\n".join([rule, lines[0], rule, *lines[1:], rule])
