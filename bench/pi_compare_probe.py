"""sessiontree's side of ``bench/pi_compare.py``, run in a fresh interpreter for every sample.

``python bench/pi_compare_probe.py FILE`` imports sessiontree, opens FILE read-only, builds the context at the
leaf (what ``sessiontree`` does on resuming a session, as pi's ``SessionManager.open`` +
``buildSessionContext`` do) and prints one JSON object (seconds), nothing else: the caller times the whole
process, so it does the same work as pi's side. It never writes to FILE.
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import json  # noqa: E402 - the import time of sessiontree is measured from the line above
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from sessiontree import SessionManager  # noqa: E402

_IMPORT_S = time.perf_counter() - _T_START


def probe(path: Path) -> dict[str, float | int]:
    """Open + context in this process."""
    c0, t0 = time.process_time(), time.perf_counter()
    manager = SessionManager.open(path, read_only=True)
    t1 = time.perf_counter()
    context = manager.build_session_context()
    t2, c2 = time.perf_counter(), time.process_time()
    result: dict[str, float | int] = {
        "import_s": _IMPORT_S,
        "open_s": t1 - t0,
        "context_s": t2 - t1,
        "open_context_s": t2 - t0,
        "open_context_cpu_s": c2 - c0,
        "messages": len(context.messages),
    }
    manager.close()
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: pi_compare_probe.py SESSION_FILE", file=sys.stderr)
        return 2
    print(json.dumps(probe(Path(args[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
