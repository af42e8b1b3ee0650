"""The suite's own plumbing: a test whose captured output holds a lone surrogate (as damaged sessions do)
reports normally under pytest-xdist instead of ending the run with an internal error."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_captured_lone_surrogates_do_not_break_the_parallel_run(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import logging, sys\n"
        "def test_logs_a_surrogate():\n"
        "    logging.getLogger('probe').warning('half a pair \\udcff here')\n"
        "    sys.stdout.write('out \\ud800\\n')\n"
        "def test_fails_with_a_surrogate():\n"
        "    assert 'x' == 'y \\udcff'\n"
    )
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom tests.conftest import pytest_runtest_makereport  # noqa: F401\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            "-q",
            "-p",
            "no:asyncio",
            str(probe),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=300,
    )
    assert "INTERNALERROR" not in result.stdout + result.stderr, result.stdout[-3000:]
    assert "1 failed, 1 passed" in result.stdout, result.stdout[-3000:]
    logging.getLogger(__name__).debug("ok")
