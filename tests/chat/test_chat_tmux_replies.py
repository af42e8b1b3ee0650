"""How replies look in a real terminal (tmux) while and after they stream from the loopback server: a long
paragraph keeps flowing and wraps at word boundaries as it arrives; markdown is rendered (headings, bold,
a table, a list) with code verbatim and highlighted; a wait shows a spinner and the time, and the status
line goes once retries give up; an empty reply and a stream with no response say so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.chat.tmux_support import Terminal, lines, messages, require_tmux, start
from tests.llm.fake_servers import (
    MARKDOWN_REPLY,
    chat_completions_sse,
    empty_stream,
    error_500,
    fake_server,
    long_paragraph,
    pieces,
)

pytestmark = pytest.mark.usefixtures("_tmux")

_WORD = re.compile(r"word(\d+)")


@pytest.fixture
def _tmux() -> None:
    require_tmux()


def word_rows(term: Terminal) -> list[str]:
    """The terminal rows (as shown, not joined) that hold the paragraph's words."""
    return [row for row in term.screen(rows=True).split("\n") if row.startswith("word")]


def assert_whole_words_in_order(rows: list[str], *, streaming: bool = False, width: int = 120) -> list[int]:
    """Every row within the width, made of whole ``wordN`` tokens, their numbers one run; returns them.
    While ``streaming`` the very last token may be a word still arriving (it is left out)."""
    numbers: list[int] = []
    for row in rows:
        assert len(row) <= width, row
        tokens = row.split()
        assert all(_WORD.fullmatch(t) for t in tokens), f"a word broken across rows: {row!r}"
        numbers += [int(t[4:]) for t in tokens]
    if streaming:
        numbers.pop()
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers
    return numbers


def test_a_long_paragraph_flows_and_wraps_while_it_streams(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    paragraph = long_paragraph(400)  # about 3,300 characters on one line: some 28 rows at 120 columns
    deltas = pieces(paragraph, 24)
    held = len(deltas) * 2 // 3
    arrived = "".join(deltas[:held]).split()[-2]  # the last word surely whole when the server holds
    with fake_server() as server:
        server.replies.append(chat_completions_sse(text=deltas, hold_after=1 + held, resume=True))
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("write a long paragraph")
            term.send("Enter")
            term.wait_for(lambda _s: any(arrived in row.split() for row in word_rows(term)), timeout=30)
            shown = assert_whole_words_in_order(word_rows(term), streaming=True)
            # It wrapped as it came: many whole rows while the reply streams, up to the newest word (how
            # much of the start is still on the screen depends on how the rows were flushed to the scrollback).
            assert len(word_rows(term)) >= 15 and shown[-1] >= int(arrived[4:]) - 1
            assert "working…" in term.screen()  # still streaming: the server holds the rest
            server.release.set()
            term.wait_for("word399", timeout=30)
            term.wait_idle()
            assert assert_whole_words_in_order(word_rows(term))[-1] == 399


def test_markdown_is_rendered_and_code_kept_verbatim_and_highlighted(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    with fake_server() as server:
        server.replies.append(chat_completions_sse(text=pieces(MARKDOWN_REPLY, 7)))
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("plan the release")
            term.send("Enter")
            term.wait_for("second item")
            term.wait_idle()
            screen = term.screen(rows=True)
            assert "bold" in term.style_at("Release plan")
            assert "bold" in term.style_at("parser first") and "bold" not in term.style_at("Ship the")
            assert "italic" in term.style_at("the renderer")
            assert "fg" in term.style_at("def greet") and "fg" in term.style_at("return f'")  # highlighted
    rows = screen.split("\n")
    for raw in ("# Release", "**parser**", "*the renderer*", "`main`", "```", "| step |", "|------|"):
        assert raw not in screen, raw
    assert "Release plan" in rows
    assert "def greet(name):" in rows and "    return f'hello {name}'  # kept verbatim" in rows
    table = [row for row in rows if ("parse" in row and "ada" in row) or ("render" in row and "bob" in row)]
    assert len(table) == 2 and not any("|" in row for row in table)
    assert any(row.strip() == "• first item" for row in rows)
    sentence = [row for row in rows if row.startswith("Ship the parser") or row.startswith("to need")]
    start_row = rows.index(sentence[0])
    paragraph = " ".join(rows[start_row : start_row + 2])
    assert "keep main green; this sentence runs long enough to need wrapping at a word boundary" in paragraph
    assert all(len(row) <= 120 for row in rows[start_row : start_row + 2])


def test_a_wait_shows_a_spinner_and_the_time_and_a_give_up_clears_the_status(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "settings.json").write_text('{"retry": {"maxRetries": 1, "baseDelayMs": 100}}')
    status = re.compile(r"([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]) working… (\d+)s")
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(text=["Thought it over."], hold_after=1, resume=True),
            error_500(),
            error_500(),  # the retry fails too
            error_500(),
            error_500(),
        ]
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("take your time")
            term.send("Enter")
            first = status.search(term.wait_for(status, timeout=30))
            later = status.search(term.wait_for(lambda s: bool((m := status.search(s)) and m[2] != "0")))
            assert first is not None and later is not None
            frames = {first[1], later[1]}
            for _ in range(30):  # the spinner turns while nothing arrives
                if len(frames) > 1:
                    break
                found = status.search(term.screen())
                if found is not None:
                    frames.add(found[1])
            assert len(frames) > 1 and int(later[2]) >= 1
            server.release.set()
            term.wait_for("Thought it over.")
            term.wait_idle()
            term.type("again")
            term.send("Enter")
            screen = term.wait_for("Gave up after 1 retries", timeout=60)
            screen = term.wait_for(lambda s: "Gave up" in s and "working…" not in s and "retry…" not in s)
            assert "Retrying in 0.1 s (attempt 1 of 1)" in screen


def test_an_empty_reply_and_a_stream_without_a_response_are_shown_as_such(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "settings.json").write_text('{"retry": {"enabled": false}}')
    with fake_server() as server:
        server.replies += [
            empty_stream(),
            chat_completions_sse(text=[]),
            chat_completions_sse(text=["Answered on Chat Completions."]),
        ]
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("hello?")
            term.send("Enter")
            term.wait_for("error: the stream ended without a response")
            term.wait_idle()
            term.type("anyone?")
            term.send("Enter")
            term.wait_for("(empty reply")
            term.wait_idle()
            term.type("/model openai/gpt-4o")  # a Responses model, on a --base-url server
            term.send("Enter")
            term.wait_for("Model: openai/gpt-4o")
            term.type("and now?")
            term.send("Enter")
            term.wait_for("Answered on Chat Completions.")
            term.wait_idle()
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 3
        assert server.requests[2].body["model"] == "gpt-4o"
    (session,) = (tmp_path / "pi" / "sessions").glob("*/*.jsonl")
    failed, empty, answered = (e["message"] for e in messages(lines(session), "assistant"))
    assert failed["stopReason"] == "error" and "ended without a response" in failed["errorMessage"]
    assert empty["stopReason"] == "stop" and empty["content"] == []
    assert answered["api"] == "openai-completions"
