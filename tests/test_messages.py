"""Message constructors build pi's shapes in pi's key order, and the context uses the same shapes."""

from __future__ import annotations

from sessiontree import build_session_context
from sessiontree._json import dumps
from sessiontree.messages import (
    assistant_message,
    bash_execution_message,
    branch_summary_message,
    compaction_summary_message,
    custom_message,
    tool_result_message,
    user_message,
)


def test_bash_execution_key_order_and_omitted_exit_code() -> None:
    done = bash_execution_message("ls", "a\n", exit_code=0, timestamp=5, exclude_from_context=True)
    assert list(done) == [
        "role",
        "command",
        "output",
        "exitCode",
        "cancelled",
        "truncated",
        "timestamp",
        "excludeFromContext",
    ]
    cancelled = bash_execution_message(
        "sleep 9",
        "",
        exit_code=None,
        cancelled=True,
        timestamp=6,
        full_output_path="/tmp/out.log",
        truncated=True,
    )
    assert dumps(cancelled) == (
        '{"role":"bashExecution","command":"sleep 9","output":"","cancelled":true,'
        '"truncated":true,"fullOutputPath":"/tmp/out.log","timestamp":6}'
    )


def test_user_assistant_tool_result_and_custom_shapes() -> None:
    assert dumps(user_message("hi", 1)) == '{"role":"user","content":"hi","timestamp":1}'
    reply = assistant_message(
        [{"type": "text", "text": "ok"}],
        api="anthropic-messages",
        provider="anthropic",
        model="m",
        stop_reason="error",
        error_message="boom",
        timestamp=2,
    )
    assert list(reply) == [
        "role",
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stopReason",
        "errorMessage",
        "timestamp",
    ]
    assert reply["usage"]["cost"]["total"] == 0
    result = tool_result_message("c1", "read", [{"type": "text", "text": "x"}], is_error=False, timestamp=3)
    assert list(result) == ["role", "toolCallId", "toolName", "content", "isError", "timestamp"]
    custom = custom_message("note", "text", display=False, timestamp=4, details={"k": 1})
    assert list(custom) == ["role", "customType", "content", "display", "details", "timestamp"]


def test_summary_messages_equal_what_context_building_produces() -> None:
    entries = [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "message": user_message("start", 1),
        },
        {
            "type": "branch_summary",
            "id": "b1",
            "parentId": "u1",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "fromId": "x",
            "summary": "tried y",
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "b1",
            "timestamp": "2025-01-01T00:00:02.000Z",
            "summary": "sum",
            "firstKeptEntryId": "b1",
            "tokensBefore": 42,
        },
    ]
    context = build_session_context(entries, "c1")
    assert context.messages == [
        compaction_summary_message("sum", 42, 1735689602000),
        branch_summary_message("tried y", "x", 1735689601000),
    ]
