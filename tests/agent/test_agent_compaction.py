"""Compaction in the harness: automatic (overflow → compact → one retry; threshold, no retry; the stale-usage
guards), manual ``compact(focus)``, and the hook. Ports of pi's agent-session-compaction and
agent-session-auto-compaction-queue tests, on the scripted model and the offline summarizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.agent import HarnessError, RetrySettings, ScriptedModel, overflow_reply, reply
from sessiontree.agent.compaction_policy import OVERFLOW_RECOVERY_FAILED, CompactionCheck, check_compaction
from sessiontree.agent.scripted import error_reply
from sessiontree.compaction import CompactionSettings
from sessiontree.format.ids import epoch_ms
from tests.agent.support import Recorder, harness, session_kinds, texts

pytestmark = pytest.mark.anyio

SMALL = CompactionSettings(keep_recent_tokens=1)


def seeded(manager: SessionManager, turns: int = 4, model: ScriptedModel | None = None) -> SessionManager:
    """A session with ``turns`` earlier exchanges from ``model`` (so there is history to compact)."""
    ident = model or ScriptedModel()
    for i in range(turns):
        manager.append_message(
            {
                "role": "user",
                "content": [{"type": "text", "text": f"old question {i} " + "q" * 200}],
                "timestamp": 1000 + i,
            }
        )
        manager.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": f"old answer {i} " + "a" * 200}],
             "api": ident.api, "provider": ident.provider, "model": ident.id,
             "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20},
             "stopReason": "stop", "timestamp": 1000 + i}
        )  # fmt: skip
    return manager


def compaction_events(events: Recorder) -> list[dict[str, Any]]:
    return [e for e in events.events if e["type"] in ("compaction_start", "compaction_end")]


async def test_overflow_compacts_and_retries_once() -> None:
    model = ScriptedModel([overflow_reply(), reply("fits now")])
    manager = seeded(SessionManager.in_memory("/w"), model=model)
    h = harness(model, manager, compaction=SMALL)
    events = Recorder()
    h.subscribe(events)
    last = await h.prompt("new question")
    assert texts(last) == "fits now"
    steps = compaction_events(events)
    assert [(e["type"], e["reason"]) for e in steps] == [
        ("compaction_start", "overflow"),
        ("compaction_end", "overflow"),
    ]
    assert (
        steps[1]["willRetry"] is True
        and steps[1]["aborted"] is False
        and steps[1]["result"]["type"] == "compaction"
    )
    assert len(model.requests) == 2
    retry = model.requests[1].messages
    assert retry[0]["role"] == "user" and texts(retry[0]).startswith(
        "The conversation history before this point"
    )
    assert not any(
        m["role"] == "assistant" and m.get("stopReason") == "error" for m in retry
    )  # dropped in memory
    stored = [e["message"] for e in manager.get_entries() if e["type"] == "message"]
    assert any(m.get("stopReason") == "error" for m in stored)  # ... but kept in the file


async def test_a_second_overflow_gives_up_with_a_clear_error_and_no_further_retry() -> None:
    model = ScriptedModel([overflow_reply(), overflow_reply(), reply("never sent")])
    h = harness(model, seeded(SessionManager.in_memory("/w"), model=model), compaction=SMALL)
    events = Recorder()
    h.subscribe(events)
    last = await h.prompt("new question")
    assert last["stopReason"] == "error" and last["errorMessage"]
    steps = compaction_events(events)
    assert steps[-1] == {"type": "compaction_end", "reason": "overflow", "result": None, "aborted": False,
                         "willRetry": False, "errorMessage": OVERFLOW_RECOVERY_FAILED}  # fmt: skip
    assert [e["type"] for e in steps].count("compaction_start") == 1
    assert len(model.requests) == 2 and model.pending == 1


async def test_an_overflow_with_nothing_to_compact_ends_the_same_way() -> None:
    model = ScriptedModel([overflow_reply()])
    h = harness(model)
    events = Recorder()
    h.subscribe(events)
    last = await h.prompt("hello")
    assert last["stopReason"] == "error" and last["errorMessage"].startswith("prompt is too long")
    end = events.of("compaction_end")[-1]
    assert (
        end["willRetry"] is False
        and end["reason"] == "overflow"
        and "Nothing to compact" in end["errorMessage"]
    )
    assert len(model.requests) == 1


async def test_threshold_compaction_does_not_retry(tmp_path: Path) -> None:
    with session_kinds("file", tmp_path) as manager:
        model = ScriptedModel([reply("big answer", usage=(9_500, 100, 0, 0))], context_window=10_000)
        h = harness(
            model,
            seeded(manager, model=model),
            compaction=CompactionSettings(reserve_tokens=1_000, keep_recent_tokens=1),
        )
        events = Recorder()
        h.subscribe(events)
        last = await h.prompt("question")
        assert texts(last) == "big answer" and len(model.requests) == 1
        steps = compaction_events(events)
        assert [(e["type"], e["reason"]) for e in steps] == [
            ("compaction_start", "threshold"),
            ("compaction_end", "threshold"),
        ]
        assert steps[1]["willRetry"] is False
        assert manager.get_leaf_entry()["type"] == "compaction"
        # the next prompt goes out on the compacted context
        model.add(reply("next"))
        await h.prompt("after")
        assert texts(model.requests[1].messages[0]).startswith("The conversation history before this point")


async def test_threshold_compaction_resumes_for_messages_queued_meanwhile() -> None:
    model = ScriptedModel(
        [reply("big", usage=(9_500, 1, 0, 0)), reply("follow-up answer")], context_window=10_000
    )
    h = harness(
        model,
        seeded(SessionManager.in_memory("/w"), model=model),
        compaction=CompactionSettings(reserve_tokens=1_000, keep_recent_tokens=1),
    )
    h.subscribe(lambda e: h.follow_up("one more thing") if e["type"] == "compaction_start" else None)
    last = await h.prompt("question")
    assert texts(last) == "follow-up answer"
    assert model.requests[1].texts()[-1] == "one more thing"


async def test_disabled_compaction_never_compacts() -> None:
    model = ScriptedModel([overflow_reply()])
    h = harness(
        model,
        seeded(SessionManager.in_memory("/w"), model=model),
        compaction=CompactionSettings(enabled=False),
    )
    events = Recorder()
    h.subscribe(events)
    await h.prompt("x")
    assert compaction_events(events) == []


# -- pi's agent-session-auto-compaction-queue checks, on the decision function ----------------------------
def assistant(**fields: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": [{"type": "text", "text": "x"}], "api": "scripted", "provider": "scripted",
               "model": "scripted-model", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
               "stopReason": "stop", "timestamp": 10_000}  # fmt: skip
    message.update(fields)
    return message


def usage(total: int) -> dict[str, Any]:
    return {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total}


WINDOW = ScriptedModel(context_window=200_000)


def check(
    message: dict[str, Any], context: list[dict[str, Any]], attempted: bool = False, **kw: Any
) -> CompactionCheck | None:
    return check_compaction(
        message,
        model=WINDOW,
        settings=CompactionSettings(),
        context_messages=context,
        overflow_attempted=attempted,
        **kw,
    )


def test_does_not_compact_repeatedly_after_overflow_recovery_was_attempted() -> None:
    overflow = assistant(stopReason="error", errorMessage="prompt is too long")
    assert check(overflow, [overflow]) == CompactionCheck("compact", "overflow", will_retry=True)
    assert check(overflow, [overflow], attempted=True) == CompactionCheck("give_up", "overflow")


def test_ignores_stale_pre_compaction_usage_on_pre_prompt_checks() -> None:
    summary = {"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 20_000}
    stale = assistant(usage=usage(610_000), timestamp=10_000)
    assert check(stale, [summary, stale], skip_aborted=False) is None
    assert check(assistant(usage=usage(610_000), timestamp=30_000), [summary], skip_aborted=False) is not None


def test_error_replies_use_the_last_successful_usage_for_the_threshold() -> None:
    ok = assistant(usage=usage(190_000))
    failed = assistant(stopReason="error", errorMessage="529 overloaded", timestamp=11_000)
    assert check(failed, [ok, failed]) == CompactionCheck("compact", "threshold")


def test_error_replies_without_prior_usage_do_not_compact() -> None:
    failed = assistant(stopReason="error", errorMessage="529 overloaded")
    assert check(failed, [{"role": "user", "content": "hi", "timestamp": 1}, failed]) is None


def test_error_replies_with_only_kept_pre_compaction_usage_do_not_compact() -> None:
    summary = {"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 20_000}
    kept = assistant(usage=usage(190_000), timestamp=10_000)
    failed = assistant(stopReason="error", errorMessage="529 overloaded", timestamp=30_000)
    assert check(failed, [summary, kept, failed]) is None


def test_aborted_replies_are_skipped_after_a_run_but_not_before_a_prompt() -> None:
    aborted = assistant(stopReason="aborted", usage=usage(199_000))
    assert check(aborted, [aborted]) is None
    assert check(aborted, [aborted], skip_aborted=False) == CompactionCheck("compact", "threshold")


def test_a_successful_reply_over_the_window_compacts_without_retry() -> None:
    silent = assistant(
        usage={"input": 250_000, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 250_010}
    )
    assert check(silent, [silent]) == CompactionCheck("compact", "overflow", will_retry=False)


def test_replies_from_another_model_are_not_overflows_of_this_one() -> None:
    other = assistant(stopReason="error", errorMessage="prompt is too long", model="other")
    assert check(other, [other]) is None


# -- manual compaction (pi's agent-session-compaction tests, keepRecentTokens 1) ---------------------------
@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_manual_compaction(kind: str, tmp_path: Path) -> None:
    with session_kinds(kind, tmp_path) as manager:
        model = ScriptedModel([reply("first answer"), reply("second answer"), reply("after compaction")])
        h = harness(model, manager, compaction=SMALL)
        await h.prompt("What is 2+2?")
        await h.prompt("And 3+3?")
        events = Recorder()
        h.subscribe(events)
        entry = await h.compact()
        assert entry["summary"] and entry["tokensBefore"] > 0 and isinstance(entry["firstKeptEntryId"], str)
        assert [(e["type"], e["reason"]) for e in compaction_events(events)] == [
            ("compaction_start", "manual"), ("compaction_end", "manual")]  # fmt: skip
        end = events.of("compaction_end")[0]
        assert end["aborted"] is False and end["willRetry"] is False and end["result"] == entry
        assert h.session.build_session_context().messages[0]["role"] == "compactionSummary"
        assert [e["type"] for e in manager.get_entries()].count("compaction") == 1
        last = await h.prompt("Still there?")
        assert texts(last) == "after compaction"
        assert model.requests[-1].messages[0]["role"] == "user"
        if kind == "file":
            reopened = SessionManager.open(manager.get_session_file(), read_only=True)
            stored = [e for e in reopened.get_entries() if e["type"] == "compaction"]
            assert len(stored) == 1 and stored[0]["tokensBefore"] > 0


async def test_manual_compaction_with_nothing_to_compact_raises_and_reports() -> None:
    h = harness(ScriptedModel())
    events = Recorder()
    h.subscribe(events)
    with pytest.raises(HarnessError) as error:
        await h.compact()
    assert error.value.kind == "compaction" and "Nothing to compact" in str(error.value)
    assert events.of("compaction_end")[0]["errorMessage"].startswith("Compaction failed: ")
    assert h.phase == "idle"


async def test_the_compaction_hook_can_cancel_or_provide_the_summary() -> None:
    model = ScriptedModel([reply("a"), reply("b")])
    h = harness(model, compaction=SMALL)
    await h.prompt("one")
    await h.prompt("two")
    remove = h.on("session_before_compact", lambda event: {"cancel": True})
    with pytest.raises(HarnessError, match="Compaction cancelled"):
        await h.compact()
    remove()
    seen: list[Any] = []

    def provide(event: dict[str, Any]) -> dict[str, Any]:
        seen.append((event["customInstructions"], len(event["branchEntries"])))
        prep = event["preparation"]
        return {
            "compaction": {
                "summary": "from the hook",
                "firstKeptEntryId": prep.first_kept_entry_id,
                "tokensBefore": 7,
            }
        }

    h.on("session_before_compact", provide)
    compacted: list[dict[str, Any]] = []
    h.subscribe(lambda e: compacted.append(e) if e["type"] == "session_compact" else None)
    entry = await h.compact("focus on tests")
    assert entry["summary"] == "from the hook" and entry["fromHook"] is True and entry["tokensBefore"] == 7
    assert seen == [("focus on tests", 5)]  # model_change, then two exchanges
    assert compacted[0]["fromHook"] is True


async def test_the_focus_reaches_the_summarizer() -> None:
    # keepRecentTokens 1 splits the last turn: a history summary and a turn-prefix summary
    summarizer = ScriptedModel([reply("## Goal\nsummarized with focus")] * 2, id="summarizer")
    model = ScriptedModel([reply("a"), reply("b")])
    h = harness(model, compaction=SMALL, summarizer=summarizer)
    await h.prompt("one")
    await h.prompt("two")
    entry = await h.compact("mind the tests")
    assert "summarized with focus" in entry["summary"]
    assert any("Additional focus: mind the tests" in r.texts()[0] for r in summarizer.requests)


async def test_errors_in_the_retry_reply_are_not_overflows_forever() -> None:
    model = ScriptedModel([overflow_reply(), error_reply("529 overloaded")])
    manager = seeded(SessionManager.in_memory("/w"), model=model)
    h = harness(model, manager, compaction=SMALL, retry=RetrySettings(enabled=False))
    last = await h.prompt("q")
    assert last["errorMessage"] == "529 overloaded" and len(model.requests) == 2


def test_compaction_timestamps_are_what_the_guard_compares() -> None:
    manager = seeded(SessionManager.in_memory("/w"))
    manager.append_compaction("s", manager.get_entries()[-2]["id"], 10)
    first = manager.build_session_context().messages[0]
    assert first["role"] == "compactionSummary" and first["timestamp"] == epoch_ms(
        manager.get_leaf_entry()["timestamp"]
    )
