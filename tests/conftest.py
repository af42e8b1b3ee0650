"""Shared test fixtures: where pi's conformance data lives, and copying inputs before opening them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the seeds and counts of the fuzz runs, so any run can be replayed."""
    from tests.property.test_store_fuzz import FUZZ_RUNS

    for line in FUZZ_RUNS:
        terminalreporter.write_line(line)
