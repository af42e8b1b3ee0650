"""The chat's session side in a real terminal (tmux) on the loopback server: the footer follows every
message and every change of the leaf; a second chat on a session another chat holds says so at start-up;
a line whose send failed is put back; ``/label`` targets the last message and shows a label."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.chat.tmux_support import call, lines, require_tmux, start, usage
from tests.llm.fake_servers import chat_completions_sse, fake_server

pytestmark = pytest.mark.usefixtures("_tmux")


@pytest.fixture
def _tmux() -> None:
    require_tmux()


def footer(screen: str) -> str:
    (line,) = [row for row in screen.split("\n") if " · ctx " in row]
    return line


def test_the_footer_follows_each_message_and_each_change_of_the_leaf(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    (tmp_path / "settings.json").write_text('{"compaction": {"keepRecentTokens": 1}}')
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(tool_calls=[call("c1", "ls", {"path": "."})], finish_reason="tool_calls",
                                 usage=usage(9000, 400)),
            chat_completions_sse(text=["One file: notes.txt."], usage=usage(9600, 500), hold_after=1,
                                 resume=True),
            chat_completions_sse(text=["## Goal\nList the files."]),  # the compaction's summaries
            chat_completions_sse(text=["The listing was asked for."]),
        ]  # fmt: skip
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("list the files")
            term.send("Enter")
            # the second request is held (the run goes on): the footer already counts the first reply
            assert server.held.wait(30)
            term.wait_for(lambda s: " · ctx " in s and "↑9k ↓400" in footer(s), timeout=30)
            server.release.set()
            term.wait_for("One file: notes.txt.")
            term.wait_idle()
            assert "↑18.6k ↓900" in footer(term.wait_for("↑18.6k")) and "ctx 10.1k/128k" in footer(
                term.screen()
            )
            term.type("/compact")
            term.send("Enter")
            term.wait_for("Compacted the context")
            term.wait_idle()
            shown = re.search(r"ctx (\d+)/128k", footer(term.wait_for(re.compile(r"ctx \d+/128k"))))
            assert shown is not None and int(shown[1]) < 1000  # estimated: the summary and what was kept
            term.type("/session")
            term.send("Enter")
            screen = term.wait_for("Cost:")
            assert f"about {shown[1]} tokens of 128000" in screen


def test_a_second_chat_on_a_session_another_chat_writes_says_so_at_start_up(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    with fake_server() as server:
        server.replies.append(chat_completions_sse(text=["First chat here."]))
        with start(server, tmp_path, work) as first:
            first.wait_ready()
            first.type("hello")
            first.send("Enter")
            first.wait_for("First chat here.")
            first.wait_idle()
            (session,) = (tmp_path / "pi" / "sessions").glob("*/*.jsonl")
            with start(server, tmp_path, work, "-c") as second:
                screen = second.wait_exit(1, timeout=30)
            assert f"{session} is open for writing in process" in screen
            assert "(sessiontree chat" in screen and f"sessiontree clone {session}" in screen
            first.type("/quit")
            first.send("Enter")
            first.wait_exit(0)
        assert len(server.requests) == 1


def test_a_line_whose_send_failed_is_put_back_to_edit(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    database = tmp_path / "sessions.db"
    with fake_server() as server:
        server.replies.append(chat_completions_sse(text=["Stored in SQLite."]))
        with start(server, tmp_path, work, "--store", f"sqlite:///{database}") as term:
            term.wait_ready()
            term.type("first")
            term.send("Enter")
            term.wait_for("Stored in SQLite.")
            term.wait_idle()
            with sqlite3.connect(database) as db:  # another host takes the writer lease over
                db.execute("UPDATE st_writer_leases SET owner = 'elsewhere:42:beef', fence = fence + 1")
            term.type("second message, typed with care")
            term.send("Enter")
            term.wait_for("taken over by elsewhere:42:beef")
            assert term.wait_for(lambda _s: term.prompt_line() == "second message, typed with care")
        assert len(server.requests) == 1


def test_label_targets_the_last_message_and_a_bare_label_shows_it(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    with fake_server() as server:
        server.replies.append(chat_completions_sse(text=["A reply worth keeping."]))
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("hello")
            term.send("Enter")
            term.wait_for("A reply worth keeping.")
            term.wait_idle()
            for command, shown in (
                ("/name labelled session", "Named the session"),  # the leaf is now a session_info entry
                ("/label keeper", "Labelled"),
                ("/label", "Label of"),
            ):
                term.type(command)
                term.send("Enter")
                screen = term.wait_for(shown)
            assert "'keeper'" in screen.split("Label of")[-1]
            term.type("/quit")
            term.send("Enter")
            term.wait_exit(0)
    (session,) = (tmp_path / "pi" / "sessions").glob("*/*.jsonl")
    entries = lines(session)[1:]
    (reply,) = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    labels = [e for e in entries if e["type"] == "label"]
    assert [(e["targetId"], e.get("label")) for e in labels] == [(reply["id"], "keeper")]  # nothing cleared
