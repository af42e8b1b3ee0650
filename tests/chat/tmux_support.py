"""Drive ``sessiontree chat`` in a real terminal: a private tmux server per test (its own socket), keys
sent with ``send-keys``, the screen read with ``capture-pane``, polled until what a test waits for shows.

Skips when tmux is missing, fails instead when ``SESSIONTREE_REQUIRE_TMUX=1`` (CI).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

REQUIRE_ENV = "SESSIONTREE_REQUIRE_TMUX"
EXIT_MARK = "CHAT-EXITED"
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SESSIONTREE_MODEL", "SESSIONTREE_STORE", "TMUX", "TMUX_PANE")


def require_tmux() -> str:
    """The tmux binary, or skip (fail under ``SESSIONTREE_REQUIRE_TMUX=1``)."""
    found = shutil.which("tmux")
    if found is None:
        reason = "tmux is not installed (apt-get install tmux); the chat's terminal tests need it"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class Terminal:
    """A 120×40 tmux window running one command; ``screen()`` is what it shows now."""

    def __init__(self, tmux: str, socket: str, name: str) -> None:
        self.tmux, self.socket, self.name = tmux, socket, name

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=10, check=False
        )
        return done.stdout

    def screen(self, *, styles: bool = False) -> str:
        """The visible lines (with ``styles``, tmux's SGR escapes for colours and attributes kept)."""
        return self._run("capture-pane", "-p", "-J", *(["-e"] if styles else []), "-t", self.name)

    def send(self, *keys: str) -> None:
        """tmux key names (``Enter``, ``C-c``, ``Up``, ``M-Enter``) or literal text."""
        self._run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        """Literal text (no key names), then nothing else."""
        self._run("send-keys", "-t", self.name, "-l", text)

    def wait_for(self, what: str | re.Pattern[str] | Callable[[str], bool], timeout: float = 20.0) -> str:
        """Poll the screen until ``what`` shows (a substring, a regex, or a predicate); returns the screen."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if callable(what) and not isinstance(what, re.Pattern):
                if what(screen):
                    return screen
            elif isinstance(what, re.Pattern):
                if what.search(screen):
                    return screen
            elif what in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what!r}; the screen shows:\n{screen}")

    def wait_ready(self, timeout: float = 20.0) -> str:
        """Until the input line is up: its footer (``… · ctx used/window``) is drawn under it. Keys typed
        before that reach a terminal not yet in raw mode, where Enter arrives as a line feed."""
        return self.wait_for(lambda s: " · ctx " in s, timeout)

    def wait_idle(self, timeout: float = 20.0) -> str:
        """Until no turn runs (no activity line above the prompt) and the footer is drawn again under the
        input line (between a turn's end and the next frame the screen can show neither)."""
        return self.wait_for(
            lambda s: " · ctx " in s and "working…" not in s and "running [" not in s, timeout
        )

    def prompt_line(self) -> str:
        """The input line's text (after ``› ``), as shown now."""
        lines = [line for line in self.screen().split("\n") if line.startswith("› ") or line == "›"]
        return lines[-1][2:] if lines else ""


@contextmanager
def chat_terminal(args: list[str], env: Mapping[str, str], cwd: Path) -> Iterator[Terminal]:
    """``python -m sessiontree chat ARGS`` in a fresh tmux server; the server is killed afterwards."""
    tmux = require_tmux()
    socket = f"sessiontree-test-{uuid.uuid4().hex[:12]}"
    name = "chat"
    clean = {k: v for k, v in os.environ.items() if k not in _KEYS}
    clean.update(env)
    clean.setdefault("TERM", "xterm-256color")
    command = " ".join(shlex.quote(p) for p in [sys.executable, "-m", "sessiontree", "chat", *args])
    script = f"cd {shlex.quote(str(cwd))} && {command}; echo {EXIT_MARK} $?; sleep 600"
    subprocess.run(
        [
            tmux,
            "-L",
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            name,
            script,
        ],
        env=clean,
        check=True,
        timeout=10,
    )
    terminal = Terminal(tmux, socket, name)
    try:
        yield terminal
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True, timeout=10, check=False)


def chat_env(root: Path) -> dict[str, str]:
    """Private directories for one chat: pi's agent dir, the listing cache, the settings file, HOME."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(root / "pi"),
        "SESSIONTREE_CACHE_DIR": str(root / "cache"),
        "SESSIONTREE_SETTINGS": str(root / "settings.json"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
