"""How long the chat makes a person wait at the two moments issue 19 timed: the first reply of a process
(which waited for ``import openai`` unless the SDK was loaded while the person typed) and ``/quit`` after a
request (which waited for the interpreter's final garbage collection).

Drives ``python -m sessiontree chat`` in tmux against the loopback provider server of the tests, the same
way the chat's tests do; prints the median of ``--repeat`` runs. Needs tmux.

    .venv/bin/python bench/chat_latency.py [--repeat 3] [--typing 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.chat.tmux_support import EXIT_MARK, start
from tests.llm.fake_servers import chat_completions_sse, fake_server


def one_run(typing: float) -> tuple[float, float]:
    """(seconds from Enter to the first reply shown, seconds from /quit to the process's end)."""
    with tempfile.TemporaryDirectory(prefix="sessiontree-bench-chat-") as tmp:
        root = Path(tmp)
        work = root / "project"
        work.mkdir()
        with fake_server() as server:
            server.replies.append(chat_completions_sse(text=["The first reply."]))
            with start(server, root, work) as term:
                term.wait_ready(timeout=60)
                time.sleep(typing)  # a person typing the first line
                term.type("hello")
                began = time.monotonic()
                term.send("Enter")
                term.wait_for("The first reply.", timeout=60)
                first = time.monotonic() - began
                term.wait_idle(timeout=60)
                term.type("/quit")
                began = time.monotonic()
                term.send("Enter")
                term.wait_for(f"{EXIT_MARK} 0", timeout=60)
                return first, time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--typing", type=float, default=3.0, help="seconds between start-up and Enter")
    args = parser.parse_args()
    runs = [one_run(args.typing) for _ in range(args.repeat)]
    first = statistics.median(r[0] for r in runs)
    leave = statistics.median(r[1] for r in runs)
    print(f"{'first reply after Enter':32} {first:6.2f} s   (median of {args.repeat})")
    print(f"{'/quit after a request':32} {leave:6.2f} s   (median of {args.repeat})")


if __name__ == "__main__":
    main()
