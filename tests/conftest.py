"""Shared test fixtures: pi's conformance data, copying inputs before opening them, a PostgreSQL server.

Fixtures only; the PostgreSQL cluster itself is started and stopped by ``tests/pg_server.py``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.pg_server import (
    CTL_ENV,
    URL_ENV,
    PostgresServer,
    PostgresTarget,
    PostgresUnavailable,
    from_environment,
)

REPO_ROOT = Path(__file__).resolve().parent.parent


def conformance_root() -> Path | None:
    """The conformance folder (``SESSIONTREE_CONFORMANCE_DIR``, default ``../shared/conformance``), or None."""
    configured = os.environ.get("SESSIONTREE_CONFORMANCE_DIR")
    root = Path(configured) if configured else REPO_ROOT.parent / "shared" / "conformance"
    if not root.is_absolute():
        root = (REPO_ROOT / root).resolve()
    return root if root.is_dir() else None


def require_conformance() -> Path:
    """Return the conformance root, or skip (fail when ``SESSIONTREE_REQUIRE_CONFORMANCE=1``)."""
    root = conformance_root()
    if root is None:
        reason = (
            "conformance data not found: set SESSIONTREE_CONFORMANCE_DIR "
            "(default ../shared/conformance relative to the repository root)"
        )
        if os.environ.get("SESSIONTREE_REQUIRE_CONFORMANCE") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return root


def list_cases(subdir: str) -> list[str]:
    """Case directory names under ``<root>/<subdir>`` for parametrization (empty when data is absent)."""
    root = conformance_root()
    if root is None or not (root / subdir).is_dir():
        # A single placeholder id keeps the test visible; the test itself skips or fails.
        return ["<conformance data missing>"]
    return sorted(p.name for p in (root / subdir).iterdir() if p.is_dir())


@pytest.fixture(autouse=True)
def _private_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's real pi directory or listing cache."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("pi-agent")))
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def conformance_dir() -> Path:
    return require_conformance()


@pytest.fixture
def copy_input(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Copy a conformance file into the test's temporary directory and return the copy's path."""

    def _copy(source: Path, name: str | None = None) -> Path:
        target = tmp_path / (name or source.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        return target

    return _copy


def require_postgres(reason: str) -> NoReturn:
    """Skip with ``reason`` (fail when ``SESSIONTREE_REQUIRE_POSTGRES=1``): no PostgreSQL server to test on."""
    message = f"no PostgreSQL server for the tests: {reason}"
    if os.environ.get("SESSIONTREE_REQUIRE_POSTGRES") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresTarget]:
    """The run's PostgreSQL server: ``SESSIONTREE_TEST_POSTGRES_URL``'s, else a throwaway cluster started here.

    A cluster started here is stopped when the test session ends, also after failures or Ctrl-C.
    """
    if importlib.util.find_spec("psycopg") is None:
        require_postgres("psycopg is not installed (pip install -e '.[dev]')")
    try:
        external = from_environment()
    except PostgresUnavailable as exc:
        require_postgres(str(exc))
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        # With parallel workers (pytest-xdist) each worker after the first has a cluster of its own: tests
        # stop, restart and fill their server, which must not happen under another worker's tests.
        external = None
    if external is not None:
        if not external.accepts_connections():
            require_postgres(f"cannot connect to {URL_ENV}={external.url}")
        yield external
        return
    server = PostgresServer()
    try:
        server.start()
    except PostgresUnavailable as exc:
        require_postgres(str(exc))
    try:
        yield server
    finally:
        server.stop()


_database_numbers = itertools.count(1)


@pytest.fixture
def postgres_url(postgres_cluster: PostgresTarget) -> Iterator[str]:
    """A ``postgresql://`` URL of a fresh, empty database, dropped after the test."""
    name = f"sessiontree_test_{os.getpid()}_{next(_database_numbers)}"
    url = postgres_cluster.create_database(name)
    yield url
    postgres_cluster.ensure_running()
    postgres_cluster.drop_database(name)


