"""The ``/tree`` navigator's rows as pi's tree selector lays them out: the active branch first, connectors
and the active-path marker, tool-only assistant steps hidden, the five filters, search, folding and jumps
between branch points; plus the /resume picker's threading by ``parentSession``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sessiontree import SessionManager
from sessiontree.cli.tui.picker_rows import fork_items, session_items
from sessiontree.cli.tui.tree_rows import TreeRows
from sessiontree.format.messages import assistant_message, tool_result_message, user_message
from sessiontree.storage.session_dirs import SessionInfo


def build() -> tuple[SessionManager, dict[str, str]]:
    """u1 a1(tool call) t1 a2 ─┬─ u2 a3          (the other branch)
    └─ u3 a4 [label]  (the active branch, appended last)"""
    m = SessionManager.in_memory("/tmp")
    ids: dict[str, str] = {}

    def add(name: str, message: dict[str, Any]) -> None:
        ids[name] = m.append_message(message)

    def reply(content: list[Any], stop: str = "stop") -> dict[str, Any]:
        return assistant_message(
            content, api="openai-completions", provider="p", model="m", stop_reason=stop, timestamp=2
        )  # type: ignore[arg-type]

    add("u1", user_message([{"type": "text", "text": "find the bug"}], 1))
    add(
        "a1",
        reply(
            [
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "grep",
                    "arguments": {"pattern": "bug", "path": "src"},
                }
            ],
            "toolUse",
        ),
    )
    add(
        "t1",
        tool_result_message(
            "c1", "grep", [{"type": "text", "text": "src/a.py:3"}], is_error=False, timestamp=3
        ),
    )
    add("a2", reply([{"type": "text", "text": "It is in a.py"}]))
    add("u2", user_message([{"type": "text", "text": "try approach A"}], 4))
    add("a3", reply([{"type": "text", "text": "approach A failed"}]))
    m.branch(ids["a2"])
    add("u3", user_message([{"type": "text", "text": "try approach B"}], 5))
    add("a4", reply([{"type": "text", "text": "approach B works"}]))
    m.append_label_change(ids["a4"], "good")
    m.append_model_change("p", "other")
    return m, ids


def shown(rows: TreeRows) -> list[str]:
    return [
        ("› " if r.selected else "  ")
        + r.prefix
        + r.fold_marker
        + ("• " if r.on_path else "")
        + (f"[{r.label}] " if r.label else "")
        + r.text
        for r in rows.rows()
    ]


def test_the_default_view_is_pis_layout_with_the_active_branch_first() -> None:
    m, ids = build()
    rows = TreeRows(m.get_tree(), m.get_leaf_id())
    assert shown(rows) == [
        "  • user: find the bug",
        "  • [grep: /bug/ in src]",
        "  • assistant: It is in a.py",
        "  ├⊟ • user: try approach B",
        "› │     • [good] assistant: approach B works",
        "  └⊟ user: try approach A",
        "        assistant: approach A failed",
    ]
    assert rows.status() == "(5/7)"  # the leaf (a model change) is hidden by default: its nearest entry
    assert rows.selected_id == ids["a4"]


def test_filters_search_and_labels() -> None:
    m, ids = build()
    rows = TreeRows(m.get_tree(), m.get_leaf_id())
    rows.toggle_filter("user-only")
    assert [r.text for r in rows.rows()] == [
        "user: find the bug",
        "user: try approach B",
        "user: try approach A",
    ]
    assert rows.status().endswith("[user]")
    rows.toggle_filter("user-only")
    assert rows.filter_mode == "default"
    rows.set_filter("no-tools")
    assert not any(r.kind == "tool" for r in rows.rows())
    rows.set_filter("labeled-only")
    assert [r.entry_id for r in rows.rows()] == [ids["a4"]]
    rows.set_filter("all")
    texts = [r.text for r in rows.rows()]
    assert "[model: other]" in texts and any(t.startswith("[label: good]") for t in texts)
    rows.cycle_filter(1)
    assert rows.filter_mode == "default"
    rows.type_text("approach")
    assert [r.text for r in rows.rows()] == [
        "user: try approach B",
        "assistant: approach B works",
        "user: try approach A",
        "assistant: approach A failed",
    ]
    rows.type_text(" failed")
    assert [r.entry_id for r in rows.rows()] == [ids["a3"]]
    assert rows.clear_search() and not rows.clear_search()
    rows.type_text("idea")  # no entry says it yet (and what search matches is remembered per entry)
    assert rows.rows() == []
    rows.clear_search()
    rows.set_label(ids["u2"], "idea")
    rows.type_text("idea")  # the new label is searched, not the remembered text
    assert [r.entry_id for r in rows.rows()] == [ids["u2"]]
    rows.clear_search()
    rows.set_filter("labeled-only")
    assert {r.entry_id for r in rows.rows()} == {ids["a4"], ids["u2"]}


def test_folding_and_jumping_between_branch_points() -> None:
    m, ids = build()
    rows = TreeRows(m.get_tree(), m.get_leaf_id())
    rows.fold_or_up()  # a4 is not foldable: jump up to the start of its branch segment
    assert rows.selected_id == ids["u3"]
    rows.fold_or_up()  # u3 starts a segment and has children: fold it
    assert ids["u3"] in rows.folded and ids["a4"] not in [r.entry_id for r in rows.rows()]
    assert any(r.prefix.endswith("├⊞ ") for r in rows.rows())
    rows.unfold_or_down()
    assert ids["a4"] in [r.entry_id for r in rows.rows()]
    rows.selected = 0
    rows.unfold_or_down()  # from the root down to the first branch point's first child
    assert rows.selected_id == ids["u3"]
    rows.move(-1)
    assert rows.selected_id == ids["a2"]
    rows.move(-10)
    rows.page(1)
    assert rows.selected == rows.count - 1


def test_sessions_thread_by_parent_session_and_search_flattens() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)

    def info(name: str, minutes: int, parent: str | None, text: str) -> SessionInfo:
        when = now - timedelta(minutes=minutes)
        return SessionInfo(f"/s/{name}.jsonl", name, "/w", None, parent, when, when, 2, text, text)

    parent = info("a", 50, None, "first question")
    child = info("b", 10, "/s/a.jsonl", "first question")
    grandchild = info("c", 5, "/s/b.jsonl", "first question")
    other = info("d", 1, None, "unrelated work")
    items = session_items([parent, child, grandchild, other], current="/s/b.jsonl", now=now)
    assert [(i.prefix, i.key, i.style) for i in items] == [
        ("", "/s/d.jsonl", ""),
        ("", "/s/a.jsonl", ""),
        ("└─ ", "/s/b.jsonl", "current"),
        ("   └─ ", "/s/c.jsonl", ""),
    ]
    assert items[1].right == "2 50m"
    assert [i.key for i in session_items([parent, other, child], "unrelated", now=now)] == ["/s/d.jsonl"]


def test_fork_items_are_the_user_messages_newest_first() -> None:
    m, ids = build()
    assert [i.key for i in fork_items(m.get_entries())] == [ids["u3"], ids["u2"], ids["u1"]]
    assert [i.key for i in fork_items(m.get_entries(), "BUG")] == [ids["u1"]]
