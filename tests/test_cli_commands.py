"""The commands a pi user expects from the shell: fork, clone, label, name, stats, latest; ids by prefix or
label; sessions by id, prefix or name; and the CLI's lazy imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app
from tests.test_cli import EXAMPLE

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def example(tmp_path: Path) -> Path:
    target = tmp_path / "project" / EXAMPLE.name
    target.parent.mkdir()
    shutil.copyfile(EXAMPLE, target)
    return target


def test_fork_copies_the_branch_before_a_user_message(example: Path) -> None:
    before = example.read_bytes()
    code, out, err = run("fork", str(example), "--at", "5e550011")
    assert code == 0, err
    new = Path(out.splitlines()[0])
    assert new.parent == example.parent and new != example
    assert "Go with resetting the accumulator" in out  # the message's text, to send again
    assert example.read_bytes() == before
    fork = SessionManager.open(new, read_only=True)
    assert fork.get_header()["parentSession"] == str(example.resolve())  # type: ignore[index]
    source = SessionManager.open(example, read_only=True)
    expected = [e["id"] for e in source.get_branch("5e550010") if e["type"] != "label"]
    assert [e["id"] for e in fork.get_branch() if e["type"] != "label"] == expected
    code, _, err = run("fork", str(example), "--at", "5e550012")
    assert code == 2 and "not" in err and "user message" in err
    first = SessionManager.create(str(example.parent), example.parent / "other")
    root = first.append_message({"role": "user", "content": "hello", "timestamp": 1})
    first.close()
    code, _, err = run("fork", str(first.get_session_file()), "--at", root)
    assert code == 2 and "first entry of its branch" in err  # nothing before it: the fork would be empty


def test_clone_copies_the_active_branch_or_another(example: Path) -> None:
    code, out, _ = run("clone", str(example), "--json")
    assert code == 0
    result = json.loads(out)
    clone = SessionManager.open(result["path"], read_only=True)
    source = SessionManager.open(example, read_only=True)
    assert clone.build_session_context().messages == source.build_session_context().messages
    code, out, _ = run("clone", str(example), "--leaf", "5e55000f")
    abandoned = SessionManager.open(out.strip(), read_only=True)
    assert abandoned.build_session_context().messages == source.build_session_context("5e55000f").messages


def test_label_and_name_append_and_resolve_prefixes_and_labels(example: Path) -> None:
    code, out, _ = run("label", str(example), "5e550020", "tests pass")
    assert code == 0 and "Appended label" in out
    manager = SessionManager.open(example, read_only=True)
    assert manager.get_label("5e550020") == "tests pass"
    code, out, _ = run("show", str(example), "tests pass")  # an id may be a label
    assert code == 0 and json.loads(out)["id"] == "5e550020"
    code, _, err = run("label", str(example), "5e55", "x")
    assert code == 2 and "is the start of 33 entry ids" in err  # ambiguous prefix lists candidates
    code, _, err = run("label", str(example), "5e5", "x")
    assert code == 1 and "at least 4 characters" in err
    assert run("label", str(example), "tests pass", "--clear")[0] == 0
    assert SessionManager.open(example, read_only=True).get_label("5e550020") is None
    code, out, _ = run("name", str(example), "  Parser fixes  ", "--json")
    assert code == 0 and json.loads(out)["name"] == "Parser fixes"
    assert SessionManager.open(example, read_only=True).get_session_name() == "Parser fixes"
    assert run("name", str(example))[0] == 2


def test_stats_counts_roles_tokens_and_cost(example: Path) -> None:
    code, out, _ = run("stats", str(example), "--json")
    assert code == 0
    stats = json.loads(out)
    manager = SessionManager.open(example, read_only=True)
    entries = manager.get_entries()
    assert stats["entries"] == len(entries) == 33
    assert stats["leaves"] == 2 and stats["branchPoints"] == 1 and stats["labels"] == 2
    roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
    assert stats["total"]["byRole"] == {r: roles.count(r) for r in set(roles)}
    usage = [
        e["message"]["usage"]
        for e in entries
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    assert stats["total"]["tokens"]["output"] == sum(u["output"] for u in usage)
    assert stats["total"]["cost"] == pytest.approx(sum(u["cost"]["total"] for u in usage), abs=1e-6)
    path_usage = [
        e["message"]["usage"]
        for e in manager.get_branch()
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    assert stats["activeBranch"]["tokens"]["input"] == sum(u["input"] for u in path_usage)
    code, text, _ = run("stats", str(example))
    assert "whole file:" in text and "active branch (27 entries)" in text


def test_sessions_are_found_by_id_prefix_and_name(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    project = agent / "sessions" / "--home-dev-durations--"
    project.mkdir(parents=True)
    stored = project / example.name
    shutil.copyfile(example, stored)
    session_id = SessionManager.open(stored, read_only=True).get_session_id()
    for ref in (session_id, session_id[:8], "Fix parse_duration accumulator"):
        code, out, err = run("tree", ref, "--limit", "1")
        assert code == 0, err
    code, _, err = run("tree", "no-such-session")
    assert code == 1 and "no session id or name matches it" in err and str(agent / "sessions") in err
    twin = project / "twin.jsonl"
    twin.write_bytes(stored.read_bytes().replace(session_id.encode(), (session_id[:8] + "-twin").encode(), 1))
    code, _, err = run("stats", session_id[:8])
    assert code == 2 and "matches 2 sessions" in err
    code, out, _ = run("latest", "--session-dir", str(project))
    assert code == 0 and out.strip() in (str(stored), str(twin))
    assert run("latest", "--session-dir", str(tmp_path / "empty"))[0] == 1


def test_read_commands_load_no_model_layer(example: Path) -> None:
    probe = (
        "import sys\n"
        "from sessiontree.cli.app import main\n"
        f"sys.argv = ['sessiontree', 'tree', {str(example)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'httpx', 'pydantic') or "
        "m.startswith(('sessiontree.llm', 'sessiontree.compaction', 'sessiontree.export'))]\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env={**os.environ}
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stderr


def test_compaction_defaults_in_help_agree_with_the_library() -> None:
    from sessiontree.cli.compact_cmds import KEEP_RECENT_TOKENS, RESERVE_TOKENS
    from sessiontree.compaction import DEFAULT_COMPACTION_SETTINGS

    assert DEFAULT_COMPACTION_SETTINGS.keep_recent_tokens == KEEP_RECENT_TOKENS
    assert DEFAULT_COMPACTION_SETTINGS.reserve_tokens == RESERVE_TOKENS


def test_a_symlinked_session_is_read_quietly_and_a_write_says_where_it_goes(example: Path) -> None:
    link = example.parent / "link.jsonl"
    link.symlink_to(example)
    for command in (
        ["tree", str(link)],
        ["context", str(link)],
        ["stats", str(link)],
        ["show", str(link), "5e550011"],
    ):
        code, out, err = run(*command)
        assert code == 0 and out, err
        assert "symbolic link" not in err  # a read follows the link: nothing to say
    code, _, err = run("label", str(link), "5e550011", "chosen")
    assert code == 0, err
    assert "symbolic link" in err and str(example.resolve()) in err  # a write says which file it changes
    assert SessionManager.open(example, read_only=True).get_label("5e550011") == "chosen"
    assert link.is_symlink()
