"""The benchmark: one command that measures sessiontree on generated sessions and prints a table.

``.venv/bin/python bench/run.py`` generates (or reuses, from ``bench/.data``) sessions of 10k, 100k and 300k
entries and, in one process run, measures for each: the floor (read the bytes and split lines), open,
context at the leaf, their ratio to the floor, ``get_tree``, appends in flush mode, ``prepare_compaction`` at
the leaf (also on a session that was never compacted, the worst case), and the peak RSS of open + context in
a fresh subprocess. Every time is the best of ``--repeat`` runs, and the ratios are taken side by side in the
same run, because machines are noisy. Targets are checked at the size the issue names (100k entries, 300k
for the open time). It writes only under its data directory and never touches real sessions.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import DATA_DIR, VARIANTS, GeneratedSession, ensure_session, realistic_messages
from sessiontree import SessionManager
from sessiontree.compaction import DEFAULT_COMPACTION_SETTINGS, prepare_compaction

__all__ = ["TARGETS", "SizeResult", "Target", "main", "measure_size", "render_table"]

DEFAULT_SIZES = (10_000, 100_000, 300_000)
INDEX_CACHE_ENV = "SESSIONTREE_INDEX_CACHE"
QUICK_SIZES = (2_000,)
RSS_PROBE = Path(__file__).resolve().parent / "rss_probe.py"


@dataclass
class SizeResult:
    """Everything measured on one generated session (seconds, bytes; best of the repeats)."""

    entries: int
    file_bytes: int
    main_path: int
    compactions: int
    branches: int
    floor_s: float = 0.0
    open_s: float = 0.0
    context_s: float = 0.0
    open_context_s: float = 0.0
    reopen_s: float = 0.0
    reopen_context_s: float = 0.0
    reopen_open_context_s: float = 0.0
    tree_s: float = 0.0
    tree_nodes: int = 0
    context_messages: int = 0
    appends: int = 0
    appends_s: float = 0.0
    prepare_s: float = 0.0
    prepare_summarized: int = 0
    prepare_kept: int = 0
    prepare_uncompacted_s: float = float("nan")
    prepare_uncompacted_summarized: int = 0
    rss_baseline: int = 0
    rss_peak: int = 0
    rss_method: str = ""
    cpu_share: float = float("nan")
    samples: dict[str, list[float]] = field(default_factory=dict)

    @property
    def ratio_to_floor(self) -> float:
        return self.open_context_s / self.floor_s if self.floor_s else float("nan")

    @property
    def reopen_ratio_to_floor(self) -> float:
        return self.reopen_open_context_s / self.floor_s if self.floor_s else float("nan")

    @property
    def appends_per_s(self) -> float:
        return self.appends / self.appends_s if self.appends_s else float("nan")

    @property
    def rss_delta(self) -> int:
        return self.rss_peak - self.rss_baseline

    def to_dict(self) -> dict[str, Any]:
        """The measurements plus the derived ratios, JSON-ready."""
        out = asdict(self)
        out.update(
            ratio_to_floor=self.ratio_to_floor,
            reopen_ratio_to_floor=self.reopen_ratio_to_floor,
            appends_per_s=self.appends_per_s,
            rss_delta=self.rss_delta,
            rss_delta_per_file_byte=self.rss_delta / self.file_bytes,
            rss_peak_per_file_byte=self.rss_peak / self.file_bytes,
        )
        return {k: None if isinstance(v, float) and v != v else v for k, v in out.items()}  # NaN is not JSON


@dataclass(frozen=True)
class Target:
    """One requirement from the issue, checked on one row of the table at one reference size."""

    row: str
    text: str
    at: int
    value: Callable[[SizeResult], float]
    ok: Callable[[float], bool]


TARGETS: tuple[Target, ...] = (
    Target("open", "< 1 s", 300_000, lambda r: r.open_s, lambda v: v < 1.0),
    Target("ratio", "≤ 4× floor", 100_000, lambda r: r.ratio_to_floor, lambda v: v <= 4.0),
    Target("reopen", "≤ 2× floor", 100_000, lambda r: r.reopen_ratio_to_floor, lambda v: v <= 2.0),
    Target("tree", "≤ 150 ms", 100_000, lambda r: r.tree_s, lambda v: v <= 0.150),
    Target("appends", "≥ 20,000/s", 100_000, lambda r: r.appends_per_s, lambda v: v >= 20_000),
    Target("rss", "≤ 2× file", 100_000, lambda r: r.rss_delta / r.file_bytes, lambda v: v <= 2.0),
)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _record(samples: dict[str, list[float]], key: str, value: float) -> None:
    samples.setdefault(key, []).append(value)


def _floor(path: Path) -> float:
    """Read the whole file and split it on ``\\n``: the least any reader of the format must do."""
    start = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    elapsed = time.perf_counter() - start
    del lines, data
    return elapsed


def measure_size(
    session: GeneratedSession,
    *,
    repeats: int,
    appends: int,
    work_dir: Path,
    uncompacted: GeneratedSession | None = None,
) -> SizeResult:
    """Measure one session file: floor, open, context, tree, prepare, appends, peak RSS.

    ``uncompacted`` (the same kind of session without any compaction) adds the worst case of
    ``prepare_compaction``, everything since the root summarized (measured once: it takes seconds).
    """
    path = session.path
    result = SizeResult(
        entries=session.entries,
        file_bytes=session.bytes,
        main_path=session.main_path_length,
        compactions=session.compactions,
        branches=session.branches,
    )
    samples = result.samples
    _floor(path)  # warm the page cache: every measurement below reads from memory
    _reopen(path)  # the index, body and context caches for the re-opens below
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for run in range(repeats):
        gc.collect()
        _record(samples, "floor", _floor(path))
        gc.collect()
        os.environ[INDEX_CACHE_ENV] = "0"  # a file never opened before: scanned whole
        try:
            t0 = time.perf_counter()
            manager = SessionManager.open(path, read_only=True)
            t1 = time.perf_counter()
            context = manager.build_session_context()
            t2 = time.perf_counter()
        finally:
            del os.environ[INDEX_CACHE_ENV]
        tree = manager.get_tree()
        t3 = time.perf_counter()
        _record(samples, "floor", _floor(path))  # twice per run: cheap, and steadies the ratio's denominator
        _record(samples, "open", t1 - t0)
        _record(samples, "context", t2 - t1)
        _record(samples, "open_context", t2 - t0)
        _record(samples, "tree", t3 - t2)
        result.context_messages = len(context.messages)
        result.tree_nodes = _count_nodes(tree)
        manager.close()
        del manager, context, tree
        gc.collect()
        opened, built = _reopen(path)
        _record(samples, "reopen", opened)
        _record(samples, "reopen_context", built)
        _record(samples, "reopen_open_context", opened + built)
        _prepare(result, "prepare", path)
        if uncompacted is not None and run == 0:  # seconds at 300k entries: once is enough for a worst case
            _prepare(result, "prepare_uncompacted", uncompacted.path)
    result.appends = appends
    _appends(result, path, appends, repeats, work_dir)
    # below 100%, other processes took the CPU from this one: the times above are inflated
    result.cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    _rss(result, path)
    result.floor_s = min(samples["floor"])
    result.open_s = min(samples["open"])
    result.context_s = min(samples["context"])
    result.open_context_s = min(samples["open_context"])
    result.reopen_s = min(samples["reopen"])
    result.reopen_context_s = min(samples["reopen_context"])
    result.reopen_open_context_s = min(samples["reopen_open_context"])
    result.tree_s = min(samples["tree"])
    result.prepare_s = min(samples["prepare"])
    if uncompacted is not None:
        result.prepare_uncompacted_s = min(samples["prepare_uncompacted"])
    result.appends_s = min(samples["appends"])
    return result


def _reopen(path: Path) -> tuple[float, float]:
    """Open + context of a file opened before (its index, body and context caches in the cache directory), then
    close: seconds to open, to build the context."""
    t0 = time.perf_counter()
    manager = SessionManager.open(path, read_only=True)
    t1 = time.perf_counter()
    manager.build_session_context()
    t2 = time.perf_counter()
    manager.close()
    return t1 - t0, t2 - t1


def _prepare(result: SizeResult, key: str, path: Path) -> None:
    """``prepare_compaction`` at the leaf, on a freshly opened manager (so it decodes what it reads)."""
    gc.collect()
    manager = SessionManager.open(path, read_only=True)
    start = time.perf_counter()
    prep = prepare_compaction(manager.get_path_view(), DEFAULT_COMPACTION_SETTINGS)
    _record(result.samples, key, time.perf_counter() - start)
    summarized = len(prep.messages_to_summarize) if prep is not None else 0
    if key == "prepare":
        result.prepare_summarized = summarized
        result.prepare_kept = len(prep.retained_tail) if prep is not None else 0
    else:
        result.prepare_uncompacted_summarized = summarized
    manager.close()
    del manager, prep
    gc.collect()


def _count_nodes(roots: Sequence[Any]) -> int:
    count = 0
    stack = list(roots)
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children)
    return count


def _appends(result: SizeResult, path: Path, appends: int, repeats: int, work_dir: Path) -> None:
    """``appends`` messages per repeat onto a copy of the file, opened writable with ``durability="flush"``."""
    messages = realistic_messages(appends)
    directory = Path(tempfile.mkdtemp(prefix="appends-", dir=work_dir))
    try:
        copy = directory / path.name
        shutil.copyfile(path, copy)
        manager = SessionManager.open(copy, durability="flush")
        try:
            for _ in range(repeats):
                gc.collect()
                append = manager.append_message
                start = time.perf_counter()
                for message in messages:
                    append(message)
                _record(result.samples, "appends", time.perf_counter() - start)
        finally:
            manager.close()
            del manager
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        gc.collect()


def _rss(result: SizeResult, path: Path) -> None:
    """Peak RSS of open + context, measured in a fresh interpreter."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run(
        [sys.executable, str(RSS_PROBE), str(path)], capture_output=True, text=True, check=True, env=env
    )
    probe = json.loads(done.stdout)
    result.rss_baseline = int(probe["baseline_rss"])
    result.rss_peak = int(probe["peak_rss"])
    result.rss_method = str(probe["peak_method"])


