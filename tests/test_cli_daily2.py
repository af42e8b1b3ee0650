"""The command line as a daily tool, continued: messages that fit the situation, help that describes each
command, demo on any store, one answer to Ctrl+C, no writes where nothing needs repair, errors that name the
user's file, Markdown without raw HTML, and a depth limit that keeps the active path."""

from __future__ import annotations

import array
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app
from tests.test_cli import EXAMPLE


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _help(*command: str) -> str:
    """``--help`` as one line of words (the panels' borders and line breaks taken out)."""
    code, out, _ = _run(*command, "--help", env={"COLUMNS": "200"})
    assert code == 0, out
    return " ".join(out.replace("│", " ").split())


@pytest.fixture
def session(tmp_path: Path) -> Path:
    target = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, target)
    return target


# -- 14. messages that fit the situation -------------------------------------------------------------------
def test_branch_summarize_with_nothing_to_summarize_does_not_ask_for_summarize(session: Path) -> None:
    code, out, _ = _run("label", str(session), "5e550021", "done")  # the leaf is now a label entry
    assert code == 0, out
    before = session.read_bytes()
    code, out, err = _run("branch", str(session), "--to", "5e550021", "--summarize", "--offline")
    assert code == 0, out + err
    assert "Nothing to summarize" in out and "holds no messages" in out
    assert "with --summarize" not in out  # it was given
    assert "--persist-leaf" in out  # what does keep the move
    assert session.read_bytes() == before


def test_label_with_the_entry_id_forgotten_says_so(session: Path) -> None:
    before = session.read_bytes()
    code, _, err = _run("label", str(session), "my label")
    assert code == 2
    assert "'my label' is not an entry of" in err and "label FILE ID TEXT" in err
    assert "give either TEXT or --clear" not in err
    code, _, err = _run("label", str(session), "5e550021")
    assert code == 2 and "no label given for entry 5e550021" in err
    code, _, err = _run("label", str(session), "5e550021", "x", "--clear")
    assert code == 2 and "give no TEXT" in err
    assert session.read_bytes() == before


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("nope/nope", []),
        ("openai/nope", []),
        ("nope", []),
        ("openai/gpt5", ["openai/gpt-5"]),
        ("gtp-4o", ["openai/gpt-4o"]),
        ("antropic/claude-sonnet-4-5", ["anthropic/claude-sonnet-4-5"]),
        ("opus", ["anthropic/claude-opus-4-5", "anthropic/claude-opus-4-1"]),
    ],
)
def test_model_suggestions_are_close_names_only(ref: str, expected: list[str]) -> None:
    from sessiontree.llm.models import ModelRegistry

    assert ModelRegistry().suggest(ref)[: len(expected) or None] == expected


def test_an_unknown_model_says_what_is_wrong_without_unrelated_guesses(session: Path, tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "SESSIONTREE_MODEL": ""}
    code, _, err = _run("compact", str(session), "--model", "nope/nope", env=env)
    assert code == 2
    assert "Unknown model 'nope/nope': no provider 'nope' is known (known: anthropic, openai)" in err
    assert "did you mean" not in err and str(tmp_path / "agent" / "models.json") in err
    code, _, err = _run("compact", str(session), "--model", "openai/nope", env=env)
    assert code == 2 and "openai has no model 'nope'" in err and "did you mean" not in err
    code, _, err = _run("compact", str(session), "--model", "claude-sonet-4.5", env=env)
    assert code == 2 and "did you mean anthropic/claude-sonnet-4-5" in err


# -- 18. help that describes the command; demo on any store --------------------------------------------------
def test_db_help_lists_its_actions_and_arguments_have_their_help() -> None:
    out = _help("db")
    assert "migrate: apply the schema migrations; status: show the version" in out
    out = _help("label")
    assert "The entry (id, unique id prefix or label)." in out and "The label." in out


def test_every_command_lists_its_arguments_once() -> None:
    import typer

    names = typer.main.get_command(app).list_commands(None)  # type: ignore[attr-defined]
    assert "tree" in names and "run" in names
    for name in names:
        code, out, _ = _run(name, "--help", env={"COLUMNS": "200"})
        assert code == 0, (name, out)
        assert "Positional arguments" not in out and out.count("Arguments") <= 1, (name, out)
    assert "A session .jsonl file" in _help("tree")


@pytest.mark.parametrize("command", ["list", "latest", "search", "db"])
def test_store_help_mentions_file_only_where_there_is_one(command: str) -> None:
    out = _help(command)
    assert "--store" in out and "FILE is then" not in out
    assert "FILE is then a session id (or a unique prefix of one) in it." in _help("tree")


def test_copy_takes_no_store_option_it_would_ignore() -> None:
    assert "--store" not in _help("copy")


