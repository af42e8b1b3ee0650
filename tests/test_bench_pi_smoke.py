"""Smoke tests for ``bench/pi_compare.py`` (sessiontree against pi 1.6.0's own SessionManager).

The run with pi needs node and the bundle that ``bash tools/pi_js/build.sh`` makes (skipped with the reason
otherwise; the test never installs anything). The tables' shape is checked, never the timings.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pi_js_bundle import PiJs, pi_js_or_skip, prepare

REPO = Path(__file__).resolve().parent.parent

SESSIONTREE_ROWS = (
    "file size",
    "entries on the leaf path",
    "context messages: sessiontree",
    "floor: read bytes + split lines (Python)",
    "sessiontree: open (read-only)",
    "sessiontree: build context",
    "sessiontree: open + context",
    "sessiontree ÷ floor, open + context",
    "whole process: sessiontree (python)",
    "CPU ÷ wall, sessiontree processes",
    "python -c pass",
    'python -c "import sessiontree"',
    "import sessiontree (the difference)",
)
PI_ROWS = (
    "context messages: pi 1.6.0",
    "pi 1.6.0: SessionManager.open",
    "pi 1.6.0: buildSessionContext",
    "pi 1.6.0: open + context",
    "pi ÷ floor, open + context",
    "pi ÷ sessiontree, open + context",
    "pi ÷ sessiontree, context alone",
    "whole process: pi 1.6.0 (node)",
    "node start + loading pi (in-process)",
    "whole process, pi ÷ sessiontree",
    "node -e 0",
)


def _compare(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "pi_compare.py"),
            "--sizes",
            "300",
            "--repeats",
            "1",
            "--data-dir",
            str(tmp_path / "data"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env=env,
    )


def _row(table: str, label: str) -> str:
    lines = [line for line in table.splitlines() if line.strip().startswith(label)]
    assert lines, f"no row {label!r} in:\n{table}"
    return lines[0]


def test_without_node_the_pi_column_is_left_out_with_the_reason(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = _compare(tmp_path, env={**os.environ, "PATH": str(empty)})  # no node on PATH
    assert done.returncode == 0, done.stderr
    for label in SESSIONTREE_ROWS:
        _row(done.stdout, label)
    assert "pi 1.6.0 not measured: node is not installed" in done.stdout
    assert "pi 1.6.0: open + context" not in done.stdout
    assert _row(done.stdout, "context messages: sessiontree").split()[-1] != "-"


def test_side_by_side_run_prints_every_row_and_both_sides_agree(tmp_path: Path) -> None:
    pi = pi_js_or_skip()
    done = _compare(tmp_path, "--no-build", "--pi-dir", str(pi.directory))
    assert done.returncode == 0, done.stderr
    for label in SESSIONTREE_ROWS + PI_ROWS:
        _row(done.stdout, label)
    assert "not measured" not in done.stdout
    assert "WARNING" not in done.stdout
    # the same context from both implementations, on the same file
    ours = _row(done.stdout, "context messages: sessiontree").split()[-1]
    theirs = _row(done.stdout, "context messages: pi 1.6.0").split()[-1]
    assert ours == theirs and int(ours.replace(",", "")) > 0
    assert _row(done.stdout, "pi ÷ sessiontree, open + context").split()[-1].endswith("×")


def test_pi_bench_refuses_a_file_pi_would_rewrite(tmp_path: Path) -> None:
    pi = pi_js_or_skip()
    old = tmp_path / "v2.jsonl"
    old.write_text(
        '{"type":"session","version":2,"id":"a","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
    )
    unterminated = tmp_path / "open.jsonl"
    unterminated.write_text(
        '{"type":"session","version":3,"id":"b","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}'
    )
    for path, why in ((old, "a version 2 session"), (unterminated, "does not end with a newline")):
        before = path.read_bytes()
        done = subprocess.run(
            [pi.node, str(pi.session_bench), str(path)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2
        assert why in done.stderr and str(path) in done.stderr
        assert path.read_bytes() == before


def test_require_flag_turns_a_missing_bundle_into_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONTREE_PI_JS_DIR", str(tmp_path / "never-built"))
    monkeypatch.delenv("SESSIONTREE_REQUIRE_PI_JS", raising=False)
    with pytest.raises(pytest.skip.Exception):
        pi_js_or_skip()
    monkeypatch.setenv("SESSIONTREE_REQUIRE_PI_JS", "1")
    with pytest.raises(pytest.fail.Exception, match="SESSIONTREE_REQUIRE_PI_JS=1 but"):
        pi_js_or_skip()


def test_an_unreachable_registry_gives_the_reason_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm to run build.sh")
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # nothing listens there
    monkeypatch.setenv("SESSIONTREE_NPM_FETCH_RETRIES", "0")  # (a retry would wait about 20 s)
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    found = prepare(tmp_path / "pi-js", build=True)
    assert isinstance(found, str)
    assert "building pi 1.6.0's bundle failed" in found
    assert "is the npm registry reachable" in found
    assert not (tmp_path / "pi-js" / "session-bench.mjs").exists()


def test_without_npm_an_existing_bundle_is_used_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pi = pi_js_or_skip()
    only_node = tmp_path / "bin"
    only_node.mkdir()
    (only_node / "node").symlink_to(pi.node)
    monkeypatch.setenv("PATH", str(only_node))
    found = prepare(pi.directory, build=True)
    assert isinstance(found, PiJs) and found.session_bench == pi.session_bench
    assert isinstance(prepare(tmp_path / "never-built", build=True), str)
