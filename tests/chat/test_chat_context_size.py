"""The context size shown after a change of the leaf: a compaction makes the last reply's reported usage
stale (it counted what the summary replaced), so the context is estimated until a reply comes after it;
the demo's "before / after" figures and the chat's footer use the same figure. On the shipped example
session, copied to a temporary directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app
from sessiontree.cli.context_size import context_tokens
from sessiontree.cli.demo_cmd import example_session
from sessiontree.compaction.offline import OfflineSummarizer
from sessiontree.compaction.session_ops import compact_session
from sessiontree.compaction.settings import CompactionSettings
from sessiontree.llm.tokens import estimate_context_tokens, estimate_tokens


def copied_example(tmp_path: Path) -> Path:
    copy = tmp_path / "example.jsonl"
    shutil.copyfile(example_session(), copy)
    return copy


def test_after_a_compaction_the_context_is_estimated_until_a_reply_reports_usage(tmp_path: Path) -> None:
    with SessionManager.open(copied_example(tmp_path)) as manager:
        before = context_tokens(manager.build_session_context().messages)
        assert before == estimate_context_tokens(manager.build_session_context().messages).tokens
        settings = CompactionSettings(keep_recent_tokens=200)
        anyio.run(lambda: compact_session(manager, OfflineSummarizer(), settings=settings))
        messages = manager.build_session_context().messages
        after = context_tokens(messages)
        assert after == sum(estimate_tokens(m) for m in messages)
        assert after < before < estimate_context_tokens(messages).tokens + 1  # the stale usage is not used
        manager.append_message({"role": "user", "content": "go on", "timestamp": manager.clock()})
        # a reply comes later than the compaction; stamped in the same millisecond (this test runs that fast),
        # it could as well be one the compaction kept, and is estimated: a millisecond later, as a real one is
        assert messages[0]["role"] == "compactionSummary"
        compacted_at = messages[0]["timestamp"]
        reply = {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "api": "openai-completions",
            "provider": "local",
            "model": "m",
            "usage": {"input": 700, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 710},
            "stopReason": "stop",
            "timestamp": max(manager.clock(), compacted_at + 1),
        }
        manager.append_message(reply)
        assert context_tokens(manager.build_session_context().messages) == 710  # a fresh usage is trusted


def test_the_demo_reports_a_smaller_context_after_its_compaction(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["demo", str(copied_example(tmp_path)), "--workdir", str(tmp_path / "w")]
    )
    assert result.exit_code == 0, result.output
    (line,) = [row for row in result.output.splitlines() if row.startswith("context: ~")]
    before, after = (int(part.split("~")[1].split()[0]) for part in line.split(",")[:2])
    assert after < before, line


def test_a_reply_that_reports_no_usage_leaves_the_context_estimated() -> None:
    manager = SessionManager.in_memory("/tmp")
    manager.append_message({"role": "user", "content": "x" * 4000, "timestamp": 1})
    zeros = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "y" * 400}], "api": "openai-completions",
             "provider": "local", "model": "m", "usage": zeros, "stopReason": "stop", "timestamp": 2}  # fmt: skip
    manager.append_message(reply)
    assert context_tokens(manager.build_session_context().messages) == 1000 + 100
