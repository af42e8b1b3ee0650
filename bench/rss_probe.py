"""Peak memory of opening a session and building its context, measured in a fresh process.

Run by ``bench/run.py`` as ``python bench/rss_probe.py FILE``; prints one JSON object. It imports only
sessiontree (and psutil when present) so the baseline is the library's, and it never writes to FILE.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from sessiontree import SessionManager


def _current_rss() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:  # pragma: no cover - psutil comes with the dev extra
        return _status_kb("VmRSS") * 1024


def _status_kb(key: str) -> int:
    """A ``kB`` value from ``/proc/self/status`` (Linux), or 0."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak() -> bool:
    """Reset the kernel's high-water mark (Linux ``clear_refs`` 5) so the peak covers only what follows."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss(reset: bool) -> int:
    if reset:
        hwm = _status_kb("VmHWM")
        if hwm:
            return hwm * 1024
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


def probe(path: Path) -> dict[str, Any]:
    """Open ``path`` read-only, build the context at the leaf, and report the baseline and peak RSS."""
    gc.collect()
    reset = _reset_peak()
    baseline = _current_rss()
    start = time.perf_counter()
    manager = SessionManager.open(path, read_only=True)
    context = manager.build_session_context()
    elapsed = time.perf_counter() - start
    peak = _peak_rss(reset)
    after = _current_rss()
    result = {
        "file_bytes": path.stat().st_size,
        "baseline_rss": baseline,
        "peak_rss": max(peak, after),
        "after_rss": after,
        "peak_method": "VmHWM after clear_refs" if reset else "ru_maxrss",
        "messages": len(context.messages),
        "seconds": elapsed,
    }
    manager.close()
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: ``rss_probe.py FILE`` prints the measurement as JSON."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: rss_probe.py SESSION_FILE", file=sys.stderr)
        return 2
    print(json.dumps(probe(Path(args[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
