"""Drive ``sessiontree chat`` in a real terminal: a private tmux server per test (its own socket), keys
sent with ``send-keys``, the screen read with ``capture-pane``, polled until what a test waits for shows.

Skips when tmux is missing, fails instead when ``SESSIONTREE_REQUIRE_TMUX=1`` (CI).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sessiontree.format.pi_json import loads

if TYPE_CHECKING:
    from tests.llm.fake_servers import FakeServer

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
    """A tmux window (120×40 unless told) running one command; ``screen()`` is what it shows now."""

    def __init__(self, tmux: str, socket: str, name: str) -> None:
        self.tmux, self.socket, self.name = tmux, socket, name

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=10, check=False
        )
        return done.stdout

    def screen(self, *, styles: bool = False, rows: bool = False) -> str:
        """The visible lines (with ``styles``, tmux's SGR escapes for colours and attributes kept). Lines
        the terminal wrapped are joined, unless ``rows``: then each terminal row is a line, as it shows."""
        join = [] if rows else ["-J"]
        return self._run("capture-pane", "-p", *join, *(["-e"] if styles else []), "-t", self.name)

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

    def style_at(self, needle: str) -> set[str]:
        """The attributes (``bold``, ``dim``, ``italic``, ``underline``, ``fg``, ``bg``) in force where
        ``needle`` starts on the screen: tmux's SGR escapes followed from the top (it sends only changes)."""
        screen = self.screen(styles=True)
        plain: list[str] = []
        states: list[frozenset[str]] = []
        state: set[str] = set()
        i = 0
        while i < len(screen):
            found = _SGR.match(screen, i)
            if found is not None:
                _apply_sgr(state, found[1])
                i = found.end()
                continue
            plain.append(screen[i])
            states.append(frozenset(state))
            i += 1
        at = "".join(plain).find(needle)
        if at < 0:
            raise AssertionError(f"{needle!r} is not on the screen:\n{self.screen()}")
        return set(states[at])

    def command_pid(self) -> int:
        """The process the window runs (the chat), a child of the window's shell."""
        shell = int(self._run("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        return int(children[0]) if children else shell

    def wait_exit(self, code: int = 0, timeout: float = 20.0) -> str:
        """Until the chat has exited with ``code`` (the shell prints the mark after it)."""
        return self.wait_for(f"{EXIT_MARK} {code}", timeout)

    def prompt_line(self) -> str:
        """The input line's text (after ``› ``), as shown now."""
        lines = [line for line in self.screen().split("\n") if line.startswith("› ") or line == "›"]
        return lines[-1][2:] if lines else ""


_SGR = re.compile(r"\x1b\[([0-9;]*)m")
_ATTRS = {1: "bold", 2: "dim", 3: "italic", 4: "underline"}
_RESETS = {22: ("bold", "dim"), 23: ("italic",), 24: ("underline",), 39: ("fg",), 49: ("bg",)}


def _apply_sgr(state: set[str], params: str) -> None:
    codes = [int(c) for c in params.split(";") if c] or [0]
    i = 0
    while i < len(codes):
        code = codes[i]
        if code == 0:
            state.clear()
        elif code in _ATTRS:
            state.add(_ATTRS[code])
        elif code in _RESETS:
            state.difference_update(_RESETS[code])
        elif 30 <= code <= 37 or 90 <= code <= 97:
            state.add("fg")
        elif 40 <= code <= 47 or 100 <= code <= 107:
            state.add("bg")
        elif code in (38, 48):
            state.add("fg" if code == 38 else "bg")
            i += 2 if i + 1 < len(codes) and codes[i + 1] == 5 else 4
        i += 1


@contextmanager
def chat_terminal(
    args: list[str], env: Mapping[str, str], cwd: Path, *, size: tuple[int, int] = (120, 40)
) -> Iterator[Terminal]:
    """``python -m sessiontree chat ARGS`` in a fresh tmux server (``size`` columns × rows); the server is
    killed afterwards."""
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
            str(size[0]),
            "-y",
            str(size[1]),
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


# -- what the chat tests share: a chat on the loopback server, and reading what it wrote ------------------------
def start(
    server: FakeServer, root: Path, work: Path, *extra: str, size: tuple[int, int] = (120, 40)
) -> AbstractContextManager[Terminal]:
    """The chat on ``server`` (as ``local/test-model`` behind ``--base-url``) working in ``work``."""
    args = ["--base-url", f"{server.url}/v1", "--model", "local/test-model", "--cwd", str(work), *extra]
    return chat_terminal(args, chat_env(root), work, size=size)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, str, list[str]]:
    """A streamed tool call: its arguments in two pieces."""
    raw = json.dumps(arguments)
    return call_id, name, [raw[:5], raw[5:]]


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def lines(path: Path) -> list[dict[str, Any]]:
    """A session file's lines, parsed."""
    return [loads(line) for line in path.read_bytes().split(b"\n") if line]


def messages(entries: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["type"] == "message" and e["message"]["role"] == role]


def text(entry: dict[str, Any]) -> str:
    content = entry["message"]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def sent_messages(server: FakeServer, index: int) -> str:
    return json.dumps(server.requests[index].body["messages"])