# -- the table -----------------------------------------------------------------------------------------
def _size_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


def _seconds(s: float) -> str:
    if s != s:
        return "-"
    if s < 0.001:
        return f"{s * 1e6:.0f} µs"
    if s < 0.1:
        return f"{s * 1e3:.3g} ms"
    if s < 1:
        return f"{s * 1e3:.0f} ms"
    return f"{s:.2f} s"


def _count(n: int, measured: float) -> str:
    return f"{n:,}" if measured == measured else "-"  # NaN: not measured


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _verdict(target: Target, results: Sequence[SizeResult]) -> tuple[str, SizeResult | None]:
    """PASS/FAIL at the size the target is stated for; ``not checked`` when this run did not measure it."""
    chosen = next((r for r in results if r.entries == target.at), None)
    if chosen is None:
        return f"not checked (stated for {_size_label(target.at)})", None
    return ("PASS" if target.ok(target.value(chosen)) else "FAIL"), chosen


def _rows(results: Sequence[SizeResult]) -> list[tuple[str, list[str], str | None]]:
    """(label, one cell per size, key of the target checked on this row or None)."""

    def cells(fmt: Callable[[SizeResult], str]) -> list[str]:
        return [fmt(r) for r in results]

    appends = results[0].appends if results else 0
    return [
        ("file size", cells(lambda r: _mb(r.file_bytes)), None),
        ("entries on the leaf path", cells(lambda r: f"{r.main_path:,}"), None),
        ("branches / compactions", cells(lambda r: f"{r.branches} / {r.compactions}"), None),
        ("floor: read bytes + split lines", cells(lambda r: _seconds(r.floor_s)), None),
        ("open (read-only)", cells(lambda r: _seconds(r.open_s)), "open"),
        ("build context at the leaf", cells(lambda r: _seconds(r.context_s)), None),
        ("  context messages", cells(lambda r: f"{r.context_messages:,}"), None),
        ("open + context", cells(lambda r: _seconds(r.open_context_s)), None),
        ("  open + context ÷ floor", cells(lambda r: f"{r.ratio_to_floor:.3f}×"), "ratio"),
        ("re-open (index cache)", cells(lambda r: _seconds(r.reopen_s)), None),
        ("  build context (context cache)", cells(lambda r: _seconds(r.reopen_context_s)), None),
        ("  re-open + context", cells(lambda r: _seconds(r.reopen_open_context_s)), None),
        ("  re-open + context ÷ floor", cells(lambda r: f"{r.reopen_ratio_to_floor:.3f}×"), "reopen"),
        ("get_tree", cells(lambda r: _seconds(r.tree_s)), "tree"),
        (f"{appends:,} appends, flush mode", cells(lambda r: _seconds(r.appends_s)), None),
        ("  appends per second", cells(lambda r: f"{r.appends_per_s:,.0f}/s"), "appends"),
        ("prepare_compaction at the leaf", cells(lambda r: _seconds(r.prepare_s)), None),
        (
            "  messages summarized / kept",
            cells(lambda r: f"{r.prepare_summarized:,} / {r.prepare_kept:,}"),
            None,
        ),
        ("  same, session never compacted (1 run)", cells(lambda r: _seconds(r.prepare_uncompacted_s)), None),
        (
            "    messages summarized",
            cells(lambda r: _count(r.prepare_uncompacted_summarized, r.prepare_uncompacted_s)),
            None,
        ),
        ("peak RSS, open + context (process)", cells(lambda r: _mb(r.rss_peak)), None),
        ("  above the interpreter baseline", cells(lambda r: _mb(r.rss_delta)), None),
        ("  above baseline ÷ file size", cells(lambda r: f"{r.rss_delta / r.file_bytes:.3f}×"), "rss"),
        ("  whole process ÷ file size", cells(lambda r: f"{r.rss_peak / r.file_bytes:.2f}×"), None),
        ("CPU time ÷ wall time while measuring", cells(lambda r: f"{r.cpu_share:.0%}"), None),
    ]


