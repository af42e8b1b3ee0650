"""Every context in pi's conformance data converts into a valid request for all three wire formats.

Valid means: every tool call answered exactly once right after it, no result without its call, no failed
(error/aborted) turn sent, no empty messages, and a body that encodes as UTF-8. No network is used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.llm import Context, Model, ModelCost, Tool, convert_to_llm, estimate_context_tokens
from sessiontree.llm.providers import anthropic, openai_completions, openai_responses
from sessiontree.llm.types import StreamOptions
from tests.conftest import list_cases, require_conformance

TOOLS = [
    Tool(name, f"{name} tool", {"type": "object", "properties": {}}) for name in ("read", "bash", "edit")
]
MODELS = [
    Model(id="claude-opus-4-5", api="anthropic-messages", provider="anthropic", reasoning=True,
          input=("text", "image"), cost=ModelCost(5, 25, 0.5, 6.25), context_window=200_000, max_tokens=64_000),
    Model(id="gpt-5", api="openai-responses", provider="openai", reasoning=True, input=("text", "image")),
    Model(id="qwen3", api="openai-completions", provider="vllm", reasoning=True, input=("text",)),
]  # fmt: skip
OPTIONS = StreamOptions(api_key="k", reasoning="medium")


def _contexts(case: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    root = require_conformance()
    leaf_dir = root / "compaction" / case
    for path in sorted(leaf_dir.glob("*.json")) if leaf_dir.is_dir() else []:
        if path.name == "branch-summary.json":
            continue
        data = json.loads(path.read_text("utf-8"))
        yield path.name, [data["messages"][i] for i in data["context"]["messages"]]
    final = root / "cases" / case / "context.json"
    if final.is_file():
        yield "context.json", json.loads(final.read_text("utf-8"))["messages"]


def _failed_only(messages: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Tool-call ids and texts that appear only in error/aborted assistant turns."""
    failed_ids: set[str] = set()
    failed_texts: set[str] = set()
    kept_ids: set[str] = set()
    kept_texts: set[str] = set()
    for m in messages:
        if m.get("role") != "assistant":
            if m.get("role") in ("user", "toolResult", "custom"):
                content = m.get("content")
                kept_texts.update([content] if isinstance(content, str) else
                                  [b.get("text", "") for b in content or [] if isinstance(b, dict)])  # fmt: skip
            continue
        failed = m.get("stopReason") in ("error", "aborted")
        for block in m.get("content") or []:
            if block.get("type") == "toolCall":
                (failed_ids if failed else kept_ids).add(str(block["id"]))
            elif block.get("type") in ("text", "thinking"):
                text = block.get("text") or block.get("thinking") or ""
                if text.strip():
                    (failed_texts if failed else kept_texts).add(text)
    return failed_ids - kept_ids, {t for t in failed_texts - kept_texts if len(t) > 12}


def _check_completions(body: dict[str, Any], failed_ids: set[str]) -> list[str]:
    messages = body["messages"]
    ids: list[str] = []
    for i, m in enumerate(messages):
        assert m["role"] in ("system", "developer", "user", "assistant", "tool")
        assert m.get("content") or m.get("tool_calls"), m
        if m["role"] == "assistant" and m.get("tool_calls"):
            expected = [c["id"] for c in m["tool_calls"]]
            following = []
            j = i + 1
            while j < len(messages) and messages[j]["role"] == "tool":
                following.append(messages[j]["tool_call_id"])
                j += 1
            assert sorted(following) == sorted(expected), (expected, following)
            ids += expected
        if m["role"] == "tool":
            assert i > 0 and messages[i - 1]["role"] in ("assistant", "tool")
    assert not set(ids) & {i.split("|")[0] for i in failed_ids}
    return [m["content"] for m in messages if m["role"] == "assistant" and isinstance(m.get("content"), str)]


def _check_responses(body: dict[str, Any], failed_ids: set[str]) -> list[str]:
    items = body["input"]
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    texts: list[str] = []
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            assert item["call_id"] not in calls
            calls[item["call_id"]] = i
        elif kind == "function_call_output":
            assert item["call_id"] not in outputs
            outputs[item["call_id"]] = i
            assert item["call_id"] in calls and calls[item["call_id"]] < i
        elif kind == "message" and item.get("role") == "assistant":
            texts += [c["text"] for c in item["content"]]
        elif item.get("role") == "user":
            assert item["content"]
    assert set(calls) == set(outputs)
    assert not set(calls) & {i.split("|")[0] for i in failed_ids}
    return texts


def _check_anthropic(body: dict[str, Any], failed_ids: set[str]) -> list[str]:
    messages = body["messages"]
    texts: list[str] = []
    for i, m in enumerate(messages):
        assert m["role"] in ("user", "assistant") and m["content"]
        for block in m["content"]:
            if block["type"] == "text":
                assert block["text"].strip()
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
        if m["role"] == "assistant":
            texts += [b["text"] for b in m["content"] if b["type"] == "text"]
            if uses:
                nxt = messages[i + 1]
                answered = [b["tool_use_id"] for b in nxt["content"] if b["type"] == "tool_result"]
                assert nxt["role"] == "user" and sorted(answered) == sorted(uses)
                assert not set(uses) & failed_ids
        elif results:
            previous = messages[i - 1]
            assert previous["role"] == "assistant"
            assert set(results) <= {b["id"] for b in previous["content"] if b["type"] == "tool_use"}
    return texts


@pytest.mark.parametrize("case", list_cases("compaction"))
def test_every_context_makes_valid_requests(case: str) -> None:
    seen = 0
    for name, messages in _contexts(case):
        seen += 1
        converted = convert_to_llm(messages)
        estimate = estimate_context_tokens(messages)
        assert estimate.tokens == estimate.usage_tokens + estimate.trailing_tokens
        failed_ids, failed_texts = _failed_only(messages)
        for model in MODELS:
            context = Context(messages=converted, system_prompt="system", tools=TOOLS)
            if model.api == "anthropic-messages":
                body, _ = anthropic.build_request(model, context, OPTIONS)
                texts = _check_anthropic(body, failed_ids)
            elif model.api == "openai-responses":
                body = openai_responses.build_request(model, context, OPTIONS)
                texts = _check_responses(body, failed_ids)
            else:
                body = openai_completions.build_request(model, context, OPTIONS)
                texts = _check_completions(body, failed_ids)
            json.dumps(body, ensure_ascii=False).encode("utf-8")  # no lone surrogates on the wire
            for text in failed_texts:
                assert all(text not in t for t in texts), (case, name, model.api, text)
    if seen == 0:
        pytest.skip(f"no contexts for {case}")


def test_conformance_has_contexts() -> None:
    root: Path = require_conformance()
    assert len(list((root / "compaction").glob("*/*.json"))) > 600
