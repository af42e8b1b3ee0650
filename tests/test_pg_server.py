"""The PostgreSQL test server: the fixtures' server answers, databases are isolated, restarts, clean stops.

Exercises ``tests/pg_server.py`` the way the storage tests and CI use it (fixtures, the class, the script).
"""

from __future__ import annotations

import os
import shlex
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import psycopg
import pytest
from psycopg_pool import ConnectionPool

from tests import pg_server
from tests.conftest import require_postgres
from tests.pg_server import ExternalPostgres, PostgresServer, PostgresTarget, PostgresUnavailable

SCRIPT = Path(pg_server.__file__).resolve()


def bin_dir_or_skip() -> Path:
    """The local PostgreSQL binaries, for tests that run a private cluster (skip/fail as the fixtures do)."""
    try:
        return pg_server.find_bin_dir()
    except PostgresUnavailable as exc:
        require_postgres(str(exc))


def wait_until(condition: Callable[[], bool], seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def gone(pids: list[int]) -> Callable[[], bool]:
    def check() -> bool:
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    return False
            except psutil.NoSuchProcess:
                continue
        return True

    return check


def cluster_pids(postmaster: int) -> list[int]:
    return [postmaster, *(child.pid for child in psutil.Process(postmaster).children(recursive=True))]


def refuses(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return True
    return False


# -- the fixtures' server ---------------------------------------------------------------------------------


def test_fixture_server_runs_queries_and_pools(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)")
        conn.execute("INSERT INTO notes (body) VALUES (%s), (%s)", ["ünïcode", "plain"])
        conn.commit()
        assert conn.execute("SELECT current_setting('server_encoding')").fetchone() == ("UTF8",)
    with ConnectionPool(postgres_url, min_size=2, max_size=4, open=True) as pool, pool.connection() as conn:
        rows = conn.execute("SELECT body FROM notes ORDER BY id").fetchall()
    assert rows == [("ünïcode",), ("plain",)]


def test_two_databases_are_isolated(postgres_cluster: PostgresTarget) -> None:
    names = [f"sessiontree_isolation_{os.getpid()}_{n}" for n in (1, 2)]
    first, second = (postgres_cluster.create_database(name) for name in names)
    try:
        assert first != second
        with psycopg.connect(first) as conn:
            conn.execute("CREATE TABLE only_here (x int)")
            conn.execute("INSERT INTO only_here VALUES (1)")
        with psycopg.connect(second) as conn:
            assert conn.execute("SELECT to_regclass('only_here')").fetchone() == (None,)
            conn.execute("CREATE TABLE only_here (x int)")
            assert conn.execute("SELECT count(*) FROM only_here").fetchone() == (0,)
    finally:
        for name in names:
            postgres_cluster.drop_database(name)
    assert refuses(first) and refuses(second)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_restart_drops_connections_and_comes_back_on_the_same_url(
    postgres_server: PostgresTarget, postgres_url: str, mode: pg_server.Mode
) -> None:
    conn = psycopg.connect(postgres_url)
    conn.execute("CREATE TABLE acked (n int)")
    conn.execute("INSERT INTO acked VALUES (1), (2)")
    conn.commit()
    postgres_server.restart(mode)
    # The old connection is gone: the next statement fails, it does not hang or succeed.
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    conn.close()
    # ``immediate`` is a crash: what was committed before it survives recovery (fsync stays on).
    with psycopg.connect(postgres_url) as again:
        assert again.execute("SELECT count(*) FROM acked").fetchone() == (2,)


def test_down_refuses_connections_then_serves_again(
    postgres_server: PostgresTarget, postgres_url: str
) -> None:
    with postgres_server.down():
        assert refuses(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


# -- private clusters ----------------------------------------------------------------------------------


def test_private_cluster_settings_and_stop_leaves_nothing_behind() -> None:
    bin_dir_or_skip()
    with PostgresServer() as server:
        postmaster = server.postmaster_pid()
        assert postmaster is not None
        pids = cluster_pids(postmaster)
        assert len(pids) > 1, "the postmaster runs its background processes"
        watcher = server._watcher
        assert watcher is not None
        if os.geteuid() == 0:
            assert psutil.Process(postmaster).username() != "root"
        directory = server.socket_dir
        assert stat.S_ISSOCK((directory / f".s.PGSQL.{server.port}").stat().st_mode)
        for url in (server.url, server.socket_url):
            with psycopg.connect(url) as conn:
                settings = conn.execute(
                    "SELECT current_setting('fsync'), current_setting('max_connections')::int,"
                    " current_setting('listen_addresses'), current_user"
                ).fetchone()
            assert settings == ("on", 200, "127.0.0.1", "postgres")
    assert wait_until(gone([*pids, watcher.pid]))
    assert not directory.exists()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", server._port)) != 0
    server.stop()  # a second stop is harmless


def test_cluster_is_removed_when_its_owner_is_killed() -> None:
    bin_dir_or_skip()
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; sys.path.insert(0, sys.argv[1]);"
            "from tests.pg_server import PostgresServer; s = PostgresServer().start();"
            "print(s.postmaster_pid(), s.socket_dir, flush=True); time.sleep(120)",
            str(SCRIPT.parent.parent),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        pid_text, directory = owner.stdout.readline().split()
        pids = cluster_pids(int(pid_text))
    finally:
        owner.kill()
        owner.wait()
    assert wait_until(gone(pids)), "the watcher stops a cluster whose owner died"
    assert wait_until(lambda: not Path(directory).exists())


def test_script_starts_restarts_and_destroys_a_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir_or_skip()
    # A short path, as CI's `mktemp -d` gives (unix socket paths are limited).
    directory = Path(tempfile.mkdtemp(prefix="sessiontree-pg-test-"))
    try:
        started = subprocess.run(
            [sys.executable, str(SCRIPT), "start", str(directory)], capture_output=True, text=True, check=True
        )
        exports = dict(
            line.removeprefix("export ").split("=", 1) for line in started.stdout.splitlines() if line
        )
        env = {key: shlex.split(value)[0] for key, value in exports.items()}
        assert env[pg_server.DIR_ENV] == str(directory.resolve())
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        server = pg_server.from_environment()
        assert isinstance(server, ExternalPostgres) and server.can_restart
        assert server.accepts_connections()
        pids = cluster_pids(PostgresServer.attach(directory).postmaster_pid() or 0)
        server.restart()
        assert server.accepts_connections()
        with server.down():
            assert not server.accepts_connections()
        assert server.url == env[pg_server.URL_ENV] and server.accepts_connections()
        pids += cluster_pids(PostgresServer.attach(directory).postmaster_pid() or 0)
    finally:
        subprocess.run([sys.executable, str(SCRIPT), "destroy", str(directory)], check=True)
    assert wait_until(gone(pids))
    assert not directory.exists()


# -- finding binaries, the environment, skipping -------------------------------------------------------


def test_binaries_come_from_the_newest_distribution_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "postgresql"
    for version in ("9.6", "15", "16", "17-beta"):
        bin_dir = root / version / "bin"
        bin_dir.mkdir(parents=True)
        for name in pg_server.BINARIES if version != "17-beta" else ("initdb",):
            (bin_dir / name).write_text("#!/bin/sh\n")
            (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(pg_server, "DISTRIBUTION_ROOT", root)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert pg_server.find_bin_dir() == root / "16" / "bin"
    monkeypatch.setattr(pg_server, "DISTRIBUTION_ROOT", tmp_path / "none")
    with pytest.raises(PostgresUnavailable, match="initdb, pg_ctl and postgres"):
        pg_server.find_bin_dir()
    # `.ci/run` installs PostgreSQL when `which` fails.
    assert pg_server.main(["which"]) == 1
    assert "PostgreSQL binaries not found" in capsys.readouterr().err


def test_environment_server_urls_and_control(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pg_server.URL_ENV, raising=False)
    assert pg_server.from_environment() is None
    monkeypatch.setenv(pg_server.URL_ENV, "postgresql://me:pw@db.test:5433/main?sslmode=disable")
    monkeypatch.delenv(pg_server.CTL_ENV, raising=False)
    server = pg_server.from_environment()
    assert server is not None and not server.can_restart
    assert server.url_for("other db") == "postgresql://me:pw@db.test:5433/other%20db?sslmode=disable"
    with pytest.raises(PostgresUnavailable, match=pg_server.CTL_ENV):
        server.restart()
    monkeypatch.setenv(pg_server.URL_ENV, "host=db.test dbname=main")
    with pytest.raises(PostgresUnavailable, match="postgresql:// URL"):
        pg_server.from_environment()


@pytest.mark.parametrize("required", [False, True])
def test_missing_server_skips_or_fails_when_required(monkeypatch: pytest.MonkeyPatch, required: bool) -> None:
    if required:
        monkeypatch.setenv("SESSIONTREE_REQUIRE_POSTGRES", "1")
    else:
        monkeypatch.delenv("SESSIONTREE_REQUIRE_POSTGRES", raising=False)
    outcome = pytest.fail.Exception if required else pytest.skip.Exception
    with pytest.raises(outcome, match="no PostgreSQL server for the tests: initdb not found"):
        require_postgres("initdb not found")