def render_table(results: Sequence[SizeResult], header: str) -> str:
    """A plain text table: one row per measurement, one column per size, then target and verdict."""
    targets = {t.row: t for t in TARGETS}
    head = ["measurement", *(f"{_size_label(r.entries)} entries" for r in results), "target", "result"]
    body: list[list[str]] = []
    for label, values, key in _rows(results):
        target = targets.get(key) if key else None
        if target is None:
            body.append([label, *values, "", ""])
        else:
            verdict, _ = _verdict(target, results)
            body.append([label, *values, f"{target.text} @{_size_label(target.at)}", verdict])
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def line(row: list[str]) -> str:
        parts = [row[0].ljust(widths[0])]
        parts += [cell.rjust(widths[i]) for i, cell in enumerate(row[1:-2], start=1)]
        parts += [row[-2].ljust(widths[-2]), row[-1].ljust(widths[-1])]
        return "  ".join(parts).rstrip()

    rule = "-" * len(line(head))
    out = [*header.splitlines(), rule, line(head), rule, *(line(r) for r in body), rule]
    verdicts = [_verdict(t, results)[0] for t in TARGETS]
    checked = [v for v in verdicts if not v.startswith("not checked")]
    passed = sum(v == "PASS" for v in checked)
    out.append(
        f"targets: {passed} of {len(checked)} checked pass ({len(verdicts) - len(checked)} not checked at these sizes)"
    )
    return "\n".join(out)


