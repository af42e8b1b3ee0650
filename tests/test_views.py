"""views.py: flat pre-order rows of ``get_tree()`` and one-line entry previews (used by the CLI)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.storage import MemoryStore
from sessiontree.tree.views import entry_preview, message_text, tree_rows
from tests.builders import assistant, user_messages_file

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def row_summary(manager: SessionManager) -> list[tuple[str, int, int, list[str], bool]]:
    return [
        (str(r.entry["id"]), r.depth, r.indent, r.children, r.last_sibling)
        for r in tree_rows(manager.get_tree())
    ]


# -- tree_rows --------------------------------------------------------------------------------------------
def test_a_linear_conversation_stays_flat() -> None:
    m = SessionManager.in_memory("/p")
    a = m.append_message(user("a"))
    b = m.append_message(assistant("b"))
    c = m.append_message(user("c"))
    assert row_summary(m) == [(a, 0, 0, [b], True), (b, 1, 0, [c], True), (c, 2, 0, [], True)]


def test_indent_grows_at_branch_points_in_pre_order() -> None:
    m = SessionManager.in_memory("/p")
    root = m.append_message(user("root"))
    left = m.append_message(assistant("left"))
    left_child = m.append_message(user("left child"))
    m.branch(root)
    right = m.append_message(assistant("right"))
    assert row_summary(m) == [
        (root, 0, 0, [left, right], True),
        (left, 1, 1, [left_child], False),
        (left_child, 2, 1, [], True),
        (right, 1, 1, [], True),
    ]


def test_several_roots_are_indented_once() -> None:
    m = SessionManager.in_memory("/p")
    first = m.append_message(user("first"))
    m.reset_leaf()
    second = m.append_message(user("second"))
    after = m.append_message(assistant("after"))
    assert row_summary(m) == [
        (first, 0, 1, [], False),
        (second, 0, 1, [after], True),
        (after, 1, 1, [], True),
    ]


def test_rows_carry_labels_and_serialize_like_tree_json() -> None:
    m = SessionManager.in_memory("/p", clock=lambda: 1_735_689_600_000)
    a = m.append_message(user("a"))
    label = m.append_label_change(a, "start")
    rows = tree_rows(m.get_tree())
    assert (rows[0].label, rows[0].label_timestamp) == ("start", "2025-01-01T00:00:00.000Z")
    assert rows[1].label is None
    assert rows[0].to_dict() == {
        "id": a,
        "type": "message",
        "parentId": None,
        "depth": 0,
        "label": "start",
        "labelTimestamp": "2025-01-01T00:00:00.000Z",
        "children": [label],
    }


def test_an_empty_tree_has_no_rows() -> None:
    assert tree_rows([]) == []


def test_very_deep_trees_need_no_recursion() -> None:
    n = 20_000
    entries = [
        {"type": "message", "id": f"n{i}", "parentId": f"n{i - 1}" if i else None, "timestamp": "t"}
        for i in range(n)
    ]
    m = SessionManager(MemoryStore(HEADER, entries), cwd="/", session_dir=None, persist=False)
    rows = tree_rows(m.get_tree())
    assert len(rows) == n
    assert rows[-1].depth == n - 1 and rows[-1].indent == 0
    assert [r.entry["id"] for r in rows[:3]] == ["n0", "n1", "n2"]


# -- entry_preview ----------------------------------------------------------------------------------------
def _entry(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": "e", "parentId": None, "timestamp": "t", **fields}


@pytest.mark.parametrize(
    ("entry", "preview"),
    [
        (_entry("message", message=user("hello\n  world")), "user: hello world"),
        (_entry("message", message=assistant("done")), "assistant: done"),
        (
            _entry(
                "message",
                message={
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "toolCall", "name": "read", "arguments": {"path": "a.py", "limit": 5}},
                        {"type": "image", "data": "…"},
                    ],
                },
            ),
            "assistant: (thinking) hmm read(path='a.py', limit=5) [image]",
        ),
        (
            _entry(
                "message",
                message={
                    "role": "assistant",
                    "content": [],
                    "stopReason": "error",
                    "errorMessage": "overloaded",
                },
            ),
            "assistant: [error] overloaded",
        ),
        (
            _entry(
                "message",
                message={
                    "role": "assistant",
                    "content": [{"type": "text", "text": "part"}],
                    "stopReason": "aborted",
                },
            ),
            "assistant: [aborted] part",
        ),
        (
            _entry(
                "message",
                message={
                    "role": "toolResult",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": "ok"}],
                },
            ),
            "toolResult: bash: ok",
        ),
        (
            _entry("message", message={"role": "bashExecution", "command": "ls -la"}),
            "bashExecution: $ ls -la",
        ),
        (_entry("model_change", provider="openai", modelId="gpt-4.1"), "model → openai/gpt-4.1"),
        (_entry("thinking_level_change", thinkingLevel="high"), "thinking → high"),
        (_entry("active_tools_change", activeToolNames=["read", "bash"]), "tools → read, bash"),
        (
            _entry("compaction", summary="## Goal\nthings", tokensBefore=5000),
            "compaction (5000 tokens before): ## Goal things",
        ),
        (_entry("branch_summary", summary="tried X", fromId="x"), "branch summary: tried X"),
        (_entry("label", targetId="abc", label="start"), "label abc = start"),
        (_entry("label", targetId="abc"), "label abc = (cleared)"),
        (_entry("session_info", name="My session"), "name = My session"),
        (
            _entry("custom_message", customType="ext", content="injected", display=True),
            "custom[ext]: injected",
        ),
        (_entry("custom", customType="state", data={"n": 1}), "custom[state]"),
        (_entry("leaf", targetId=None), "leaf → None"),
        (_entry("future_kind", payload=1), "future_kind"),
    ],
)
def test_entry_preview(entry: dict[str, Any], preview: str) -> None:
    assert entry_preview(entry) == preview


def test_entry_preview_cuts_to_the_width() -> None:
    preview = entry_preview(_entry("message", message=user("x" * 200)), width=10)
    assert preview == "user: " + "x" * 9 + "…"
    assert entry_preview(_entry("message", message=user("exactly10!")), width=10) == "user: exactly10!"


@pytest.mark.parametrize(
    "entry",
    [
        _entry("message", message="not an object"),
        _entry("message", message=None),
        _entry("message"),
        _entry("message", message={"role": "user", "content": None}),
        _entry("message", message={"role": "user", "content": [None, 3, {"type": "text"}]}),
        _entry("compaction"),
        {},
    ],
)
def test_entry_preview_never_fails_on_odd_entries(entry: dict[str, Any]) -> None:
    assert isinstance(entry_preview(entry), str)


def test_message_text() -> None:
    assert message_text("plain") == "plain"
    assert (
        message_text(
            [{"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}]
        )
        == "a b"
    )
    assert message_text(None) == ""
    assert message_text(42) == ""


ODD_VALUES: list[Any] = [
    5,
    1.5,
    None,
    True,
    "",
    "x" * 10_000,
    [],
    [1, None, {}],
    {},
    {"a": [1]},
    "\x1b[2J\ud800",
]
FIELDS = ("message", "role", "content", "provider", "modelId", "thinkingLevel", "activeToolNames", "summary",
          "tokensBefore", "targetId", "label", "name", "customType", "id", "type", "toolName", "command")  # fmt: skip
KINDS = ("message", "model_change", "thinking_level_change", "active_tools_change", "compaction",
         "branch_summary", "label", "session_info", "custom_message", "custom", "leaf", 7, None)  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("field", FIELDS)
def test_previews_accept_any_json_value_in_any_field(kind: Any, field: str) -> None:
    for value in ODD_VALUES:
        entry: dict[str, Any] = {"type": kind, "id": "e", "message": {"role": "user", "content": "hi"}}
        if field in ("role", "content", "toolName", "command"):
            entry["message"] = {"role": "toolResult" if field == "toolName" else "user", field: value}
        else:
            entry[field] = value
        preview = entry_preview(entry, 40)
        assert isinstance(preview, str) and "\x1b" not in preview and "\ud800" not in preview


def test_active_tools_change_with_a_number() -> None:
    assert entry_preview(_entry("active_tools_change", activeToolNames=5)) == "tools → 5"


def test_rows_of_a_tree_that_lists_a_node_twice_are_linear() -> None:
    class Node:
        def __init__(self, name: str) -> None:
            self.entry = {"id": name}
            self.children: list[Node] = []
            self.label = None
            self.label_timestamp = None

    # a chain where every level lists its child twice: 2^40 paths, 41 nodes
    nodes = [Node(f"n{i}") for i in range(41)]
    for parent, child in itertools.pairwise(nodes):
        parent.children = [child, child]
    rows = tree_rows([nodes[0]])
    assert [r.entry["id"] for r in rows] == [f"n{i}" for i in range(41)]


def test_previews_of_decoded_records_equal_previews_of_dicts(tmp_path: Any) -> None:
    import sys
    from pathlib import Path

    from sessiontree.tree.views import decode_for_preview

    repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(repo))
    try:
        from bench.generate import generate_session
    finally:
        sys.path.remove(str(repo))
    path = tmp_path / "s.jsonl"
    generate_session(path, 3_000, seed=9)
    manager = SessionManager.open(path, read_only=True)
    store = manager.store
    for i in range(len(store)):
        fast = decode_for_preview(store.raw_at(i))
        for width in (20, 90):
            assert entry_preview(fast, width) == entry_preview(store.entry_at(i), width), store.id_at(i)


_MESSAGE_SHAPES: list[dict[str, Any]] = [
    {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "stopReason": "refusal"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "stopReason": "error",
        "errorMessage": 5,
    },
    {
        "role": "assistant",
        "content": [{"type": "redacted_thinking", "data": "…"}, {"type": "text", "text": "y"}],
    },
    {
        "role": "assistant",
        "content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "ls  -l"}}],
    },
    {"role": "assistant", "content": [{"type": "toolCall", "name": 3, "arguments": [1, 2]}]},
    {"role": "developer", "content": "a role pi does not have"},
    {"role": "toolResult", "toolName": None, "content": [{"type": "image", "data": "", "mimeType": "x"}]},
    {"role": "branchSummary", "summary": {"not": "a string"}},
    {"role": "user", "content": [{"type": "text", "text": "漢字" * 80 + "\u0301\x1b[2J"}]},
]


@pytest.mark.parametrize(
    "message", _MESSAGE_SHAPES + [{"role": value, "content": value} for value in ODD_VALUES]
)
def test_decoded_records_of_odd_messages_preview_like_their_dicts(message: dict[str, Any]) -> None:
    from sessiontree.format.pi_json import dumps
    from sessiontree.tree.views import decode_for_preview

    entry = {"type": "message", "id": "e1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z"}
    entry["message"] = message
    record = decode_for_preview(memoryview(dumps(entry).encode()))
    for width in (1, 12, 40, 90):
        assert entry_preview(record, width) == entry_preview(entry, width)
        assert entry_preview(record, line_width=width) == entry_preview(entry, line_width=width)


def _prefix_reference(guides: tuple[bool, ...], branch_start: bool, max_levels: int) -> str:
    parts = [("└─ " if g else "├─ ") if i == len(guides) - 1 and branch_start else ("   " if g else "│  ")
             for i, g in enumerate(guides)]  # fmt: skip
    hidden = len(parts) - max(1, max_levels)
    return f"+{hidden} " + "".join(parts[hidden:]) if hidden > 0 else "".join(parts)


def test_connector_prefix_draws_only_the_levels_it_shows() -> None:
    from sessiontree.tree.views import connector_prefix

    for guides in itertools.chain.from_iterable(itertools.product((False, True), repeat=n) for n in range(7)):
        for branch_start in (False, True):
            for max_levels in (0, 1, 2, 3, 8):
                expected = _prefix_reference(guides, branch_start, max_levels)
                assert connector_prefix(guides, branch_start, max_levels) == expected
    assert connector_prefix((True,) * 100_000, True, 4) == "+99996 " + "   " * 3 + "└─ "


def test_run_positions_many_is_one_by_one_in_any_order() -> None:
    """A path given as runs maps path indexes to store positions the same way in bulk (in C per run when the
    indexes ascend) as one by one, whatever the order, with repeats, and refuses an index off the path."""
    import random

    from sessiontree.tree.session_index import _RunPositions

    runs = [(0, 5), (9, 10), (20, 31), (40, 41), (50, 70)]
    positions = _RunPositions(runs)
    flat = [p for start, stop in runs for p in range(start, stop)]
    n = len(flat)
    rng = random.Random(3)
    cases = [
        list(range(n)),
        [0],
        [n - 1],
        [4, 5, 6, 16, 17],  # across run boundaries
        [0, 0, 3, 3, n - 1, n - 1],
        *(sorted(rng.sample(range(n), k)) for k in (2, 9, 30)),
        list(reversed(range(n))),
        rng.sample(range(n), 20),
    ]
    for indexes in cases:
        assert positions.many(indexes) == [flat[k] for k in indexes]
        assert positions.many(indexes) == [positions[k] for k in indexes]
    assert positions.many([]) == []
    for bad in ([n], [-1], [0, n], [0, 3, n, n + 5], [n + 1, 0]):
        with pytest.raises(IndexError) as raised:
            positions.many(bad)
        assert raised.value.args == (next(k for k in bad if not 0 <= k < n),)
    assert _RunPositions([]).many([]) == []
    with pytest.raises(IndexError):
        _RunPositions([]).many([0, 1])


def test_the_same_indexes_asked_again_are_answered_again_and_a_changed_list_is_looked_up() -> None:
    """A context preloads its entries and then reads them with the same indexes: the second ``many`` is the
    first's answer (a copy: changing it changes nothing), and a list changed in place since is answered anew."""
    from sessiontree.tree.session_index import _RunPositions

    positions = _RunPositions([(0, 5), (9, 12), (20, 30)])
    indexes = [0, 4, 5, 7, 8, 17]
    first = positions.many(indexes)
    assert first == [0, 4, 9, 11, 20, 29]
    first.append(99)
    assert positions.many(indexes) == [0, 4, 9, 11, 20, 29]
    indexes[1] = 3  # the same list object, other content
    assert positions.many(indexes) == [0, 3, 9, 11, 20, 29]
    assert positions.many(tuple(indexes)) == [0, 3, 9, 11, 20, 29]
    with pytest.raises(IndexError):
        positions.many([0, 30])
    assert positions.many([0, 3, 5, 7, 8, 17]) == [0, 3, 9, 11, 20, 29]


def test_entries_read_at_once_are_the_entries_read_one_by_one(tmp_path: Any) -> None:
    """``entries_at`` takes the decoded entries from the cache and decodes the others: the same objects as
    ``entry_at``, in order, repeats and negative positions included."""
    store = SessionManager.open(user_messages_file(tmp_path, 40), read_only=True).store
    decoded = [store.entry_at(i) for i in (3, 10, 11, 39)]  # some decoded before, the others not
    positions = [0, 3, 10, 11, 12, 25, 3, 39, -1, -40]
    got = store.entries_at(positions)
    assert [e["id"] for e in got] == [store.id_at(p) for p in positions]
    assert all(a is b for a, b in zip(got, [store.entry_at(p) for p in positions], strict=True))
    assert got[1] is decoded[0] and got[7] is decoded[3]
    assert store.entries_at([]) == []
