"""A time bound for tests whose failure mode is "never returns" (exponential walks, hangs on a FIFO).

``with deadline(5):`` raises ``TimeoutError`` in the main thread when the block runs longer; the bound is
generous, so it catches a blow-up or a hang, never ordinary slowness.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``TimeoutError`` if the block has not finished after ``seconds`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
