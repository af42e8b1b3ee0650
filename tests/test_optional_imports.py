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


ONLY_ON_USE = (
    "logging",
    "sessiontree.format.entry_types",
    "sessiontree.format.message_types",
    "sessiontree.storage.migrate",
    "sessiontree.storage.repository",
    "sessiontree.storage.urls",
)
"""Modules an open + context of a sound file does not need: they load when first used."""


def _modules_after(code: str) -> set[str]:
    script = f"import sys\n{code}print(sorted(sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(eval(out.stdout.strip().splitlines()[-1]))


def _session_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "s.jsonl"
    header = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
    path.write_text("".join(f"{line}\n" for line in (header, *lines)))
    return path


ENTRY = (
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"hi","timestamp":1}}'
)


def test_opening_a_sound_session_and_building_its_context_loads_only_what_it_uses(tmp_path: Path) -> None:
    path = _session_file(tmp_path, ENTRY)
    code = (
        "from sessiontree import SessionManager\n"
        f"m = SessionManager.open({str(path)!r}, read_only=True)\n"
        "assert m.build_session_context().messages\n"
    )
    assert not set(ONLY_ON_USE) & _modules_after(code)


def test_a_session_with_problems_logs_them_silently_unless_the_application_logs(tmp_path: Path) -> None:
    path = _session_file(tmp_path, ENTRY, "garbage")
    code = (
        "import io, contextlib\n"
        "from sessiontree import SessionManager\n"
        "err = io.StringIO()\n"
        "with contextlib.redirect_stderr(err):\n"
        f"    m = SessionManager.open({str(path)!r}, read_only=True)\n"
        "import logging\n"
        "assert m.problems and err.getvalue() == '', err.getvalue()\n"
        "assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger('sessiontree').handlers)\n"
    )
    assert "logging" in _modules_after(code)


def test_the_entry_and_message_shapes_are_still_typed_dicts() -> None:
    from sessiontree.format import entries, messages

    assert messages.UserMessage.__required_keys__ == {"role", "content", "timestamp"}
    assert entries.CompactionEntry.__required_keys__ >= {"type", "id", "firstKeptEntryId"}
    assert messages.Message is not None and messages.StopReason is not None


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
        "sessiontree.format.entries",
        "sessiontree.format.messages",
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
