"""The textual pickers driven with textual's pilot: the ``/tree`` navigator (moving, filters, search,
folding, labels, the summary choice with a focus, cancel) and the ``/resume`` / ``/fork`` picker (search,
scope, pick, cancel)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sessiontree.cli.tui.picker_app import Picker
from sessiontree.cli.tui.picker_rows import session_items
from sessiontree.cli.tui.tree_app import TreeChoice, TreeNavigator
from sessiontree.storage.session_dirs import SessionInfo
from tests.chat.test_chat_tree_rows import build

pytestmark = pytest.mark.anyio


def status(app: TreeNavigator) -> str:
    return str(app.query_one("#status").render())


async def test_choosing_an_earlier_user_message_with_a_focused_summary() -> None:
    m, ids = build()
    asked: list[str] = []
    app = TreeNavigator(m.get_tree(), m.get_leaf_id(), asks_summary=lambda t: asked.append(t) or True)
    async with app.run_test(size=(110, 30)) as pilot:
        assert app.rows.selected_id == ids["a4"] and status(app) == "(5/7)"
        await pilot.press("ctrl+u")
        assert status(app).endswith("[user]") and app.rows.selected_id == ids["u3"]
        await pilot.press("down")
        assert app.rows.selected_id == ids["u2"]
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ChoiceScreen" and asked == [ids["u2"]]
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "TextScreen"
        await pilot.press(*"keep the error", "enter")
        await pilot.pause()
    assert app.return_value == TreeChoice(ids["u2"], summarize=True, focus="keep the error")


async def test_search_fold_label_and_cancel() -> None:
    m, ids = build()
    labels: list[tuple[str, str | None]] = []
    app = TreeNavigator(m.get_tree(), m.get_leaf_id(), on_label=lambda t, text: labels.append((t, text)))
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.press(*"failed")
        assert app.rows.search == "failed" and app.rows.selected_id == ids["a3"]
        assert "Type to search: failed" in str(app.query_one("#search").render())
        await pilot.press("escape")  # the first Escape clears the search
        assert app.rows.search == "" and app.rows.selected_id == ids["a3"]
        await pilot.press("ctrl+left")  # jump to the start of this branch segment
        assert app.rows.selected_id == ids["u2"]
        await pilot.press("ctrl+left")  # and fold it
        assert ids["u2"] in app.rows.folded and ids["a3"] not in [r.entry_id for r in app.rows.rows()]
        await pilot.press("ctrl+right")
        assert not app.rows.folded
        await pilot.press("L")
        await pilot.pause()
        await pilot.press(*"plan a", "enter")
        await pilot.pause()
        assert labels == [(ids["u2"], "plan a")] and app.rows.label_of(ids["u2"]) == "plan a"
        await pilot.press("ctrl+o", "ctrl+o")
        assert status(app).endswith("[user]")
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value is None


async def test_selecting_without_anything_to_abandon_skips_the_summary_question() -> None:
    m, ids = build()
    app = TreeNavigator(m.get_tree(), m.get_leaf_id(), asks_summary=lambda _t: False)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.press("up", "enter")
        await pilot.pause()
    assert app.return_value == TreeChoice(ids["u3"])


async def test_the_session_picker_searches_switches_scope_and_picks() -> None:
    now = datetime.now(UTC)

    def info(name: str, minutes: int, parent: str | None, cwd: str) -> SessionInfo:
        when = now - timedelta(minutes=minutes)
        return SessionInfo(
            f"/s/{name}.jsonl", name, cwd, None, parent, when, when, 3, f"{name} task", f"{name} task"
        )

    here = [info("alpha", 30, None, "/w"), info("beta", 20, "/s/alpha.jsonl", "/w")]
    everywhere = [*here, info("gamma", 10, None, "/elsewhere")]
    app = Picker(
        "Resume a session",
        lambda query, all_scope: session_items(everywhere if all_scope else here, query),
        scopes=("this folder", "all"),
    )
    async with app.run_test(size=(100, 20)) as pilot:
        assert [i.key for i in app.items] == ["/s/alpha.jsonl", "/s/beta.jsonl"]
        assert app.items[1].prefix == "└─ "
        await pilot.press("tab")
        assert app.items[0].key == "/s/gamma.jsonl"
        assert "◉ all" in str(app.query_one("#title").render())
        await pilot.press(*"beta")
        assert [i.key for i in app.items] == ["/s/beta.jsonl"]
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value == "/s/beta.jsonl"

    app = Picker("Resume a session", lambda q, a: session_items(here, q))
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("down", "escape")
        await pilot.pause()
    assert app.return_value is None
