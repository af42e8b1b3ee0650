"""The import contracts in pyproject.toml (import-linter): every arrow points down the layers, no circles.

Run on the package as it is, and on a copy with a deliberate upward import and a deliberate circle, which
must break them: a contract that cannot fail proves nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT.exists(), reason="import-linter is not installed (pip install -e '.[dev]')"
)


def _lint(package_parent: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return subprocess.run(
        [str(LINT), "--config", str(tmp_path / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(package_parent), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _copy_package(tmp_path: Path) -> Path:
    parent = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "sessiontree", parent / "sessiontree")
    return parent


def test_the_package_keeps_its_contracts(tmp_path: Path) -> None:
    result = _lint(ROOT / "src", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    parent = _copy_package(tmp_path)
    ids = parent / "sessiontree" / "format" / "ids.py"
    ids.write_text(ids.read_text() + "\nfrom sessiontree.session.manager import SessionManager  # noqa\n")
    result = _lint(parent, tmp_path)
    assert result.returncode != 0
    assert "Layers: every import points down" in result.stdout and "BROKEN" in result.stdout
    assert "sessiontree.format.ids -> sessiontree.session.manager" in result.stdout


def test_a_circle_inside_a_layer_breaks_the_contract(tmp_path: Path) -> None:
    parent = _copy_package(tmp_path)
    dirs = parent / "sessiontree" / "storage" / "session_dirs.py"
    dirs.write_text(dirs.read_text() + "\nfrom sessiontree.storage import urls  # noqa\n")
    result = _lint(parent, tmp_path)
    assert result.returncode != 0
    assert "No cycles are allowed in sessiontree.storage" in result.stdout
