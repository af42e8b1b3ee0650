"""The Agents SDK's own session tests and langchain-core's chat-history tests, run against the adapters.

``fetch_upstream.py`` puts the test folders of the installed openai-agents and langchain-core in a cache;
each suite then runs in a pytest of its own inside that folder, with ``upstream/sessiontree_swap.py``
swapping ``SQLiteSession`` for ``TreeSession`` and ``InMemoryChatMessageHistory`` for
``TreeChatMessageHistory`` on one back end. Every test passes except the ones in ``EXCLUDED``, which need
SQLiteSession's private internals (its connections, tables, locks and error text); the README's adapter
section lists them. Without the cache the tests skip (and fail when ``SESSIONTREE_REQUIRE_UPSTREAM=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integrations.fetch_upstream import suite_dir

PLUGIN_DIR = Path(__file__).resolve().parent / "upstream"
REQUIRE_ENV = "SESSIONTREE_REQUIRE_UPSTREAM"

_CONNECTIONS = "SQLiteSession's per-thread connections (_connections, _get_connection)"
_ROWS = "rows written into SQLiteSession's agent_messages table with the plain driver (_locked_connection)"
_TABLES = (
    "dropping or probing SQLiteSession's own tables (agent_sessions, agent_messages) with the plain driver"
)


@dataclass(frozen=True)
class Suite:
    distribution: str
    files: tuple[str, ...]
    excluded: dict[str, str] = field(default_factory=dict)
    at_least: int = 1  # tests that must have worked on adapter sessions


SUITES = {
    "openai-agents": Suite(
        "openai-agents",
        ("tests/memory/test_session.py", "tests/memory/test_session_limit.py"),
        {
            "test_sqlite_session_close_closes_worker_thread_connections": _CONNECTIONS,
            "test_sqlite_session_reaps_connections_from_exited_worker_threads": _CONNECTIONS,
            "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _CONNECTIONS,
            "test_sqlite_session_keeps_connections_of_live_worker_threads": _CONNECTIONS,
            "test_sqlite_session_rollback_failure_evicts_connection": _CONNECTIONS,
            "test_sqlite_session_close_retries_quarantined_connection": _CONNECTIONS,
            "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _CONNECTIONS,
            "test_sqlite_session_pop_item_skips_corrupt_most_recent": _ROWS,
            "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _ROWS,
            "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _ROWS,
            "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _ROWS,
            "test_sqlite_session_failed_add_items_releases_write_lock": _TABLES,
            "test_sqlite_session_failed_clear_session_rolls_back": _TABLES,
            "test_sqlite_session_failed_pop_item_releases_write_lock": _TABLES,
            "test_sqlite_session_file_lock_is_shared_across_instances": (
                "SQLiteSession's class-level file locks (_lock, _file_lock_counts)"
            ),
            "test_sqlite_session_closed_rejects_empty_add_items": (
                "SQLiteSession's RuntimeError 'SQLiteSession is closed' (a closed TreeSession raises "
                "SessionError 'the session is closed')"
            ),
        },
        at_least=40,
    ),
    "langchain-core": Suite(
        "langchain-core",
        ("tests/unit_tests/chat_history/test_chat_history.py", "tests/unit_tests/runnables/test_history.py"),
        at_least=20,
    ),
}


@dataclass
class Outcome:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    on_adapters: list[str] = field(default_factory=list)


def read_report(path: Path) -> Outcome:
    outcome = Outcome()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        if case.find("failure") is not None or case.find("error") is not None:
            outcome.failed.append(name)
        elif (skip := case.find("skipped")) is not None:
            outcome.skipped[name] = skip.get("message", "")
        else:
            outcome.passed.append(name)
            if int(properties.get("adapter_sessions") or 0) > 0:
                outcome.on_adapters.append(name)
    return outcome


def run_suite(suite: Suite, backend: str, postgres_url: str | None, report: Path) -> Outcome:
    root = suite_dir(suite.distribution)
    if not (root / "tests").is_dir():
        message = (
            f"{suite.distribution}'s tests are not fetched ({root}): "
            "python tests/integrations/fetch_upstream.py"
        )
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), env.get("PYTHONPATH")) if p)
    env["SESSIONTREE_UPSTREAM_BACKEND"] = backend
    env["SESSIONTREE_UPSTREAM_EXCLUDED"] = json.dumps(suite.excluded)
    if postgres_url is not None:
        env["SESSIONTREE_UPSTREAM_POSTGRES_URL"] = postgres_url
    env.pop("PYTEST_ADDOPTS", None)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "sessiontree_swap",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--junitxml={report}",
        "-o",
        "junit_family=xunit1",
        *suite.files,
    ]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=1200)
    if not report.is_file():
        pytest.fail(
            f"the upstream run left no report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    outcome = read_report(report)
    print(
        f"{suite.distribution} on {backend}: {len(outcome.passed)} passed "
        f"({len(outcome.on_adapters)} on adapter sessions), {len(outcome.failed)} failed, "
        f"{len(outcome.skipped)} excluded"
    )
    assert outcome.failed == [], done.stdout[-6000:]
    return outcome


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("name", sorted(SUITES))
def test_upstream_suite_passes_against_the_adapters(
    name: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    suite = SUITES[name]
    postgres_url = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    outcome = run_suite(suite, backend, postgres_url, tmp_path / "report.xml")
    excluded = {test.split("[", 1)[0] for test in outcome.skipped}
    assert excluded == set(suite.excluded), "each exclusion names a test of the suite, and nothing else skips"
    assert all(reason.startswith("excluded: ") for reason in outcome.skipped.values())
    assert len(outcome.on_adapters) >= suite.at_least
