"""Summaries through the real model layer: the exact summarization requests on the wire (snapshots) of a
loopback server speaking each provider API, and a compaction written through it, re-opened both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.compaction import (
    SUMMARIZATION_SYSTEM_PROMPT,
    CompactionSettings,
    LlmSummarizer,
    compact_session,
    generate_branch_summary,
    generate_summary,
    generate_turn_prefix_summary,
)
from sessiontree.llm import StreamOptions
from sessiontree.llm.types import Api
from sessiontree.tree.context import build_session_context
from tests.compaction.support import assistant_msg, call, realistic_messages, tool_result_msg, user_msg
from tests.llm.fake_servers import (
    FakeServer,
    SseReply,
    anthropic_sse,
    chat_completions_sse,
    fake_server,
    responses_sse,
)
from tests.llm.wire_support import APIS, model_for

OPTIONS = StreamOptions(api_key="test-key", max_retries=0)


def text_reply(api: Api, text: str) -> SseReply:
    if api == "openai-completions":
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                 "prompt_tokens_details": {"cached_tokens": 0}}  # fmt: skip
        return chat_completions_sse(text=[text], usage=usage)
    if api == "openai-responses":
        usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                 "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
        return responses_sse(text=[text], usage=usage)
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    return anthropic_sse(text=[text], usage=usage)


def summarizer(api: Api, server: FakeServer) -> LlmSummarizer:
    return LlmSummarizer(model_for(api, server.url), OPTIONS)


def prompt_text(api: Api, body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, user text) of a recorded request body."""
    if api == "anthropic-messages":
        system = body["system"]
        system_text = system if isinstance(system, str) else "".join(b["text"] for b in system)
        content = body["messages"][0]["content"]
        return system_text, content if isinstance(content, str) else "".join(b["text"] for b in content)
    if api == "openai-responses":
        items = body["input"]
        system_text = body.get("instructions") or "".join(
            c["text"] for i in items if i.get("role") in ("system", "developer") for c in _parts(i["content"])
        )
        user = next(i for i in items if i.get("role") == "user")
        return system_text, "".join(c["text"] for c in _parts(user["content"]))
    messages = body["messages"]
    system = next(m for m in messages if m["role"] in ("system", "developer"))
    user = next(m for m in messages if m["role"] == "user")
    return _flat(system["content"]), _flat(user["content"])


def _parts(content: Any) -> list[dict[str, Any]]:
    return [{"text": content}] if isinstance(content, str) else list(content)


def _flat(content: Any) -> str:
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def history() -> list[dict[str, Any]]:
    return [
        user_msg("Rename the config loader"),
        assistant_msg("Reading it first.", [call("c1", "read", path="src/config.py")]),
        tool_result_msg("c1", "read", "def load(): ..."),
        {"role": "branchSummary", "summary": "YAML was rejected.", "fromId": "abcd1234", "timestamp": 5},
    ]


@pytest.mark.parametrize("api", APIS)
def test_summarization_requests_on_the_wire(api: Api, snapshot: Any) -> None:
    with fake_server() as server:
        for reply in ("history", "prefix", "branch"):
            server.replies.append(text_reply(api, f"{reply} summary"))
        model = summarizer(api, server)

        async def run() -> list[str]:
            with anyio.fail_after(30):
                return [
                    await generate_summary(
                        history(),
                        model,
                        16384,
                        custom_instructions="the loader",
                        previous_summary="## Goal\nold",
                        thinking_level="medium",
                    ),
                    await generate_turn_prefix_summary(history()[:3], model, 16384),
                    (
                        await generate_branch_summary(
                            [
                                {
                                    "type": "message",
                                    "id": f"m{i}",
                                    "parentId": None,
                                    "timestamp": "2025-01-01T00:00:00Z",
                                    "message": m,
                                }
                                for i, m in enumerate(history()[:3])
                            ],
                            model,
                        )
                    ).summary,
                ]

        summaries = anyio.run(run)
        bodies = [r.body for r in server.requests]
    assert summaries[0] == "history summary" and summaries[1] == "prefix summary"
    assert summaries[2].endswith("branch summary\n\n<read-files>\nsrc/config.py\n</read-files>")
    texts = [prompt_text(api, body) for body in bodies]
    assert all(system == SUMMARIZATION_SYSTEM_PROMPT for system, _ in texts)
    history_text = texts[0][1]
    assert history_text.startswith("<conversation>\n[User]: Rename the config loader\n\n[Assistant]: Reading")
    assert "\n</conversation>\n\n<previous-summary>\n## Goal\nold\n</previous-summary>\n\n" in history_text
    assert "<branch_exploration_summary>" in history_text and history_text.endswith(
        "Additional focus: the loader"
    )
    assert "PREFIX of a turn" in texts[1][1] and "## Why Abandoned" in texts[2][1]
    assert bodies == snapshot


@pytest.mark.parametrize("api", APIS)
def test_compaction_through_a_provider_reopens_both_ways(api: Api, tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path)
    for message in realistic_messages():
        manager.append_message(message)
    kept = [manager.append_message(user_msg("keep this question " + "k" * 300))]
    kept.append(manager.append_message(assistant_msg("keep this answer " + "k" * 300)))
    with fake_server() as server:
        server.replies.append(text_reply(api, "## Goal\nRetry with backoff"))

        async def run() -> dict[str, Any]:
            with anyio.fail_after(30):
                return await compact_session(
                    manager, summarizer(api, server), settings=CompactionSettings(keep_recent_tokens=150)
                )

        entry = anyio.run(run)
        assert len(server.requests) == 1
    assert entry["summary"].startswith("## Goal\nRetry with backoff\n\n<read-files>")
    assert entry["firstKeptEntryId"] == kept[0]
    new = manager.append_message(user_msg("a new question"))
    path = manager.get_session_file()
    manager.close()
    reopened = SessionManager.open(path, read_only=True)
    messages = reopened.build_session_context().messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant", "user"]
    assert messages[1:3] == [reopened.get_entry(i)["message"] for i in kept]  # type: ignore[index]
    assert messages[3] == reopened.get_entry(new)["message"]  # type: ignore[index]
    pi_view = [{k: v for k, v in e.items() if k != "retainedTail"} for e in reopened.get_entries()]
    assert build_session_context(pi_view, reopened.get_leaf_id()).messages == messages