def _package_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _revision() -> str | None:
    """``git describe --always --dirty`` of the repository, when git is available."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def _environment(repeats: int, variant: str) -> dict[str, Any]:
    return {
        "revision": _revision(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "orjson": _package_version("orjson"),
        "msgspec": _package_version("msgspec"),
        "repeats": repeats,
        "variant": variant,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _header(env: dict[str, Any]) -> str:
    revision = f" at {env['revision']}" if env["revision"] else ""
    load = env["load_average"]
    busy = f", load average {load[0]:.2f} at the end" if load else ""
    libs = f"orjson {env['orjson']}, msgspec {env['msgspec'] or 'not installed'}"
    compactions = "with retainedTail" if env["variant"] == "rt" else "as pi writes them"
    return (
        f"sessiontree{revision} benchmark, {env['date']}\n"
        f"{env['implementation']} {env['python']}, {env['platform']}, {env['cpus']} CPUs{busy}; {libs}\n"
        f"best of {env['repeats']} runs; generated sessions, compactions {compactions}"
    )


def _generate_all(
    wanted: Sequence[tuple[int, str]], seed: int, data_dir: Path
) -> dict[tuple[int, str], GeneratedSession]:
    """Cached sessions for every (size, variant); missing ones are generated in two processes, largest first."""
    order = sorted(wanted, key=lambda w: -w[0])
    with ProcessPoolExecutor(max_workers=min(2, len(order))) as pool:
        futures = {w: pool.submit(ensure_session, w[0], seed, variant=w[1], data_dir=data_dir) for w in order}
        return {w: f.result() for w, f in futures.items()}


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (see ``--help``)."""
    parser = argparse.ArgumentParser(
        description="Benchmark sessiontree on generated pi sessions and print a table (targets from the issue)."
    )
    parser.add_argument("--sizes", help="comma-separated entry counts (default 10000,100000,300000)")
    parser.add_argument(
        "--repeat", type=int, help="runs per measurement, best kept (default 3; 1 with --quick)"
    )
    parser.add_argument("--appends", type=int, help="appends per run (default 10000; 1000 with --quick)")
    parser.add_argument("--quick", action="store_true", help="a small smoke run: 2,000 entries, one repeat")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    parser.add_argument(
        "--variant",
        choices=VARIANTS[:2],
        default="pi",
        help="pi: compactions as pi writes them (default); rt: compactions also store retainedTail",
    )
    parser.add_argument(
        "--no-uncompacted",
        action="store_true",
        help="skip the never-compacted sessions (the worst case of prepare_compaction)",
    )
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where generated files are cached")
    parser.add_argument(
        "--no-cli",
        action="store_true",
        help="skip the command line's rows (tree --active, tree on the example, list with a cold and warm cache)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    parser.add_argument("--output", type=Path, help="also write the JSON results to this file")
    args = parser.parse_args(argv)

    try:
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    except ValueError:
        parser.error("--sizes takes comma-separated integers")
    sizes = sizes or list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeats = args.repeat or (1 if args.quick else 3)
    appends = args.appends or (1_000 if args.quick else 10_000)
    if any(n < 1 for n in sizes) or repeats < 1 or appends < 1:
        parser.error("sizes, --repeat and --appends must be positive")

    data_dir: Path = args.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    # sessiontree's caches (the index, body and context caches of the re-open rows) of this run only
    cache_dir = tempfile.TemporaryDirectory(prefix="sessiontree-bench-cache-")
    os.environ["SESSIONTREE_CACHE_DIR"] = cache_dir.name
    os.environ.pop(INDEX_CACHE_ENV, None)
    _log(f"generating or reusing sessions of {', '.join(f'{n:,}' for n in sizes)} entries in {data_dir}")
    started = time.perf_counter()
    wanted = [(n, args.variant) for n in sizes]
    if not args.no_uncompacted:
        wanted += [(n, "nc") for n in sizes]
    sessions = _generate_all(wanted, args.seed, data_dir)
    _log(f"  ready in {time.perf_counter() - started:.1f} s")
    results: list[SizeResult] = []
    for n in sizes:
        session = sessions[(n, args.variant)]
        _log(f"measuring {session.entries:,} entries ({_mb(session.bytes)})")
        results.append(
            measure_size(
                session,
                repeats=repeats,
                appends=appends,
                work_dir=data_dir,
                uncompacted=sessions.get((n, "nc")),
            )
        )
    env = _environment(repeats, args.variant)
    document = {
        "environment": env,
        "seed": args.seed,
        "results": [r.to_dict() for r in results],
        "targets": [
            {
                "row": t.row,
                "target": t.text,
                "reference_entries": t.at,
                "checked_at_entries": chosen.entries if chosen is not None else None,
                "value": t.value(chosen) if chosen is not None else None,
                "verdict": verdict,
            }
            for t in TARGETS
            for verdict, chosen in [_verdict(t, results)]
        ],
    }
    cli_rows = []
    if not args.no_cli:
        from bench.cli import measure_cli

        _log("measuring the command line")
        cli_rows = measure_cli(data_dir, quick=args.quick, repeats=repeats)
        document["cli"] = [asdict(r) for r in cli_rows]
    if args.output is not None:
        args.output.write_text(json.dumps(document, indent=1) + "\n", "utf-8")
    if args.json:
        print(json.dumps(document, indent=1))
    else:
        print(render_table(results, _header(env)))
        if cli_rows:
            from bench.cli import render_cli_table

            print()
            print(render_cli_table(cli_rows))
    _log(f"done in {time.perf_counter() - started:.1f} s")
    cache_dir.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
