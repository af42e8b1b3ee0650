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


HEAVY = (
    "openai",
    "anthropic",
    "agents",
    "langchain_core",
    "psycopg",
    "rich",
    "typer",
    "click",
    "textual",
    "markdown_it",
    "prompt_toolkit",
    "anyio",
    "asyncio",
)
"""What ``import sessiontree`` must not load: the SDKs, the terminal and CLI libraries, the event loops."""


def _loaded_after(code: str) -> list[str]:
    """The top-level packages of ``HEAVY`` loaded once ``code`` ran in a fresh interpreter (at its exit)."""
    script = (
        "import atexit, sys\n"
        f"heavy = {HEAVY!r}\n"
        "atexit.register(lambda: sys.__stdout__.write(repr(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))) + '\\n'))\n"
        + code
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 2), out.stderr
    last = out.stdout.strip().splitlines()[-1]
    loaded: list[str] = eval(last)  # the repr of a list of names
    return loaded


def test_importing_sessiontree_loads_nothing_heavy() -> None:
    assert _loaded_after("import sessiontree\n") == []


def test_importing_sessiontree_loads_only_the_package_itself() -> None:
    """The public names load their modules when first used: the import is an interpreter start's worth."""
    script = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import sessiontree\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout.strip())
    assert [m for m in loaded if m.startswith("sessiontree")] == [
        "sessiontree",
        "sessiontree._lazy",
        "sessiontree.errors",
    ]
    assert not {"typing", "msgspec", "orjson", "pathlib", "logging"} & set(loaded)


def test_opening_a_session_and_building_its_context_loads_nothing_heavy(tmp_path: Path) -> None:
    code = (
        "from sessiontree import SessionManager\n"
        f"m = SessionManager.create('/project', {str(tmp_path)!r})\n"
        "m.append_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        f"m = SessionManager.open(m.get_session_file(), read_only=True)\n"
        "assert m.build_session_context().messages\n"
        "m.get_tree()\n"
    )
    assert _loaded_after(code) == []


def test_the_command_line_help_loads_no_terminal_library_nor_sdk() -> None:
    code = "sys.argv = ['sessiontree', '--help']\nfrom sessiontree.cli import main\nmain()\n"
    assert _loaded_after(code) == ["click", "typer"]


def test_every_public_name_resolves_and_star_imports_work() -> None:
    packages = [
        "sessiontree",
        "sessiontree.agent",
        "sessiontree.llm",
        "sessiontree.compaction",
        "sessiontree.storage",
        "sessiontree.export",
        "sessiontree.integrations.langchain",
        "sessiontree.integrations.openai_agents",
    ]
    script = (
        "import importlib\n"
        f"for name in {packages!r}:\n"
        "    package = importlib.import_module(name)\n"
        "    assert sorted(package.__all__) == sorted(set(package.__all__)), name\n"
        "    for attr in package.__all__:\n"
        "        getattr(package, attr)\n"
        "    assert set(package.__all__) <= set(dir(package)), name\n"
        "    namespace = {}\n"
        "    exec(f'from {name} import *', namespace)\n"
        "    assert set(package.__all__) <= set(namespace), name\n"
        "import sessiontree.llm, sessiontree.llm.stream\n"
        "assert callable(sessiontree.llm.stream) and not isinstance(sessiontree.llm.stream, type(sessiontree))\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "ok"
