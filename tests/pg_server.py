"""A throwaway PostgreSQL cluster for the tests and CI: initdb in a temporary directory, served on 127.0.0.1.

Starts, restarts and removes one private cluster (or uses the server named by the environment); it must never
touch another cluster, listen beyond the loopback address, or need psycopg to start or stop a server.

Binaries: ``initdb``, ``pg_ctl`` and ``postgres`` from one directory, found on ``PATH`` (symlinks resolved), then
under ``/usr/lib/postgresql/*/bin``, newest version first. The cluster lives in a fresh directory (``data/``,
``postgres.log``, ``cluster.json`` and the unix socket), listens on a free loopback port and on that socket,
trusts local connections for the superuser ``postgres``, and keeps ``fsync=on`` (crash tests rely on
durability) with room for 200 connections.

PostgreSQL refuses to run as root. Started as root, the server runs ``initdb`` and ``pg_ctl`` as an
unprivileged user instead: the ``postgres`` user the distribution's package creates, else a dedicated system
user ``sessiontree-pg`` (created once with ``useradd --system`` when missing), else ``nobody``; the cluster
directory is chowned to that user and removed again on ``stop()``.

A server started in-process is also watched by a small child process: if the process that started it dies
without stopping it (SIGKILL, a crash), the watcher stops the cluster and removes its directory.

With ``SESSIONTREE_TEST_POSTGRES_URL`` set, ``from_environment()`` uses that server instead (nothing is started
or stopped); restarting it needs ``SESSIONTREE_TEST_POSTGRES_CTL``, a command to which ``start``, ``stop`` or
``restart`` (then ``-m MODE``) is appended, e.g. ``pg_ctlcluster 15 main`` or the ``ctl`` command below.

As a script (CI starts one cluster for the whole run this way)::

    python3 tests/pg_server.py which            # print the binaries' directory, or why there is none
    python3 tests/pg_server.py start DIR        # start a cluster in DIR, print `export ...` lines for the tests
    python3 tests/pg_server.py ctl DIR ACTION [-m MODE]   # start | stop | restart that cluster
    python3 tests/pg_server.py destroy DIR      # stop it (if running) and remove DIR
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

URL_ENV = "SESSIONTREE_TEST_POSTGRES_URL"
CTL_ENV = "SESSIONTREE_TEST_POSTGRES_CTL"
DIR_ENV = "SESSIONTREE_TEST_POSTGRES_DIR"
SUPERUSER = "postgres"
DEDICATED_USER = "sessiontree-pg"
BINARIES = ("initdb", "pg_ctl", "postgres")
DISTRIBUTION_ROOT = Path("/usr/lib/postgresql")
# Unix socket paths are limited to 108 bytes including the terminator (sun_path).
SOCKET_PATH_LIMIT = 107
TIMEOUT_S = 60

Mode = Literal["smart", "fast", "immediate"]

TEST_SETTINGS: dict[str, str] = {
    "max_connections": "200",
    "shared_buffers": "128MB",
    # Durability stays as in production: the crash and restart tests count acknowledged writes.
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "timezone": "'UTC'",
    "log_timezone": "'UTC'",
    "lc_messages": "'C'",
    "logging_collector": "off",
    "log_min_messages": "warning",
}


class PostgresUnavailable(RuntimeError):
    """No server can be had: the message says what is missing or what failed."""


def find_bin_dir() -> Path:
    """The directory holding initdb, pg_ctl and postgres: PATH first, then the distribution's, newest first."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
        candidates.append(Path(on_path).parent)
    if DISTRIBUTION_ROOT.is_dir():
        versions = [p for p in DISTRIBUTION_ROOT.iterdir() if (p / "bin").is_dir()]
        candidates.extend(p / "bin" for p in sorted(versions, key=_version_key, reverse=True))
    for directory in candidates:
        if all(os.access(directory / name, os.X_OK) for name in BINARIES):
            return directory
    raise PostgresUnavailable(
        "PostgreSQL binaries not found: no initdb, pg_ctl and postgres together on PATH or under "
        f"{DISTRIBUTION_ROOT}/*/bin (install PostgreSQL, e.g. `apt-get install postgresql`, "
        f"or point {URL_ENV} at a running server)"
    )


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.name)) or (-1,)