def test_demo_with_a_store_runs_and_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for how in (["--store", "sqlite:///demo.db"], []):
        env = {"SESSIONTREE_STORE": "sqlite:///env.db"} if not how else {}
        code, out, err = _run("demo", *how, env=env)
        assert code == 0, out + err
        assert "context after re-open identical: yes" in out
    assert list(tmp_path.iterdir()) == []  # neither demo.db nor env.db


def test_demo_of_a_session_in_a_database_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = "sqlite:///sessions.db"
    code, out, err = _run("copy", str(EXAMPLE), store)
    assert code == 0, out + err
    sid = SessionManager.open(EXAMPLE, read_only=True).get_session_id()
    code, out, err = _run("demo", sid[:8], "--store", store)
    assert code == 0, out + err
    assert f"The tree of {sid}.jsonl" in out and "Days are supported" in out
    assert "context after re-open identical: yes" in out


# -- 20. one answer to Ctrl+C; nothing written where nothing needs repair; the user's file in errors ---------
def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sessiontree", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )


def _status(pid: int, field: str) -> str:
    """One field of ``/proc/PID/status`` (what a failure needs to say why a signal did nothing)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return "0"


def _interrupt(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    return process.returncode, err.decode()


def test_ctrl_c_while_tree_prints_says_cancelled_and_nothing_about_writing(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    for i in range(2000):
        manager.append_message({"role": "user", "content": f"message {i} " + "x" * 80, "timestamp": i})
    path = manager.get_session_file()
    manager.close()
    assert path is not None
    process = _cli("tree", str(path))
    assert process.stdout is not None
    waiting = array.array("i", [0])
    deadline = time.monotonic() + 120
    while waiting[0] < 65536:  # the pipe is full: tree is printing, blocked until it is read
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
        fcntl.ioctl(process.stdout.fileno(), termios.FIONREAD, waiting)
    ignored = int(_status(process.pid, "SigIgn"), 16) & (1 << (signal.SIGINT - 1))
    code, err = _interrupt(process)
    assert code == 130, f"exit {code}, SIGINT ignored by the child: {bool(ignored)}, stderr: {err!r}"
    assert err.strip() == "error: cancelled (Ctrl+C)"  # a read: nothing to say about writing


def test_ctrl_c_while_compact_waits_for_the_model_is_a_cancel_not_a_failure(tmp_path: Path) -> None:
    asked = threading.Event()

    class Holding(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            asked.set()
            time.sleep(20)  # the model never answers in time

    server = ThreadingHTTPServer(("127.0.0.1", 0), Holding)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = tmp_path / "agent"
        agent.mkdir()
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        models = {"providers": {"loop": {"baseUrl": url, "apiKey": "k", "models": [{"id": "m"}]}}}
        (agent / "models.json").write_text(json.dumps(models))
        session = tmp_path / "s.jsonl"
        shutil.copyfile(EXAMPLE, session)
        before = session.read_bytes()
        process = _cli(
            "compact", str(session), "--model", "loop/m", "--keep-recent-tokens", "50",
            env={"PI_CODING_AGENT_DIR": str(agent)},
        )  # fmt: skip
        assert asked.wait(120), process.communicate()[1]
        code, err = _interrupt(process)
    finally:
        server.shutdown()
        server.server_close()
    assert code == 130, err
    assert err.strip() == f"error: cancelled (Ctrl+C); {session} was not changed"
    assert session.read_bytes() == before


def _read_only_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the command line with ``directory`` read-only: a read-only bind mount in a mount namespace of
    its own (root ignores file modes), else the modes."""
    command = [sys.executable, "-m", "sessiontree", *args]
    if os.geteuid() != 0:
        for path in [directory, *directory.iterdir()]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=directory)
        finally:
            for path in [directory, *directory.iterdir()]:
                path.chmod(0o755 if path.is_dir() else 0o644)
    script = (
        'mount --make-rprivate / && mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && cd "$0" '
        '&& exec "$@"'
    )
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, str(directory), *command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "Read-only file system" not in done.stderr + done.stdout and "mount" in done.stderr:
        pytest.skip(f"no read-only bind mount here: {done.stderr.strip()}")
    return done


def test_check_repair_of_a_healthy_file_in_a_read_only_directory_writes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    shutil.copyfile(EXAMPLE, directory / "s.jsonl")
    done = _read_only_run(directory, "check", "--repair", "s.jsonl")
    assert done.returncode == 0, done.stderr
    assert "nothing to repair" in done.stdout and done.stderr == ""


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["fork", "s.jsonl", "--at", "5e55001a"], "cannot write the fork of s.jsonl: "),
        (["clone", "s.jsonl"], "cannot write the clone of s.jsonl: "),
        (["export", "s.jsonl", "-o", "out.md", "-f", "md"], "error: out.md: "),
        (["export", "s.jsonl"], "error: s.html: "),
    ],
)
def test_write_errors_name_the_file_asked_for_not_a_temporary_one(
    tmp_path: Path, args: list[str], named: str
) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    shutil.copyfile(EXAMPLE, directory / "s.jsonl")
    done = _read_only_run(directory, *args)
    assert done.returncode == 1
    assert named in done.stderr and ".tmp-" not in done.stderr, done.stderr
    assert sorted(p.name for p in directory.iterdir()) == ["s.jsonl"]


