"""An unreachable PostgreSQL server is reported in one line, within the connect timeout (libpq's
``connect_timeout`` URL option, ``CONNECT_TIMEOUT_S`` by default), with no log lines of the pool on stderr:
a closed loopback port (refused at once) and a port that accepts connections but never answers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from sessiontree import open_repo
from sessiontree.errors import StorageError
from sessiontree.storage.sql.database import CONNECT_TIMEOUT_S

pytest.importorskip("psycopg")


@pytest.fixture
def closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()  # nothing listens there now
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connections the kernel accepts (the listen backlog) and that never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield int(server.getsockname()[1])
    finally:
        server.close()


def _list(url: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", "list", "--all", "--store", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.monotonic() - began


def test_a_closed_port_is_one_line_at_once(closed_port: int) -> None:
    url = f"postgresql://someone@127.0.0.1:{closed_port}/sessions"
    done, seconds = _list(url)
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {url}: cannot connect:") and "Connection refused" in line, line
    assert seconds < CONNECT_TIMEOUT_S + 3, seconds  # refused at once: no retries


def test_a_server_that_never_answers_is_one_line_after_the_connect_timeout(silent_port: int) -> None:
    url = f"postgresql://someone@127.0.0.1:{silent_port}/sessions?connect_timeout=2"
    done, seconds = _list(url)
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {url}: cannot connect:") and "no answer within 2 s" in line, line
    assert 2 <= seconds < 2 + 6, seconds


def test_the_default_connect_timeout_is_a_few_seconds(silent_port: int) -> None:
    began = time.monotonic()
    with pytest.raises(StorageError, match=f"no answer within {CONNECT_TIMEOUT_S} s") as caught:
        open_repo(f"postgresql://someone@127.0.0.1:{silent_port}/sessions").list()
    seconds = time.monotonic() - began
    assert "\n" not in str(caught.value)
    assert CONNECT_TIMEOUT_S - 0.5 <= seconds < CONNECT_TIMEOUT_S + 5, seconds
