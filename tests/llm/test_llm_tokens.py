"""Token accounting against pi's own numbers on the compaction conformance fixtures."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.llm.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
)
from tests.conftest import list_cases, require_conformance


def _leaf_files(case: str) -> list[Path]:
    root = require_conformance() / "compaction" / case
    if not root.is_dir():
        pytest.skip(f"no compaction fixtures for {case}")
    return sorted(p for p in root.glob("*.json") if p.name != "branch-summary.json")


def _load(path: Path) -> dict[str, Any]:
    # The stdlib reads the \udXXX escapes pi writes for lone surrogates.
    return json.loads(path.read_text("utf-8"))


@pytest.mark.parametrize("case", [c for c in list_cases("compaction")])
def test_estimates_match_pi(case: str) -> None:
    for leaf_file in _leaf_files(case):
        data = _load(leaf_file)
        table = data["messages"]
        assert [estimate_tokens(m) for m in table] == data["messageTokens"], leaf_file
        context = [table[i] for i in data["context"]["messages"]]
        assert [estimate_tokens(m) for m in context] == data["context"]["estimateTokens"]
        estimate = estimate_context_tokens(context)
        assert estimate.to_dict() == data["context"]["estimateContextTokens"], leaf_file
        assert estimate.usageTokens == estimate.usage_tokens


@pytest.mark.parametrize("case", [c for c in list_cases("compaction")])
def test_last_assistant_usage_matches_pi(case: str) -> None:
    for leaf_file in _leaf_files(case):
        data = _load(leaf_file)
        expected = data["lastAssistantUsage"]
        # The path lists (id, type, role); message entries on the path are, in order, the messages pi saw.
        # Rebuild entries from the context's table where the path's role says "assistant".
        entries = _entries_from_fixture(data)
        usage = get_last_assistant_usage(entries)
        if expected is None:
            assert usage is None, leaf_file
        else:
            assert usage == expected["usage"], leaf_file
            assert calculate_context_tokens(usage) == expected["calculateContextTokens"]


@functools.cache
def _sources(root: str) -> dict[str, str]:
    index = _load(Path(root) / "compaction" / "index.json")
    return {c["case"]: c["source"] for c in index["cases"] if "source" in c}


def _entries_from_fixture(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixture's root..leaf path as entries, read from the session file it names (last id wins)."""
    root = require_conformance()
    source = root / _sources(str(root))[data["case"]]
    by_id: dict[str, dict[str, Any]] = {}
    for line in source.read_text("utf-8", "surrogateescape").split("\n"):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry.get("type") != "session":
            by_id[entry["id"]] = entry
    return [by_id[step["id"]] for step in data["path"]]


def test_calculate_context_tokens_prefers_total() -> None:
    assert (
        calculate_context_tokens(
            {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 50}
        )
        == 50
    )
    assert (
        calculate_context_tokens({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 0})
        == 10
    )
    assert calculate_context_tokens({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4}) == 10


def test_estimate_tokens_counts_utf16_units_images_and_arguments() -> None:
    assert estimate_tokens({"role": "user", "content": "🎉"}) == 1  # 2 UTF-16 units
    assert (
        estimate_tokens({"role": "user", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]})
        == 1200
    )
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "abcd"},
            {"type": "toolCall", "id": "c", "name": "read", "arguments": {"x": 1e21}},
        ],
    }
    # "abcd" + "read" + '{"x":1e+21}' = 4 + 4 + 11 = 19 chars -> 5 tokens
    assert estimate_tokens(assistant) == 5
    assert (
        estimate_tokens(
            {"role": "bashExecution", "command": "ls", "output": "ab", "excludeFromContext": True}
        )
        == 1
    )
    assert estimate_tokens({"role": "somethingElse", "content": "xxxxxxxx"}) == 0


def test_estimate_context_tokens_skips_error_and_aborted_usage() -> None:
    usage = {"input": 10, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 100}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "x" * 8},
        {"role": "assistant", "content": [], "usage": usage, "stopReason": "stop"},
        {"role": "user", "content": "y" * 4},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "z" * 4}],
            "usage": usage,
            "stopReason": "error",
        },
    ]
    result = estimate_context_tokens(messages)
    assert result.to_dict() == {"tokens": 102, "usageTokens": 100, "trailingTokens": 2, "lastUsageIndex": 1}
    assert estimate_context_tokens(messages[:1]).to_dict() == {
        "tokens": 2,
        "usageTokens": 0,
        "trailingTokens": 2,
        "lastUsageIndex": None,
    }
