"""Leave the process at once when the chat is over. By then the session is closed (written, synced, its
lock or lease released) and the terminal restored; what is left is the interpreter tearing down every
object of the run, which takes seconds after a request (the SDKs' module graphs). So the standard streams
and the log handlers are flushed and the process ends with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn

__all__ = ["exit_now"]


def exit_now(code: int) -> NoReturn:
    """Flush what the process printed or logged, then end it with ``code`` without tearing down."""
    with contextlib.suppress(Exception):
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()
    os._exit(code)
