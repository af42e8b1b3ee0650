"""Leaving the chat: ``exit_now`` flushes what was printed and logged, then ends the process without the
interpreter's teardown (no atexit handler runs, no final collection), with the exit code given."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import atexit, logging, sys
    from sessiontree.cli.chat.exiting import exit_now
    atexit.register(lambda: print("teardown ran", flush=True))
    handler = logging.StreamHandler(sys.stderr)
    logging.getLogger("t").addHandler(handler)
    logging.getLogger("t").warning("logged before the exit")
    sys.stdout.write("printed, still buffered")
    exit_now(3)
    """
)


def test_exit_now_flushes_and_skips_the_teardown() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == "printed, still buffered"  # flushed, and no atexit handler ran
    assert "logged before the exit" in done.stderr
