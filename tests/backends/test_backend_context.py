"""The context a back end reads at a leaf equals the free function's over the whole path, whatever the mix of
compactions (with and without ``retainedTail``, ``firstKeptEntryId`` on or off the path), settings changes
buried under them, branches and labels. SQL stores read only back to the latest compaction plus the settings
entries in force, so this is where a wrong pointer would show.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import build_session_context
from sessiontree.format.pi_json import UNDEFINED
from tests.backends.conftest import Backend

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.integers(0, 99)),
        st.tuples(st.just("assistant"), st.sampled_from(["anthropic", "openai"])),
        st.tuples(st.just("model"), st.sampled_from(["a", "b", "c"])),
        st.tuples(st.just("thinking"), st.sampled_from(["low", "high", "off"])),
        st.tuples(st.just("tools"), st.sampled_from([["read"], ["read", "bash"], []])),
        st.tuples(st.just("compact_pi"), st.integers(0, 10_000)),
        st.tuples(st.just("compact_tail"), st.integers(0, 10_000)),
        st.tuples(st.just("branch"), st.integers(0, 10_000)),
        st.tuples(st.just("label"), st.integers(0, 10_000)),
        st.tuples(st.just("custom_message"), st.integers(0, 9)),
        st.tuples(st.just("branch_summary"), st.integers(0, 10_000)),
    ),
    min_size=1,
    max_size=45,
)


def _play(manager: Any, steps: list[tuple[str, Any]]) -> None:
    for kind, arg in steps:
        entries = manager.get_entries()
        # the writer's own context as it goes: what a harness reads before each model call (SQL stores
        # join each walk to the previous one; a join in the wrong place shows here)
        assert manager.build_session_context() == build_session_context(entries, manager.get_leaf_id())
        ids = [e["id"] for e in entries]
        pick = ids[arg % len(ids)] if ids and isinstance(arg, int) else None
        if kind == "user":
            manager.append_message({"role": "user", "content": f"u{arg}", "timestamp": 1})
        elif kind == "assistant":
            manager.append_message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}],
                    "provider": arg,
                    "model": arg,
                    "timestamp": 2,
                }
            )
        elif kind == "model":
            manager.append_model_change("p", arg)
        elif kind == "thinking":
            manager.append_thinking_level_change(arg)
        elif kind == "tools":
            manager.append_active_tools_change(arg)
        elif kind in ("compact_pi", "compact_tail") and pick is not None:
            # firstKeptEntryId: any entry, on the path or not; pi's compactions carry no retainedTail
            tail = UNDEFINED if kind == "compact_pi" else None
            manager.append_compaction("summary", pick, 100, retained_tail=tail)
        elif kind == "branch" and pick is not None:
            manager.branch(pick)
        elif kind == "label" and pick is not None:
            manager.append_label_change(pick, "x")
        elif kind == "custom_message":
            manager.append_custom_message_entry("note", f"c{arg}", True)
        elif kind == "branch_summary" and pick is not None:
            manager.branch_with_summary(pick, "left behind")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_the_context_at_every_entry_equals_the_free_function(
    backend: Backend, steps: list[tuple[str, Any]]
) -> None:
    manager = backend.create()
    _play(manager, steps)
    entries = manager.get_entries()
    assert manager.build_session_context() == build_session_context(entries, manager.get_leaf_id())
    again = backend.reopen(manager)
    entries = again.get_entries()
    for entry in entries:
        expected = build_session_context(entries, entry["id"])
        assert again.build_session_context(entry["id"]) == expected, entry["id"]
    backend.cleanup()
