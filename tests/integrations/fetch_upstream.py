"""Fetch the upstream test suites the adapters are checked against: the ``tests/`` folders (and pytest
configuration) of the installed openai-agents and langchain-core, from their source distributions on PyPI.

    python tests/integrations/fetch_upstream.py [--dest DIR]

The versions are the installed ones (``importlib.metadata``), so the tests always match the code they test.
They go to ``DIR/<name>-<version>/`` (default: ``$SESSIONTREE_UPSTREAM_TESTS``, else ``.upstream-tests/`` at
the repository root); a version already there is not fetched again. ``test_upstream_suites.py`` runs them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DISTRIBUTIONS = ("openai-agents", "langchain-core")
ENV = "SESSIONTREE_UPSTREAM_TESTS"
REPO_ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """Where the fetched suites live."""
    return Path(os.environ.get(ENV) or REPO_ROOT / ".upstream-tests")


def suite_dir(distribution: str, root: Path | None = None) -> Path:
    """The folder of ``distribution``'s suite for its installed version (it may not be fetched yet)."""
    version = importlib.metadata.version(distribution)
    return (root or cache_root()) / f"{distribution}-{version}"


def _wanted(name: str) -> str | None:
    """The path a member of the sdist goes to (its top folder dropped), or None to leave it out."""
    _, _, inner = name.partition("/")
    if inner == "pyproject.toml" or inner.startswith("tests/"):
        return inner
    return None


def fetch(distribution: str, root: Path) -> Path:
    target = suite_dir(distribution, root)
    if (target / "tests").is_dir() and (target / "pyproject.toml").is_file():
        return target
    version = importlib.metadata.version(distribution)
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{distribution}=={version}",
                "--dest",
                download,
            ],
            check=True,
        )
        (sdist,) = Path(download).glob("*.tar.gz")
        partial = target.with_name(target.name + ".partial")
        partial.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as archive:
            members = []
            for member in archive.getmembers():
                inner = _wanted(member.name)
                if inner is not None and (member.isfile() or member.isdir()):
                    member.name = inner
                    members.append(member)
            archive.extractall(partial, members=members, filter="data")
        partial.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dest", type=Path, default=None, help=f"where to put them (default: {cache_root()})"
    )
    args = parser.parse_args(argv)
    root = args.dest or cache_root()
    for distribution in DISTRIBUTIONS:
        print(fetch(distribution, root))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
