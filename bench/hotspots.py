"""Profile one benchmarked operation and print where the time goes.

``.venv/bin/python bench/hotspots.py open --entries 100000`` (operations: open, context, tree, appends,
prepare). With pyinstrument installed (``pip install pyinstrument``, not a project dependency) it samples the
call stack, which keeps the shares honest for code that makes many small calls; otherwise, or with
``--cprofile``, it uses cProfile. Uses the cached sessions of ``bench/run.py``; appends go to a temporary copy.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import DATA_DIR, ensure_session, realistic_messages
from sessiontree import SessionManager
from sessiontree.compaction import DEFAULT_COMPACTION_SETTINGS, prepare_compaction

OPERATIONS = ("open", "context", "tree", "appends", "prepare")


def _operation(
    name: str, path: Path, appends: int, work: Path
) -> tuple[Callable[[], object], Callable[[], None]]:
    """The callable to profile (everything it needs is prepared outside it) and a clean-up."""
    if name == "open":
        return lambda: SessionManager.open(path, read_only=True), lambda: None
    if name == "appends":
        copy = work / path.name
        shutil.copyfile(path, copy)
        writer = SessionManager.open(copy, durability="flush")
        messages = realistic_messages(appends)

        def run() -> None:
            for message in messages:
                writer.append_message(message)

        return run, writer.close
    manager = SessionManager.open(path, read_only=True)
    if name == "context":
        return manager.build_session_context, manager.close
    if name == "tree":
        manager.build_session_context()  # as in the benchmark: the tree is asked for after the context
        return manager.get_tree, manager.close
    if name == "prepare":
        return lambda: prepare_compaction(manager.get_path_view(), DEFAULT_COMPACTION_SETTINGS), manager.close
    raise ValueError(name)


def _sampler() -> Any:
    """A pyinstrument profiler sampling every 0.5 ms, or None when pyinstrument is not installed."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        return None
    return Profiler(interval=0.0005)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (see ``--help``)."""
    parser = argparse.ArgumentParser(description="Profile one benchmarked operation.")
    parser.add_argument("operation", choices=OPERATIONS)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--appends", type=int, default=10_000)
    parser.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    parser.add_argument("--sort", default="tottime", help="pstats sort key (default tottime)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--save", type=Path, help="also save the raw cProfile data here")
    parser.add_argument("--cprofile", action="store_true", help="use cProfile even when pyinstrument exists")
    args = parser.parse_args(argv)

    session = ensure_session(args.entries, args.seed, data_dir=args.data_dir)
    with tempfile.TemporaryDirectory(dir=args.data_dir) as work:
        run, cleanup = _operation(args.operation, session.path, args.appends, Path(work))
        gc.collect()
        start = time.perf_counter()
        run()
        plain = time.perf_counter() - start
        if args.operation == "appends":  # a second batch: profile the steady state, not the first write
            run, cleanup2 = run, cleanup
        else:
            cleanup()
            run, cleanup2 = _operation(args.operation, session.path, args.appends, Path(work))
        gc.collect()
        sampler = None if args.cprofile else _sampler()
        if sampler is not None:
            sampler.start()
            run()
            sampler.stop()
        else:
            profiler = cProfile.Profile()
            profiler.enable()
            run()
            profiler.disable()
        cleanup2()
    print(f"{args.operation} on {session.entries:,} entries: {plain * 1e3:.1f} ms without the profiler")
    if sampler is not None:
        print(sampler.output_text(unicode=True, color=False, show_all=False))
        return 0
    stats = pstats.Stats(profiler)
    if args.save is not None:
        stats.dump_stats(str(args.save))
    stats.sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