# -- 21. Markdown export: raw HTML from the session shows as text ------------------------------------------
def _html_tokens(tokens: list[Any]) -> list[str]:
    found = []
    for token in tokens:
        if token.type in ("html_block", "html_inline"):
            found.append(token.content)
        found += _html_tokens(token.children or [])
    return found


def _code(tokens: list[Any]) -> list[str]:
    found = []
    for token in tokens:
        if token.type in ("fence", "code_block", "code_inline"):
            found.append(token.content)
        found += _code(token.children or [])
    return found


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)


def test_markdown_export_shows_raw_html_as_text_and_keeps_code(tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    from tests.test_export import PAYLOAD, _hostile_session

    path = _hostile_session(tmp_path / "h")
    manager = SessionManager.open(path)
    manager.append_session_info("<b onmouseover=alert(1)>Title</b>")
    manager.append_message(
        {
            "role": "user",
            "content": "Open a fence and leave it open:\n```\nstill code",  # must not swallow the next one
            "timestamp": 4,
        }
    )
    manager.append_message(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "```html\n<div>kept</div>\n```\nInline `<b>` and ``a ` <i>`` and \\<u> stay; "
                    "<!-- a comment --> <img src=x onerror=alert(1)> does not.\n\n"
                    "| a | b |\n|---|---|\n| `x | <script>alert(2)</script> | y` |",
                }
            ],
            "api": "anthropic-messages",
            "provider": "p",
            "model": "<svg onload=alert(3)>",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": "stop",
            "timestamp": 5,
        }
    )
    manager.close()
    out = tmp_path / "h.md"
    code, stdout, stderr = _run("export", str(path), "-f", "md", "-o", str(out))
    assert code == 0, stdout + stderr
    text = out.read_text("utf-8")
    assert text.startswith("# &lt;b onmouseover=alert(1)>Title&lt;/b>\n")
    for viewer in (MarkdownIt("commonmark"), MarkdownIt("commonmark").enable("table")):  # HTML allowed
        tokens = viewer.parse(text)
        assert _html_tokens(tokens) == []
        code_text = "\n".join(_code(tokens))
        assert "<div>kept</div>" in code_text and "<b>" in code_text and "a ` <i>" in code_text
        tags = _Tags()
        tags.feed(viewer.render(text))
        assert tags.seen <= {"h1", "h2", "p", "em", "strong", "code", "pre", "blockquote", "table", "thead",
                             "tbody", "tr", "th", "td", "a"}, tags.seen  # fmt: skip
    assert PAYLOAD.split("<script>")[0] in text  # the text before the tag is kept as written


# -- 22. the depth limit never hides the active path -------------------------------------------------------
def test_tree_depth_keeps_the_active_path_and_its_leaf(session: Path) -> None:
    code, out, _ = _run("tree", str(session), "--depth", "0")
    assert code == 0, out
    rows = out.splitlines()
    assert any(r.startswith("●") and "5e550021" in r for r in rows)  # the leaf
    assert "… 6 entries in branches nested deeper than 0" in out  # the abandoned branch, folded
    assert "5e55000a" not in out
    path = SessionManager.open(session, read_only=True).get_branch()
    assert all(f" {e['id']} " in out for e in path)
    code, out, _ = _run("tree", str(session), "--depth", "0", "--json")
    nodes = [n["id"] for n in json.loads(out)["nodes"]]
    assert [e["id"] for e in path if e["id"] in nodes] == [e["id"] for e in path]
    assert "5e55000a" not in nodes


def test_tree_depth_on_a_deeply_branched_session(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    at = None
    for level in range(4):  # each level: a sibling branch, then the active path nested one deeper
        first = manager.append_message({"role": "user", "content": f"level {level}", "timestamp": level})
        manager.append_message({"role": "user", "content": f"abandoned {level}", "timestamp": level})
        manager.branch(first)
        at = manager.append_message({"role": "user", "content": f"kept {level}", "timestamp": level})
    path = manager.get_session_file()
    manager.close()
    for depth in ("0", "1"):
        code, out, _ = _run("tree", str(path), "--depth", depth)
        assert code == 0, out
        assert all(f"kept {level}" in out for level in range(4)), out
        assert any(r.startswith("●") and str(at) in r for r in out.splitlines())
        assert "abandoned 3" not in out
