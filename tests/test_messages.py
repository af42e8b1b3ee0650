"""Message constructors build pi's shapes in pi's key order, and the context uses the same shapes."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree import build_session_context
from sessiontree.format.messages import (
    assistant_message,
    bash_execution_message,
    branch_summary_message,
    compaction_summary_message,
    custom_message,
    tool_result_message,
    user_message,
)
from sessiontree.format.pi_json import dumps


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


# -- validate_message (append_message's check) --------------------------------------------------------------
def _conformance_messages() -> list[dict[str, Any]]:
    from sessiontree.format import pi_json as _json
    from tests.conftest import require_conformance

    root = require_conformance()
    found: list[dict[str, Any]] = []
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            try:
                value = _json.loads(line)
            except ValueError:
                continue
            if (
                isinstance(value, dict)
                and value.get("type") == "message"
                and isinstance(value.get("message"), dict)
            ):
                found.append(value["message"])
    for path in sorted(root.rglob("ops.json")):
        for op in _json.loads(path.read_bytes()).get("ops", []):
            if op.get("op") == "appendMessage":
                found.append(op["message"])
    return found


def test_every_message_pi_wrote_is_accepted() -> None:
    from sessiontree.format.messages import validate_message

    messages = _conformance_messages()
    assert len(messages) > 20_000
    for message in messages:
        validate_message(message)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ("just a string", "must be an object"),
        (None, "must be an object"),
        ({"content": "hi", "timestamp": 1}, "'role'"),
        ({"role": "robot", "content": "hi", "timestamp": 1}, "'robot' is not a known role"),
        ({"role": "user", "content": "hi"}, "'timestamp' is missing"),
        ({"role": "user", "content": "hi", "timestamp": "yesterday"}, "'timestamp' must be a number"),
        ({"role": "user", "content": "hi", "timestamp": True}, "'timestamp' must be a number"),
        ({"role": "user", "content": 5, "timestamp": 1}, "'content'"),
        ({"role": "user", "content": ["text"], "timestamp": 1}, "'content[0]'"),
        ({"role": "assistant", "content": "text", "timestamp": 1}, "'content'"),
        ({"role": "toolResult", "content": [{"text": "no type"}], "timestamp": 1}, "'content[0]'"),
        ({"role": "bashExecution", "output": "", "timestamp": 1}, "'command'"),
        ({"role": "branchSummary", "timestamp": 1}, "'summary'"),
    ],
)
def test_append_message_refuses_a_bad_envelope_naming_the_field(
    message: Any, field: str, tmp_path: Any
) -> None:
    from sessiontree import SessionError, SessionManager

    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    with pytest.raises(SessionError) as raised:
        manager.append_message(message)
    assert raised.value.kind == "invalid_argument"
    assert field in str(raised.value)
    assert manager.get_entries() == [] and list((tmp_path / "sessions").iterdir()) == []  # nothing written
    manager.close()


def test_an_app_defined_role_is_accepted_once_registered() -> None:
    from sessiontree import SessionError, SessionManager
    from sessiontree.format.messages import register_message_role

    manager = SessionManager.in_memory("/p")
    note = {"role": "reviewNote", "text": "looks fine", "timestamp": 5}
    with pytest.raises(SessionError):
        manager.append_message(note)
    register_message_role("reviewNote")
    entry_id = manager.append_message(note)
    assert manager.get_entry(entry_id)["message"] == note  # type: ignore[index]
