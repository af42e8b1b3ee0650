"""Helpers for the headless modes' tests: private directories for pi's agent dir and sessiontree's files,
``sessiontree run`` as a process, and ``sessiontree rpc`` as a process driven line by line."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.llm.fake_servers import FakeServer

_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "SESSIONTREE_MODEL",
    "SESSIONTREE_STORE",
)


def agent_env(root: Path) -> dict[str, str]:
    """The environment of one agent process: pi's agent dir, the caches, the settings file and HOME under
    ``root``, no provider keys."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env.update(
        {
            "HOME": str(home),
            "PI_CODING_AGENT_DIR": str(root / "pi"),
            "SESSIONTREE_CACHE_DIR": str(root / "cache"),
            "SESSIONTREE_SETTINGS": str(root / "settings.json"),
            "XDG_CONFIG_HOME": str(home / ".config"),
        }
    )
    return env


def server_args(server: FakeServer, model: str = "local/test-model") -> list[str]:
    """Point the agent at the loopback server (Chat Completions)."""
    return ["--base-url", f"{server.url}/v1", "--model", model]


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python -m sessiontree ARGS`` to the end (stdin: the text given, else nothing)."""
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        env=dict(env),
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line]


class RpcProcess:
    """``sessiontree rpc ARGS`` with its stdin and stdout as pipes; every stdout line is kept in order."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sessiontree", "rpc", *args],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, command: dict[str, Any]) -> None:
        self.send_raw(json.dumps(command).encode() + b"\n")

    def next_line(self, timeout: float = 30) -> dict[str, Any]:
        raw = self.lines.get(timeout=timeout)
        if raw is None:
            raise EOFError(f"rpc ended (stderr: {self.stderr_text()})")
        self.raw.append(raw)
        line = json.loads(raw)
        self.seen.append(line)
        return line

    def wait_for(self, match: Any, timeout: float = 30) -> dict[str, Any]:
        """The next line (in order) for which ``match(line)`` holds; the lines before it stay in ``seen``."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.next_line(max(0.1, deadline - time.monotonic()))
            if match(line):
                return line

    def request(self, command: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        """Send ``command`` with a fresh id and return its response."""
        self._next += 1
        command = {**command, "id": f"t{self._next}"}
        self.send(command)
        return self.wait_for(
            lambda line: line.get("type") == "response" and line.get("id") == command["id"], timeout
        )

    def ok(self, command: dict[str, Any], timeout: float = 30) -> Any:
        """``request``, asserting success; returns ``data``."""
        response = self.request(command, timeout)
        assert response["success"], response
        return response.get("data")

    def events_until(self, kind: str, timeout: float = 30) -> list[dict[str, Any]]:
        """Every line up to and including the next event of ``kind``."""
        start = len(self.seen)
        self.wait_for(lambda line: line.get("type") == kind, timeout)
        return self.seen[start:]

    def close(self, timeout: float = 30) -> int:
        """Close stdin (EOF) and wait for the exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stderr_text(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
