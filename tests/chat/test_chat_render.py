"""The chat transcript's lines for the harness's retry events (what a person sees while a provider is down)."""

from __future__ import annotations

import io

from rich.console import Console

from sessiontree.agent import events as ev
from sessiontree.cli.chat.render import Transcript


def transcript() -> tuple[Transcript, io.StringIO]:
    out = io.StringIO()
    return Transcript(Console(file=out, width=100, color_system=None)), out


def test_a_retry_says_how_long_it_waits_and_why_and_a_give_up_says_so() -> None:
    shown, out = transcript()
    shown.handle(ev.auto_retry_start(1, 3, 2000, "503 Service Unavailable"))
    assert "waiting to retry" in shown.activity
    shown.handle(ev.auto_retry_end(True, 1))
    shown.handle(ev.auto_retry_start(3, 3, 8000, "overloaded\x1b[2J"))
    shown.handle(ev.auto_retry_end(False, 3, "overloaded\x07"))
    text = out.getvalue()
    assert "Retrying in 2 s (attempt 1 of 3): 503 Service Unavailable" in text
    assert "Retrying in 8 s (attempt 3 of 3): overloaded\\x1b[2J" in text  # escapes shown, not obeyed
    assert "Gave up after 3 retries: overloaded\\x07" in text
    assert text.count("Gave up") == 1 and "\x1b" not in text and "\x07" not in text
