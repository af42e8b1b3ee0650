"""The pieces behind the chat's streaming display, without a terminal: where a streamed reply is cut into
blocks, how a growing block flows into the scrollback, the footer fitted to a width, the activity line."""

from __future__ import annotations

import io

from rich.console import Console

from sessiontree.agent import events as ev
from sessiontree.cli.chat.footer import Footer, _Parts
from sessiontree.cli.chat.render import Transcript
from sessiontree.cli.chat.stream_view import Block, BlockSplitter, StreamView
from sessiontree.format.safe_text import cell_width


def split(text: str, size: int = 5) -> list[Block]:
    splitter = BlockSplitter()
    blocks: list[Block] = []
    for i in range(0, len(text), size):
        blocks += splitter.feed(text[i : i + size])
    return blocks + splitter.finish()


def test_blocks_end_at_blank_lines_headings_and_fences_and_code_goes_line_by_line() -> None:
    text = "# Title\nIntro line\nstill intro\n\n```py\nx = 1\n\n    y = 2\n```\nafter\n"
    assert split(text) == [
        Block("markdown", "# Title"),
        Block("markdown", "Intro line\nstill intro"),
        Block("code_start", language="py"),
        Block("code_line", "x = 1", "py"),
        Block("code_line", "", "py"),
        Block("code_line", "    y = 2", "py"),
        Block("code_end"),
        Block("markdown", "after"),
    ]


def test_windows_line_ends_are_line_ends_even_split_between_deltas() -> None:
    splitter = BlockSplitter()
    blocks = splitter.feed("one\r") + splitter.feed("\n\r\ntwo\r\n") + splitter.finish()
    assert blocks == [Block("markdown", "one"), Block("markdown", "two")]


def test_a_loose_list_and_its_indented_paragraphs_stay_one_block() -> None:
    text = "1. one\n\n   more about one\n\n2. two\n\n```\nnot closed"
    assert split(text, 3) == [
        Block("markdown", "1. one\n\n   more about one\n\n2. two"),
        Block("code_start"),
        Block("code_line", "not closed"),
        Block("code_end"),
    ]


def test_what_is_pending_is_the_unfinished_block() -> None:
    splitter = BlockSplitter()
    assert splitter.feed("Para one.\n\nPara t") == []
    assert splitter.pending() == "Para one.\n\nPara t"  # shown as two paragraphs, not yet cut
    assert splitter.feed("wo\nmore") == [Block("markdown", "Para one.")]
    assert splitter.pending() == "Para two\nmore"


def test_a_long_paragraph_flows_into_the_scrollback_and_ends_as_one_rendering() -> None:
    console = Console(file=io.StringIO(), width=60, color_system=None)
    now = [0.0]
    view = StreamView(console, "text", lambda: 60, lambda: 4, clock=lambda: now[0])
    words = " ".join(f"w{i}" for i in range(300))
    printed = []
    for i in range(0, len(words), 9):
        now[0] += 0.2
        printed += view.feed(words[i : i + 9])
        assert len(view.live()) <= 4
    assert len(printed) > 10  # rows went out while it streamed
    printed += view.finish()
    rows = [row.plain for row in printed]
    assert " ".join(rows).split() == words.split()  # every word once, in order, none broken
    assert all(cell_width(row) <= 60 for row in rows)


def test_the_footer_keeps_the_context_figure_and_cuts_the_model_name_first() -> None:
    footer = Footer()
    footer._parts = _Parts(
        "provider/a-model-with-a-long-name", "thinking high", "↑1.2k ↓300", "$0.0012", "ctx 1.5k/128k",
        " (1.2%)", "my session",
    )  # fmt: skip
    assert footer.line(200).endswith("ctx 1.5k/128k (1.2%) · my session")
    for width in (90, 60, 40, 30, 20):
        line = footer.line(width)
        assert cell_width(line) <= width and "ctx 1.5k/128k" in line, (width, line)
    assert footer.line(90).startswith("provider/a-model-with-a-l") and "$0.0012" in footer.line(90)


def test_the_activity_line_turns_and_counts_while_a_run_works() -> None:
    now = [100.0]
    shown = Transcript(Console(file=io.StringIO(), width=80, color_system=None), clock=lambda: now[0])
    shown.handle(ev.agent_start())
    first = shown.status()
    now[0] += 65.35
    later = shown.status()
    assert first.endswith("working… 0s (ctrl+c aborts)") and later.endswith("working… 1m 05s (ctrl+c aborts)")
    assert first[0] != later[0]  # the spinner moved
    shown.handle(ev.auto_retry_end(False, 3, "overloaded"))
    assert shown.status() == ""


def test_rows_of_a_paragraph_not_yet_cut_from_the_one_before_are_printed_once() -> None:
    console = Console(file=io.StringIO(), width=40, color_system=None)
    now = [0.0]
    view = StreamView(console, "text", lambda: 40, lambda: 3, clock=lambda: now[0])
    text = "First paragraph, short.\n\n" + " ".join(f"x{i}" for i in range(200)) + "\n\nThird."
    printed = []
    for i in range(0, len(text), 7):
        now[0] += 0.2
        printed += view.feed(text[i : i + 7])
    printed += view.finish()
    words = [w for row in printed for w in row.plain.split()]
    assert words == text.split()


def test_the_footer_follows_stored_messages_without_reading_the_session_again() -> None:
    from sessiontree import SessionManager
    from sessiontree.agent import AgentHarness
    from sessiontree.llm.models import openai_compatible_model

    manager = SessionManager.in_memory("/tmp")
    harness = AgentHarness(manager, openai_compatible_model("m", "http://127.0.0.1:9/v1", provider="local"))
    footer = Footer()
    footer.refresh(harness)
    assert "↑0 ↓0" in footer.text and "ctx 0/128k" in footer.text
    reads = []
    manager.get_entries = lambda *a, **k: reads.append(1) or []  # type: ignore[method-assign]
    user = {"role": "user", "content": "x" * 400, "timestamp": 1}
    footer.add_message(harness, user)
    assert "ctx 100/128k" in footer.text  # estimated: 400 characters
    reply = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input": 2000, "output": 500, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2500,
                  "cost": {"total": 0.25}},
        "stopReason": "stop",
        "timestamp": 2,
    }  # fmt: skip
    footer.add_message(harness, reply)
    assert "↑2k ↓500 · $0.2500 · ctx 2.5k/128k" in footer.text and not reads
