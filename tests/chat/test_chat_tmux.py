"""``sessiontree chat`` in a real terminal (tmux) against the loopback provider server: the issue's
scenario (a prompt with a tool call, ``/tree`` back with a summary, a new prompt, ``/fork``, ``/resume`` of
the first session, ``/compact``, ``/export``), a pi session resumed with one turn added, Ctrl+C during a
streamed reply, steering and a follow-up typed while a tool runs, and ``!cmd`` / ``!!cmd``. Screens are
asserted as shown; the files are checked against SPEC afterwards."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.format.pi_json import loads
from tests.chat.tmux_support import (
    EXIT_MARK,
    call,
    lines,
    messages,
    require_tmux,
    sent_messages,
    start,
    text,
    usage,
)
from tests.conftest import require_conformance
from tests.llm.fake_servers import chat_completions_sse, fake_server

pytestmark = pytest.mark.usefixtures("_tmux")


@pytest.fixture
def _tmux() -> None:
    require_tmux()


def test_the_issue_scenario_tool_call_tree_summary_fork_resume_compact_export(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    (tmp_path / "settings.json").write_text('{"compaction": {"keepRecentTokens": 1}}')
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(text=["Let me look.\n"], tool_calls=[call("c1", "ls", {"path": "."})],
                                 finish_reason="tool_calls", usage=usage(900, 40)),
            chat_completions_sse(text=["There is one file:", " notes.txt\n", "Nothing else."], usage=usage(1000, 50)),
            chat_completions_sse(text=["It says: remember the milk."], usage=usage(1100, 20)),
            chat_completions_sse(text=["## Goal\nRead notes.txt.\n## Why Abandoned\nNot needed."]),
            chat_completions_sse(text=["Here is a haiku about files."], usage=usage(1200, 30)),
            chat_completions_sse(text=["## Goal\nList the files.\n## Progress\nDone."]),
            chat_completions_sse(text=["The haiku was asked for after the move."]),  # the split turn's prefix
        ]  # fmt: skip
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("/name first session")
            term.send("Enter")
            term.wait_for("Named the session 'first session'")
            term.type("list the files")
            term.send("Enter")
            screen = term.wait_for("Nothing else.")
            assert "› list the files" in screen and "⚙ [ls: .]" in screen and "↳ notes.txt" in screen
            assert "There is one file: notes.txt" in screen
            term.wait_idle()
            term.type("what does it say")
            term.send("Enter")
            term.wait_for("It says: remember the milk.")
            term.wait_idle()
            term.wait_for("local/test-model · ↑3k ↓110 · $0.0000 · ctx 1.1k/128k")  # the footer, updated

            term.type("/tree")
            term.send("Enter")
            screen = term.wait_for("› • assistant: It says: remember the milk.")  # the leaf is selected
            assert "Session Tree" in screen
            assert "• [ls: .]" in screen and "• user: list the files" in screen
            term.send("Up")
            term.wait_for("› • user: what does it say")
            term.send("Enter")
            term.wait_for("Summarize the branch you are leaving?")
            term.send("Down")
            term.send("Enter")
            screen = term.wait_for("branch summary")
            assert "── moved to" in screen
            assert term.wait_for(
                lambda _s: term.prompt_line() == "what does it say"
            )  # the text is back to edit
            term.send("C-u")
            term.type("write a haiku")
            term.send("Enter")
            term.wait_for("Here is a haiku about files.")
            term.wait_idle()

            term.type("/fork")
            term.send("Enter")
            screen = term.wait_for(re.compile(r"Fork: continue in a new session(.|\n)*list the files"))
            assert (
                screen.index("write a haiku")
                < screen.index("what does it say")
                < screen.index("list the files")
            )
            term.send("Enter")
            screen = term.wait_for("Forked into")
            assert term.wait_for(lambda _s: term.prompt_line() == "write a haiku")
            term.wait_for("local/test-model · ↑1.9k ↓90")  # the fork holds the first turn only
            term.send("C-u")

            term.type("/resume")
            term.send("Enter")
            screen = term.wait_for("└─ first session")  # the fork (it copied the name) under its parent
            assert "› first session" in screen, screen
            term.send("Enter")
            # the first session's footer (all four replies), drawn once the input line is back
            screen = term.wait_for("local/test-model · ↑4.2k ↓140")
            assert "Here is a haiku about files." in screen and "Resume a session" not in screen

            term.type("/compact")
            term.send("Enter")
            term.wait_for("Compacted the context")
            term.type("/export notes-export.html")
            term.send("Enter")
            term.wait_for("Exported the branch")
            term.type("/session")
            term.send("Enter")
            screen = term.wait_for("Cost:")
            assert "Name:     first session" in screen and "1 branch points" in screen
            term.type("/quit")
            term.send("Enter")
            term.wait_for(f"{EXIT_MARK} 0")

        assert len(server.requests) == 7
        after_move = sent_messages(server, 4)  # the haiku request: the summary, not the abandoned turn
        assert "Read notes.txt." in after_move and "remember the milk" not in after_move

    sessions = sorted((tmp_path / "pi" / "sessions").glob("*/*.jsonl"))
    assert len(sessions) == 2
    first, fork = (lines(p) for p in sessions)
    if first[0].get("parentSession"):
        first, fork = fork, first
        sessions.reverse()
    first_file, fork_file = sessions
    entries = first[1:]
    by_id = {e["id"]: e for e in entries}
    assert [e["name"] for e in entries if e["type"] == "session_info"] == ["first session"]
    (result,) = messages(entries, "toolResult")
    assert result["message"]["toolName"] == "ls" and "notes.txt" in text(result)
    users = {text(e): e for e in messages(entries, "user")}
    assert set(users) == {"list the files", "what does it say", "write a haiku"}
    (summary,) = [e for e in entries if e["type"] == "branch_summary"]
    abandoned_leaf = next(e for e in messages(entries, "assistant") if "milk" in text(e))
    assert summary["parentId"] == users["what does it say"]["parentId"]  # before the user message chosen
    assert summary["fromId"] == abandoned_leaf["id"]  # SPEC A2: the abandoned leaf
    assert "## Goal\nRead notes.txt." in summary["summary"]
    assert users["write a haiku"]["parentId"] == summary["id"]
    (compaction,) = [e for e in entries if e["type"] == "compaction"]
    assert "## Goal\nList the files." in compaction["summary"]
    assert "The haiku was asked for after the move." in compaction["summary"]
    assert compaction["firstKeptEntryId"] in by_id and isinstance(compaction.get("retainedTail"), list)
    reopened = SessionManager.open(first_file, read_only=True)
    assert not [p for p in reopened.problems if not p.is_note]
    assert reopened.get_leaf_id() == compaction["id"]

    assert fork[0]["parentSession"] == str(first_file)
    fork_ids = [e["id"] for e in fork[1:]]
    assert fork_ids == [
        e["id"] for e in SessionManager.open(first_file, read_only=True).get_branch(summary["id"])
    ]
    page = (work / "notes-export.html").read_text()
    assert "<html" in page.lower() and "list the files" in page and "first session" in page
    assert fork_file.exists()


def test_a_pi_session_resumed_gets_one_turn_appended_after_pis_bytes(tmp_path: Path) -> None:
    source = require_conformance() / "cases" / "case-001" / "session.jsonl"
    work = tmp_path / "project"
    work.mkdir()
    copy = tmp_path / "pi-session.jsonl"
    shutil.copyfile(source, copy)
    original = copy.read_bytes()
    leaf = lines(copy)[-1]["id"]
    with fake_server() as server:
        server.replies.append(chat_completions_sse(text=["Picked up where pi left off."], usage=usage(50, 8)))
        with start(server, tmp_path, work, str(copy)) as term:
            term.wait_ready()
            term.type("one more question")
            term.send("Enter")
            term.wait_for("Picked up where pi left off.")
            term.wait_idle()
            term.type("/quit")
            term.send("Enter")
            term.wait_for(f"{EXIT_MARK} 0")
    data = copy.read_bytes()
    assert data.startswith(original) and data != original
    appended = [loads(line) for line in data[len(original) :].split(b"\n") if line]
    (user,) = messages(appended, "user")
    (reply,) = messages(appended, "assistant")
    assert text(user) == "one more question" and text(reply) == "Picked up where pi left off."
    chain = [e["id"] for e in appended]
    assert appended[0]["parentId"] == leaf
    assert all(e["parentId"] == chain[i] for i, e in enumerate(appended[1:]))
    assert {e["type"] for e in appended} <= {"message", "model_change", "thinking_level_change"}


def test_ctrl_c_aborts_a_streamed_reply_and_the_chat_stays_ready(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "settings.json").write_text('{"compaction": {"keepRecentTokens": 1}}')
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(text=["Counting: one\n", "two\n", "three\n"], hold_after=2),
            chat_completions_sse(text=["Yes, still here."]),
            chat_completions_sse(text=["## Goal"], hold_after=1),  # the compaction's summaries, held
            chat_completions_sse(text=["## Goal"], hold_after=1),
        ]
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("count slowly")
            term.send("Enter")
            term.wait_for("Counting: one")
            term.wait_for("working…")  # the server holds the rest of the reply
            term.send("C-c")
            screen = term.wait_for("(aborted)")
            term.wait_idle()
            term.type("!echo shell-out")
            term.send("Enter")
            term.wait_for("shell-out\n")
            term.type("!!echo kept-aside")
            term.send("Enter")
            term.wait_for("kept-aside\n")
            term.type("are you")
            term.send("C-j")  # a new line, not a send
            term.type("there")
            term.send("Enter")
            screen = term.wait_for("Yes, still here.")
            assert "› are you\n  there" in screen
            term.wait_idle()
            term.type("/compact")  # Ctrl+C outside the input line (while a command runs) aborts it too
            term.send("Enter")
            term.wait_for("Compacting…")
            term.wait_for(lambda _s: len(server.requests) >= 3)
            term.send("C-c")
            screen = term.wait_ready()
            assert "Aborting…" in screen and "abort" in screen.split("Compacting…")[-1].lower(), screen
            term.type("/session")  # a line sent: the next Ctrl+C starts over
            term.send("Enter")
            term.wait_for("Cost:")
            term.send("C-c")
            term.wait_for("Press ctrl+c again to exit")
            term.send("C-c")
            term.wait_for(f"{EXIT_MARK} 0")
        second = sent_messages(server, 1)
        assert "shell-out" in second and "kept-aside" not in second
    (session,) = (tmp_path / "pi" / "sessions").glob("*/*.jsonl")
    entries = lines(session)[1:]
    assert [text(e) for e in messages(entries, "user")] == ["count slowly", "are you\nthere"]
    assert not [e for e in entries if e["type"] == "compaction"]  # the aborted compaction wrote nothing
    aborted, answered = messages(entries, "assistant")
    assert aborted["message"]["stopReason"] == "aborted" and text(aborted).startswith("Counting: one")
    assert answered["message"]["stopReason"] == "stop"
    runs = [e["message"] for e in messages(entries, "bashExecution")]
    assert [(r["command"], r["output"], r["exitCode"]) for r in runs] == [
        ("echo shell-out", "shell-out", 0),
        ("echo kept-aside", "kept-aside", 0),
    ]
    assert "excludeFromContext" not in runs[0] and runs[1]["excludeFromContext"] is True
    assert "(aborted)" in screen


def test_steering_and_a_follow_up_typed_during_a_tool_call_reach_the_next_requests(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    gate = work / "go"
    wait = "while [ ! -f go ]; do sleep 0.05; done; echo released"
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(
                tool_calls=[call("c1", "bash", {"command": wait})], finish_reason="tool_calls"
            ),
            chat_completions_sse(text=["Steered: checking the README too."]),
            chat_completions_sse(text=["Follow-up done."]),
        ]
        with start(server, tmp_path, work) as term:
            term.wait_ready()
            term.type("run the script")
            term.send("Enter")
            term.wait_for("running [bash:")
            term.type("also check the README")
            term.send("Enter")
            term.wait_for("queued steer: also check the README")
            term.type("then say done")
            term.send("M-Enter")
            term.wait_for("queued follow-up: then say done")
            gate.touch()
            screen = term.wait_for("Follow-up done.")
            assert (
                "↳ released" in screen and "› also check the README" in screen and "› then say done" in screen
            )
            assert screen.index("↳ released") < screen.index("› also check the README")
            assert screen.index("Steered: checking") < screen.index("› then say done")
            term.wait_idle()
            term.type("/quit")
            term.send("Enter")
            term.wait_for(f"{EXIT_MARK} 0")
        assert len(server.requests) == 3
        second = server.requests[1].body["messages"]
        roles = [m["role"] for m in second]
        assert roles[-3:] == ["assistant", "tool", "user"] and "also check the README" in json.dumps(
            second[-1]
        )
        third = server.requests[2].body["messages"]
        assert "then say done" in json.dumps(third[-1]) and "then say done" not in json.dumps(second)


def test_the_other_slash_commands_on_a_sqlite_store(tmp_path: Path) -> None:
    from sessiontree import open_repo

    work = tmp_path / "project"
    work.mkdir()
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    with fake_server() as server:
        server.replies += [
            chat_completions_sse(
                reasoning=["Thinking about hello."], text=["First reply."], usage=usage(10, 2)
            ),
            chat_completions_sse(text=["Second reply."], usage=usage(20, 3)),
        ]
        with start(server, tmp_path, work, "--store", store) as term:
            assert f"session {store}#" in term.wait_ready()
            term.type("/help")
            term.send("Enter")
            screen = term.wait_for("alt+enter")
            assert "/tree" in screen and "/export [FILE]" in screen and "/compact [FOCUS]" in screen
            term.type("hello")
            term.send("Enter")
            term.wait_for("First reply.")
            term.wait_idle()
            (thought,) = [
                line for line in term.screen(styles=True).split("\n") if "Thinking about hello." in line
            ]
            assert "\x1b[2" in thought or ";2m" in thought or ";2;" in thought, repr(thought)  # dimmed
            for command, shown in (
                ("/label greeting", "'greeting'"),
                ("/thinking high", "Thinking level: high (local/test-model does not reason: unused)"),
                ("/model", "● local/test-model"),
                ("/model local/other-model", "Model: local/other-model"),
            ):
                term.type(command)
                term.send("Enter")
                term.wait_for(shown)
            footer = term.wait_for("local/other-model · ↑").split("\n")[-2]  # the footer
            assert "thinking" not in footer, footer  # the model does not reason: no level shown
            term.type("again")
            term.send("Enter")
            term.wait_for("Second reply.")
            term.wait_idle()
            term.type("/clone")
            term.send("Enter")
            term.wait_for(f"Cloned the branch into {store}#")
            term.type("/new")
            term.send("Enter")
            term.wait_for("New session")
            term.send("Up", "Up")  # the history: the last two lines sent
            assert term.wait_for(lambda _s: term.prompt_line() == "/clone")
            term.send("C-u")
            term.type("/quit")
            term.send("Enter")
            term.wait_for(f"{EXIT_MARK} 0")
        assert [r.body["model"] for r in server.requests] == ["test-model", "other-model"]
    with open_repo(store) as repo:
        infos = repo.list()
        assert len(infos) == 2  # the session and its clone; the new one has no entries yet
        first = next(i for i in infos if not i.parent_session_path)
        manager = repo.open(first.id, read_only=True)
        entries = manager.get_entries()
        (labelled,) = manager.get_labels().items()
        assert labelled[1] == "greeting" and text(manager.get_entry(labelled[0]) or {}) == "First reply."
        assert [e["thinkingLevel"] for e in entries if e["type"] == "thinking_level_change"][-1] == "high"
        assert [e["modelId"] for e in entries if e["type"] == "model_change"][-1] == "other-model"
        assert [text(e) for e in messages(entries, "assistant")] == ["First reply.", "Second reply."]
