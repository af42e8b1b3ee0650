"""The core package does not need the framework extras: importing sessiontree and every module outside
``sessiontree.integrations`` loads neither the Agents SDK nor LangChain."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sessiontree

PACKAGE = Path(sessiontree.__file__).resolve().parent


def core_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if "integrations" in parts:
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_core_modules_import_no_framework() -> None:
    modules = core_modules()
    assert "sessiontree.cli.app" in modules and len(modules) > 40
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'langchain_core', 'langchain'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