def unprivileged_user() -> pwd.struct_passwd | None:
    """The user the cluster runs as when we are root (None when we are not root)."""
    if os.geteuid() != 0:
        return None
    for name in (SUPERUSER, DEDICATED_USER):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    if os.access(useradd, os.X_OK):
        command = [useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent", DEDICATED_USER]
        subprocess.run([*command, "--shell", "/usr/sbin/nologin"], capture_output=True, check=False)
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(DEDICATED_USER)
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        raise PostgresUnavailable(
            f"running as root and no unprivileged user for PostgreSQL: no {SUPERUSER!r} or "
            f"{DEDICATED_USER!r} user, useradd failed, and there is no 'nobody'"
        ) from None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _replace_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(dbname, safe=""), parts.query, ""))


class PostgresTarget(abc.ABC):
    """What the tests use of any server: its URL, databases on it (needs psycopg), stopping and starting."""

    can_restart: bool

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """A ``postgresql://`` URL of the server's maintenance database."""

    def url_for(self, dbname: str) -> str:
        """The server's URL with ``dbname`` as the database."""
        return _replace_database(self.url, dbname)

    def create_database(self, name: str) -> str:
        """Create the empty database ``name`` and return its URL."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop the database ``name`` if it exists, ending the sessions still connected to it."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def accepts_connections(self) -> bool:
        """Whether a connection to ``url`` succeeds now."""
        import psycopg

        try:
            psycopg.connect(self.url, connect_timeout=5).close()
        except psycopg.OperationalError:
            return False
        return True

    @abc.abstractmethod
    def pause(self, mode: Mode = "fast") -> None:
        """Stop the server but keep its data and port, until ``resume()``."""

    @abc.abstractmethod
    def resume(self) -> None:
        """Start the server paused by ``pause()`` again."""

    def restart(self, mode: Mode = "fast") -> None:
        """Stop the server (``mode`` as pg_ctl's: ``fast`` ends connections, ``immediate`` is a crash) and start it."""
        self.pause(mode)
        self.resume()

    @abc.abstractmethod
    def ensure_running(self) -> None:
        """Bring the server back if a test left it paused."""

    @contextlib.contextmanager
    def down(self, mode: Mode = "fast") -> Iterator[None]:
        """The server is stopped inside the block and started again, on the same URL, after it."""
        self.pause(mode)
        try:
            yield
        finally:
            self.resume()


class PostgresServer(PostgresTarget):
    """A private cluster in ``directory`` (a fresh temporary one when None), removed again by ``stop()``."""

    can_restart = True

    def __init__(
        self,
        directory: Path | None = None,
        *,
        port: int | None = None,
        bin_dir: Path | None = None,
        settings: dict[str, str] | None = None,
        watch: bool = True,
    ) -> None:
        self.directory = directory
        self.port = port
        self.bin_dir = bin_dir
        self.settings = {**TEST_SETTINGS, **(settings or {})}
        self.user: pwd.struct_passwd | None = None
        self._watch = watch
        self._owns_directory = directory is None
        self._fixed_port = port is not None
        self._watcher: subprocess.Popen[bytes] | None = None

    # -- where things are ------------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        return self._dir / "data"

    @property
    def log_file(self) -> Path:
        return self._dir / "postgres.log"

    @property
    def socket_dir(self) -> Path:
        """The directory of the server's unix socket (``.s.PGSQL.<port>``)."""
        return self._dir

    @property
    def url(self) -> str:
        """A ``postgresql://`` URL of the ``postgres`` database over the loopback port."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self._port}/postgres"

    @property
    def socket_url(self) -> str:
        """A ``postgresql://`` URL of the ``postgres`` database over the unix socket."""
        return f"postgresql://{SUPERUSER}@/postgres?host={quote(str(self._dir), safe='')}&port={self._port}"

    @property
    def _dir(self) -> Path:
        if self.directory is None:
            raise PostgresUnavailable("the server has not been started")
        return self.directory

    @property
    def _port(self) -> int:
        if self.port is None:
            raise PostgresUnavailable("the server has not been started")
        return self.port

    # -- life cycle ------------------------------------------------------------------------------------

    def start(self) -> PostgresServer:
        """Create the cluster if needed and start it; a no-op when it runs already."""
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="sessiontree-pg-"))
            self._owns_directory = True
        if self._watch and self._watcher is None:
            self._watcher = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "watch", str(self._dir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            if not (self.data_dir / "PG_VERSION").is_file():
                self._init()
            if not self.is_running():
                self._launch(retry_ports=not self._fixed_port)
        except BaseException:
            # A failed or interrupted start (Ctrl-C during initdb) leaves nothing behind either.
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server and remove its files; safe to call twice, leaves no process behind."""
        if self.directory is not None and self.data_dir.is_dir():
            self._halt("fast")
            shutil.rmtree(self.data_dir, ignore_errors=True)
            for leftover in (self.log_file, self._dir / "cluster.json"):
                leftover.unlink(missing_ok=True)
        if self.directory is not None and self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        self._release_watcher()

    def pause(self, mode: Mode = "fast") -> None:
        self._halt(mode)

    def resume(self) -> None:
        if not self.is_running():
            self._launch(retry_ports=False)

    def ensure_running(self) -> None:
        if self.directory is not None and self.data_dir.is_dir():
            self.resume()

    def is_running(self) -> bool:
        """Whether the cluster's postmaster is alive."""
        pid = self.postmaster_pid()
        return pid is not None and _alive(pid)

    def postmaster_pid(self) -> int | None:
        """The postmaster's process id while it runs (from ``postmaster.pid``), else None."""
        try:
            first = (self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        except (OSError, PostgresUnavailable):
            return None
        return int(first) if first.strip().isdigit() else None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state for the script's `ctl` and the watcher ---------------------------------------------------

    def save_state(self) -> None:
        state = {
            "port": self.port,
            "bin_dir": str(self.bin_dir),
            "settings": self.settings,
            "owns_directory": self._owns_directory,
        }
        (self._dir / "cluster.json").write_text(json.dumps(state), encoding="utf-8")

    @classmethod
    def attach(cls, directory: Path) -> PostgresServer:
        """The cluster a ``start`` left in ``directory`` (not watched; ``stop()`` removes it)."""
        state = json.loads((directory / "cluster.json").read_text(encoding="utf-8"))
        server = cls(directory, port=state["port"], bin_dir=Path(state["bin_dir"]), watch=False)
        server.settings = state["settings"]
        server.user = unprivileged_user()
        server._owns_directory = bool(state["owns_directory"])
        return server

    # -- the work --------------------------------------------------------------------------------------

    def _init(self) -> None:
        if self.bin_dir is None:
            self.bin_dir = find_bin_dir()
        self.user = unprivileged_user()
        directory = self._dir
        if self.port is None:
            self.port = free_port()
        socket_path = directory / f".s.PGSQL.{self.port}"
        if len(str(socket_path)) > SOCKET_PATH_LIMIT:
            raise PostgresUnavailable(
                f"the cluster directory {directory} is too long for a unix socket path "
                f"({len(str(socket_path))} > {SOCKET_PATH_LIMIT} bytes); use a shorter TMPDIR"
            )
        if self.user is not None:
            os.chown(directory, self.user.pw_uid, self.user.pw_gid)
            directory.chmod(0o700)
        failure = ""
        # C.UTF-8 lets the server case-fold non-ASCII text (full-text search); plain C is the fallback.
        for locale in ("C.UTF-8", "C"):
            shutil.rmtree(self.data_dir, ignore_errors=True)
            options = ["-U", SUPERUSER, "--auth=trust", "--encoding=UTF8", f"--locale={locale}", "--no-sync"]
            result = self._run("initdb", ["-D", str(self.data_dir), *options])
            if result.returncode == 0:
                break
            failure = (result.stdout + result.stderr).strip()
        else:
            raise PostgresUnavailable(f"initdb failed in {self.data_dir}:\n{failure}")
        self._write_settings()
        self.save_state()

    def _write_settings(self) -> None:
        settings = {
            **self.settings,
            "listen_addresses": "'127.0.0.1'",
            "port": str(self._port),
            "unix_socket_directories": "'" + str(self._dir).replace("'", "''") + "'",
        }
        lines = "".join(f"{key} = {value}\n" for key, value in settings.items())
        # The last occurrence of a setting wins, so appending overrides initdb's defaults.
        with (self.data_dir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# test cluster settings\n" + lines)

    def _launch(self, *, retry_ports: bool) -> None:
        for attempt in range(3):
            result = self._run(
                "pg_ctl",
                ["-D", str(self.data_dir), "-l", str(self.log_file), "-w", "-t", str(TIMEOUT_S), "start"],
            )
            if result.returncode == 0 and self.is_running():
                return
            log = self._log_tail()
            if retry_ports and attempt < 2 and "already in use" in log:
                self.port = free_port()
                self._write_settings()
                self.save_state()
                continue
            raise PostgresUnavailable(
                f"pg_ctl start failed for {self.data_dir} on port {self.port}:\n"
                f"{(result.stdout + result.stderr).strip()}\n{log}"
            )

    def _halt(self, mode: Mode) -> None:
        pid = self.postmaster_pid()
        if pid is None or not _alive(pid):
            return
        self._run("pg_ctl", ["-D", str(self.data_dir), "-m", mode, "-w", "-t", str(TIMEOUT_S), "stop"])
        if _alive(pid):
            # pg_ctl gave up: end the postmaster and its backends (it leads their process group).
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)

    def _run(self, binary: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        assert self.bin_dir is not None
        env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
        options: dict[str, Any] = {}
        if self.user is not None:
            options = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.run(
            [str(self.bin_dir / binary), *args],
            cwd=self._dir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S * 2,
            check=False,
            **options,
        )

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _release_watcher(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is None:
            return
        assert watcher.stdin is not None
        with contextlib.suppress(OSError):
            watcher.stdin.write(b"q")
            watcher.stdin.close()
        try:
            watcher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()


class ExternalPostgres(PostgresTarget):
    """A server someone else runs (``SESSIONTREE_TEST_POSTGRES_URL``); restartable through a control command."""

    def __init__(self, url: str, ctl: Sequence[str] | None = None) -> None:
        if urlsplit(url).scheme not in ("postgresql", "postgres"):
            raise PostgresUnavailable(f"{URL_ENV} must be a postgresql:// URL, not {url!r}")
        self._url = url
        self.ctl = list(ctl) if ctl else None
        self.can_restart = self.ctl is not None

    @property
    def url(self) -> str:
        return self._url

    def pause(self, mode: Mode = "fast") -> None:
        self._control("stop", mode)

    def resume(self) -> None:
        self._control("start")

    def restart(self, mode: Mode = "fast") -> None:
        self._control("restart", mode)

    def ensure_running(self) -> None:
        if self.ctl is not None and not self.accepts_connections():
            self._control("start")

    def _control(self, action: str, mode: Mode | None = None) -> None:
        if self.ctl is None:
            raise PostgresUnavailable(
                f"{action} of the server at {URL_ENV} needs {CTL_ENV} (a control command)"
            )
        command = [*self.ctl, action, *(["-m", mode] if mode else [])]
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S * 2, check=False)
        if result.returncode != 0:
            raise PostgresUnavailable(
                f"`{shlex.join(command)}` failed:\n{(result.stdout + result.stderr).strip()}"
            )


def from_environment() -> ExternalPostgres | None:
    """The server named by ``SESSIONTREE_TEST_POSTGRES_URL`` (and ``..._CTL``), or None when unset."""
    url = os.environ.get(URL_ENV)
    if not url:
        return None
    ctl = os.environ.get(CTL_ENV)
    return ExternalPostgres(url, shlex.split(ctl) if ctl else None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers signal 0; it is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _watch(directory: Path, owner: IO[bytes]) -> None:
    """Wait for the owner: a byte means it stopped the cluster itself; end of input means it died."""
    if owner.read(1):
        return
    with contextlib.suppress(Exception):
        server = PostgresServer.attach(directory)
        server._halt("immediate")
    shutil.rmtree(directory, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The script: which, start, ctl, destroy (and the watcher's `watch`)."""
    parser = argparse.ArgumentParser(prog="pg_server.py", description="A throwaway PostgreSQL cluster.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("which", help="print the directory of initdb/pg_ctl/postgres")
    start = commands.add_parser("start", help="start a cluster in DIR, print the tests' environment")
    ctl = commands.add_parser("ctl", help="start, stop or restart the cluster in DIR (data and port kept)")
    destroy = commands.add_parser("destroy", help="stop the cluster in DIR and remove DIR")
    watch = commands.add_parser("watch")
    for command in (start, ctl, destroy, watch):
        command.add_argument("directory", type=Path)
    ctl.add_argument("action", choices=["start", "stop", "restart"])
    ctl.add_argument("-m", "--mode", choices=["smart", "fast", "immediate"], default="fast")
    args = parser.parse_args(argv)
    try:
        if args.command == "which":
            print(find_bin_dir())
            return 0
        directory: Path = args.directory.resolve()
        if args.command == "start":
            server = PostgresServer(directory, watch=False).start()
            ctl_command = shlex.join([sys.executable, str(Path(__file__).resolve()), "ctl", str(directory)])
            for key, value in ((URL_ENV, server.url), (CTL_ENV, ctl_command), (DIR_ENV, str(directory))):
                print(f"export {key}={shlex.quote(value)}")
        elif args.command == "ctl":
            server = PostgresServer.attach(directory)
            if args.action in ("stop", "restart"):
                server.pause(args.mode)
            if args.action in ("start", "restart"):
                server.resume()
        elif args.command == "destroy":
            if (directory / "cluster.json").is_file():
                PostgresServer.attach(directory).stop()
            shutil.rmtree(directory, ignore_errors=True)
        elif args.command == "watch":
            _watch(directory, sys.stdin.buffer)
    except PostgresUnavailable as exc:
        print(f"pg_server.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
