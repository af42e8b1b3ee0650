"""A request loads only the SDK its model's api needs (the Anthropic SDK alone takes seconds to import on a
loaded machine, and ``sessiontree run`` pays it on every start)."""

from __future__ import annotations

import json
import subprocess
import sys


def loaded_after(api: str) -> list[str]:
    script = (
        "import json, sys\n"
        "from sessiontree.llm.stream import _provider_for\n"
        f"_provider_for({api!r})\n"
        "print(json.dumps(sorted(m for m in ('anthropic', 'openai') if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(done.stdout))


def test_each_api_loads_only_its_sdk() -> None:
    assert loaded_after("openai-completions") == ["openai"]
    assert loaded_after("openai-responses") == ["openai"]
    assert loaded_after("anthropic-messages") == ["anthropic"]
