"""Automatic retry (SPEC B§7.9): a reply that failed for a passing reason is sent again after 2^k-scaled
waits, the failed replies stay in the session but leave the retried request, the counter resets on a good
reply, quota and overflow errors are not retried, an abort ends the wait; and over the real SDKs against a
loopback server that answers 503 and 429 first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree import SessionManager
from sessiontree.agent import (
    AgentHarness,
    RetrySettings,
    ScriptedModel,
    is_retryable_error,
    overflow_reply,
    reply,
)
from sessiontree.agent.scripted import error_reply
from sessiontree.errors import SessionError
from sessiontree.llm import StreamOptions
from sessiontree.llm.types import Api
from tests.agent.support import Recorder, harness, roles, texts
from tests.llm.fake_servers import JsonReply, fake_server, reply_for
from tests.llm.wire_support import APIS, model_for

pytestmark = pytest.mark.anyio

FAST = RetrySettings(base_delay_ms=1)


def retry_events(events: Recorder) -> list[dict[str, Any]]:
    return [e for e in events.events if e["type"] in ("auto_retry_start", "auto_retry_end")]


def _failed(error: str) -> dict[str, Any]:
    return {"role": "assistant", "stopReason": "error", "errorMessage": error, "content": []}


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        ("529 overloaded", True),
        ("Overloaded", True),
        ("429 Too Many Requests", True),
        ("Rate limit reached for requests", True),
        ("503 Service Unavailable", True),
        ("Internal server error", True),
        ("Connection error.", True),
        ("Request timed out.", True),
        ("socket hang up", True),
        ("terminated", True),
        ("429 insufficient_quota: You exceeded your current quota", False),
        ("Your credit balance is too low; check billing", False),
        ("Monthly usage limit reached", False),
        ("prompt is too long: 213462 tokens > 200000 maximum", False),
        ("401 invalid x-api-key", False),
        ("Cannot read properties of undefined", False),
        ("", False),
    ],
)
def test_which_errors_are_retried(error: str, retryable: bool) -> None:
    assert is_retryable_error(_failed(error), 200_000) is retryable


def test_only_failed_assistant_replies_are_retried() -> None:
    assert not is_retryable_error({"role": "assistant", "stopReason": "stop", "errorMessage": "503"})
    assert not is_retryable_error({"role": "assistant", "stopReason": "aborted", "errorMessage": "timeout"})
    assert not is_retryable_error({"role": "user", "stopReason": "error", "errorMessage": "503"})
    assert not is_retryable_error({"role": "assistant", "stopReason": "error", "errorMessage": 503})


def test_settings_read_pis_shape_and_refuse_nonsense() -> None:
    assert RetrySettings.from_dict({}) == RetrySettings(True, 3, 2000)
    settings = RetrySettings.from_dict({"enabled": False, "maxRetries": 5, "baseDelayMs": 10})
    assert settings == RetrySettings(False, 5, 10) and settings.to_dict() == {
        "enabled": False,
        "maxRetries": 5,
        "baseDelayMs": 10,
    }
    assert [RetrySettings().delay_ms(k) for k in (1, 2, 3)] == [2000, 4000, 8000]
    for bad in ({"maxRetries": "3"}, {"enabled": "yes"}, {"baseDelayMs": -1}, {"maxRetries": 1.5}):
        with pytest.raises(SessionError):
            RetrySettings.from_dict(bad)


async def test_transient_failures_are_retried_with_doubling_waits_and_stay_in_the_file() -> None:
    model = ScriptedModel(
        [error_reply("503 Service Unavailable"), error_reply("429 rate limit"), reply("ok")]
    )
    h = harness(model, retry=RetrySettings(base_delay_ms=20))
    events = Recorder()
    h.subscribe(events)
    started = anyio.current_time()
    last = await h.prompt("hello")
    waited = anyio.current_time() - started
    assert texts(last) == "ok" and len(model.requests) == 3
    assert waited >= 0.06  # 20 ms, then 40 ms
    assert retry_events(events) == [
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 20,
         "errorMessage": "503 Service Unavailable"},
        {"type": "auto_retry_start", "attempt": 2, "maxAttempts": 3, "delayMs": 40, "errorMessage": "429 rate limit"},
        {"type": "auto_retry_end", "success": True, "attempt": 2},
    ]  # fmt: skip
    # every retried request is the first one again: the failed replies are not in it
    assert [[m["role"] for m in r.messages] for r in model.requests] == [["user"]] * 3
    # ... but the session keeps them, in order
    assert roles(h.session) == ["user", "assistant", "assistant", "assistant"]
    stored = [e["message"] for e in h.session.get_branch() if e["type"] == "message"]
    assert [m.get("errorMessage") for m in stored[1:]] == ["503 Service Unavailable", "429 rate limit", None]
    assert [e["willRetry"] for e in events.of("agent_end")] == [True, True, False]


async def test_the_counter_resets_after_a_good_reply() -> None:
    model = ScriptedModel([error_reply("overloaded"), reply("one"), error_reply("overloaded"), reply("two")])
    h = harness(model, retry=FAST)
    events = Recorder()
    h.subscribe(events)
    assert texts(await h.prompt("a")) == "one"
    assert texts(await h.prompt("b")) == "two"
    starts = [e["attempt"] for e in events.of("auto_retry_start")]
    assert starts == [1, 1] and [e["success"] for e in events.of("auto_retry_end")] == [True, True]


async def test_it_gives_up_after_max_retries_with_the_last_error() -> None:
    model = ScriptedModel([error_reply(f"502 Bad Gateway #{i}") for i in range(4)])
    h = harness(model, retry=RetrySettings(max_retries=2, base_delay_ms=1))
    events = Recorder()
    h.subscribe(events)
    last = await h.prompt("hello")
    assert last["errorMessage"] == "502 Bad Gateway #2" and len(model.requests) == 3
    assert retry_events(events)[-1] == {
        "type": "auto_retry_end",
        "success": False,
        "attempt": 2,
        "finalError": "502 Bad Gateway #2",
    }
    assert [e["willRetry"] for e in events.of("agent_end")] == [True, True, False]
    assert h.session.get_leaf_entry()["message"]["errorMessage"] == "502 Bad Gateway #2"  # type: ignore[index]


async def test_a_different_failure_ends_the_retries() -> None:
    model = ScriptedModel([error_reply("503 Service Unavailable"), error_reply("400 invalid tool schema")])
    h = harness(model, retry=FAST)
    events = Recorder()
    h.subscribe(events)
    last = await h.prompt("hello")
    assert last["errorMessage"] == "400 invalid tool schema" and len(model.requests) == 2
    assert retry_events(events)[-1] == {
        "type": "auto_retry_end",
        "success": False,
        "attempt": 1,
        "finalError": "400 invalid tool schema",
    }


@pytest.mark.parametrize("error", ["429 insufficient_quota", "401 invalid x-api-key"])
async def test_quota_and_other_errors_are_not_retried(error: str) -> None:
    model = ScriptedModel([error_reply(error)])
    h = harness(model, retry=FAST)
    events = Recorder()
    h.subscribe(events)
    assert (await h.prompt("hello"))["errorMessage"] == error
    assert len(model.requests) == 1 and retry_events(events) == []
    assert events.of("agent_end")[0]["willRetry"] is False


async def test_retry_can_be_turned_off() -> None:
    model = ScriptedModel([error_reply("503 Service Unavailable")])
    h = harness(model, retry=RetrySettings(enabled=False))
    assert (await h.prompt("hello"))["stopReason"] == "error" and len(model.requests) == 1


async def test_an_overflow_is_compacted_not_retried() -> None:
    model = ScriptedModel([overflow_reply(), reply("fits")])
    h = harness(model, retry=FAST)
    events = Recorder()
    h.subscribe(events)
    await h.prompt("hello " + "x" * 400)
    assert retry_events(events) == [] and "compaction_start" in events.types()


async def test_an_abort_ends_the_wait_at_once() -> None:
    model = ScriptedModel([error_reply("503 Service Unavailable"), reply("never sent")])
    h = harness(model, retry=RetrySettings(base_delay_ms=60_000))
    events = Recorder()
    h.subscribe(events)
    started = anyio.current_time()
    async with anyio.create_task_group() as tg:

        async def prompt() -> None:
            await h.prompt("hello")

        tg.start_soon(prompt)
        with anyio.fail_after(10):
            while not events.of("auto_retry_start"):
                await anyio.sleep(0.005)
        await h.abort()
    assert anyio.current_time() - started < 10
    assert len(model.requests) == 1
    assert retry_events(events)[-1] == {
        "type": "auto_retry_end",
        "success": False,
        "attempt": 1,
        "finalError": "Retry cancelled",
    }
    assert texts(await h.prompt("again")) == "never sent"  # the harness is ready for the next prompt


@pytest.mark.parametrize("api", APIS)
async def test_over_the_sdks_a_503_then_a_429_then_a_reply(api: Api, tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    with fake_server() as server:
        server.replies += [
            JsonReply(503, {"error": {"type": "overloaded_error", "message": "Service Unavailable"}}),
            JsonReply(429, {"error": {"type": "rate_limit_error", "message": "Rate limit exceeded"}}),
            reply_for(api, text=["Back again."]),
        ]
        h = AgentHarness(
            manager,
            model_for(api, server.url),
            api_key="test-key",
            stream_options=StreamOptions(max_retries=0),  # the SDK's own retries off: this layer's are tested
            retry=RetrySettings(base_delay_ms=5),
        )
        events = Recorder()
        h.subscribe(events)
        last = await h.prompt("Are you there?")
        assert texts(last) == "Back again."
        assert len(server.requests) == 3
        bodies = [r.body for r in server.requests]
        assert bodies[0] == bodies[1] == bodies[2]  # the same request each time: no failed reply in it
    assert [e["attempt"] for e in events.of("auto_retry_start")] == [1, 2]
    reopened = SessionManager.open(manager.get_session_file(), read_only=True)  # type: ignore[arg-type]
    stored = [e["message"] for e in reopened.get_branch() if e["type"] == "message"]
    assert [m["role"] for m in stored] == ["user", "assistant", "assistant", "assistant"]
    assert [m["stopReason"] for m in stored[1:]] == ["error", "error", "stop"]