@pytest.fixture(scope="session")
def shared_postgres_store(postgres_cluster: PostgresTarget) -> str:
    """One database for the whole run, for tests whose sessions cannot collide (fresh UUIDv7 ids)."""
    return postgres_cluster.create_database(f"sessiontree_shared_{os.getpid()}")


@pytest.fixture
def postgres_server(
    postgres_cluster: PostgresTarget,
) -> Iterator[PostgresTarget]:
    """The run's server for tests that ``restart()`` it or take it ``down()``; brought back up after the test."""
    if not postgres_cluster.can_restart:
        require_postgres(
            f"the server at {URL_ENV} cannot be restarted: {CTL_ENV} (its control command) is not set"
        )
    yield postgres_cluster
    postgres_cluster.ensure_running()


# The fast subset, ``pytest -m "not slow"``: what drives a real program for long (tmux, Chromium, killed and
# restarted processes, benchmark runs, fuzz campaigns) is marked slow here, by module or by the fixture a
# test asks for, so that no test file has to remember it.
SLOW_MODULES = frozenset(
    {
        "tests/chat/test_chat_tmux.py",  # sessiontree chat driven in tmux
        "tests/agent/test_agent_crash.py",  # runs SIGKILLed at random points
        "tests/backends/test_sql_concurrency.py",  # many processes on one SQL store
        "tests/backends/test_sql_faults.py",  # writers killed mid-transaction, PostgreSQL restarted
        "tests/property/test_store_fuzz.py",  # fuzz campaigns against every store
        "tests/test_bench_smoke.py",  # the benchmarks, end to end
        "tests/test_bench_storage_smoke.py",
        "tests/agent/test_agent_bench_smoke.py",
        "tests/integrations/test_bench_smoke.py",
    }
)
SLOW_FIXTURES = frozenset({"chromium", "postgres_server"})


# The tests that take more than about 10 s each on this project's 2-core machine: run first, so that no worker
# starts one while the others have run out of tests (a 40 s test begun last is 40 s of one core alone).
LONG_TESTS = (
    "tests/backends/test_sql_fuzz.py::test_a_longer_campaign_on_sqlite_with_big_rows",
    "tests/backends/test_sql_fuzz.py::test_a_longer_campaign_on_postgresql",
    "tests/agent/test_agent_crash.py::test_killed_runs_reopen_make_valid_requests_keep_what_was_acknowledged_and_resume",
    "tests/property/test_store_fuzz.py::test_mutated_pi_files_keep_the_store_promise",
    "tests/test_suite_reports.py::test_captured_lone_surrogates_do_not_break_the_parallel_run",
    "tests/backends/test_sql_faults.py::test_writers_killed_mid_transaction_leave_whole_turns",
    "tests/test_bench_storage_smoke.py::test_quick_storage_run",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests (see ``SLOW_MODULES``); put the long ones first (``LONG_TESTS``)."""
    for item in items:
        module = item.path.relative_to(REPO_ROOT).as_posix() if item.path.is_relative_to(REPO_ROOT) else ""
        if module in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: not item.nodeid.split("[", 1)[0].endswith(LONG_TESTS))  # (a stable sort)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the seeds and counts of the fuzz runs, so any run can be replayed."""
    from tests.property.test_store_fuzz import FUZZ_RUNS

    for line in FUZZ_RUNS:
        terminalreporter.write_line(line)


def _utf8(text: str) -> str:
    """``text`` as UTF-8 can carry it: lone surrogates (which sessions hold) shown as ``\\udcff`` escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test's report (captured output and logs, the failure's text) goes from a pytest-xdist worker to the
    controller as UTF-8; the text a test captures may hold lone surrogates (damaged sessions do), which would
    end the whole run with an internal error, so they are escaped."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [(title, _utf8(content)) for title, content in report.sections]
    if report.longrepr is not None:
        text = str(report.longrepr)
        if _utf8(text) is not text:
            report.longrepr = _utf8(text)
