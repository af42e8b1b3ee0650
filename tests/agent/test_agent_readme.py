"""The README's "Run an agent" section stays true: the offline example runs as written, the real-provider
example compiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def section_blocks() -> list[str]:
    section = README.split("## Run an agent", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_offline_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    offline, _ = section_blocks()
    namespace: dict[str, object] = {}
    exec(compile(offline, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[:4] == ["save_point False"] * 4
    assert printed[4:] == ['Fixed: it prints Hello, world. print("Hello, world") 4']


def test_the_provider_example_compiles() -> None:
    _, provider = section_blocks()
    compile(provider, "README.md", "exec")
