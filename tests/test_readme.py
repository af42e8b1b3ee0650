"""The README stays true: its Python tour runs, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_python_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "the README has a Python tour"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    files = list((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    assert len(files) == 1
    from sessiontree import SessionManager

    reopened = SessionManager.open(files[0], read_only=True)
    kinds = [e["type"] for e in reopened.get_entries()]
    assert kinds == ["model_change", "message", "label", "branch_summary"]
    reopened.close()


def test_setup_commands_are_the_ones_ci_runs() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, flags=re.S)
    assert first_block is not None
    commands = [line for line in first_block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "sessiontree demo examples/coding-session.jsonl" in commands[0]
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert (ROOT / "examples" / "coding-session.jsonl").is_file()
