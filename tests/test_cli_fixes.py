"""The command line on the files a new user hit trouble with: each test is one defect of the first CLI
(crashes on pi's own files, markup in JSON, raw escape sequences, writes before validation, lost file modes,
repairs of non-sessions, tracebacks, silent damage, unreadable trees and contexts, listings, help texts)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app
from tests.conftest import require_conformance
from tests.test_cli import EXAMPLE

runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def cli_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real program (``python -m sessiontree``), with a real stdout."""
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def example(tmp_path: Path) -> Path:
    target = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, target)
    return target


def _session(tmp_path: Path, *texts: str, tool_output: str = "ok") -> tuple[Path, list[str]]:
    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    ids = []
    for i, text in enumerate(texts):
        ids.append(manager.append_message({"role": "user", "content": text, "timestamp": 10 + i}))
        ids.append(
            manager.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": f"c{i}",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": tool_output}],
                    "isError": False,
                    "timestamp": 11 + i,
                }
            )
        )
    path = Path(str(manager.get_session_file()))
    manager.close()
    return path, ids


V1 = (
    '{"type":"session","id":"v1-session","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
    '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":'
    '[{"type":"text","text":"hello"}],"timestamp":2}}\n'
)


# -- 1. lone surrogates ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["tree", "context", "show"])
def test_1_read_commands_show_lone_surrogates_escaped(command: str, tmp_path: Path) -> None:
    source = require_conformance() / "cases" / "edge-json-numbers-unicode" / "session.jsonl"
    copy = tmp_path / "s.jsonl"
    shutil.copyfile(source, copy)
    manager = SessionManager.open(copy, read_only=True)
    args = [command, str(copy)]
    if command == "show":
        hit = next(e for e in manager.get_entries() if "\\ud800" in json.dumps(e))
        args.append(hit["id"])
    result = runner.invoke(app, args)  # in-process: the defect was in what the commands write
    assert result.exit_code == 0 and "\\ud800" in result.stdout, result.output
    done = cli_process(*args, env={"PYTHONIOENCODING": "utf-8"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "\\ud800" in done.stdout


# -- 2. JSON output is plain JSON, human text is never markup ---------------------------------------------
def test_2_json_output_keeps_brackets_that_look_like_markup(tmp_path: Path) -> None:
    path, ids = _session(tmp_path, "[x] ticked [bold]item[/bold] and [/]", "second " + "y" * 500)
    manager = SessionManager.open(path)
    manager.append_label_change(ids[0], "[/]")
    manager.close()
    code, out, _ = run("tree", str(path), "--json")
    assert code == 0
    labelled = next(n for n in json.loads(out)["nodes"] if n["id"] == ids[0])
    assert labelled["label"] == "[/]"
    code, out, _ = run("tree", str(path))
    assert code == 0 and "[/]" in out and "[bold]item[/bold]" in out
    code, out, _ = run("compact", str(path), "--offline", "--json", "--keep-recent-tokens", "10")
    assert code == 0, out
    printed = json.loads(out)
    stored = SessionManager.open(path, read_only=True).get_entry(printed["id"])
    assert printed == stored and "[x]" in printed["summary"]


# -- 3. control characters and escape sequences -----------------------------------------------------------
def test_3_escape_sequences_are_shown_escaped(tmp_path: Path) -> None:
    path, _ = _session(tmp_path, "clear \x1b[2J the screen\x00", tool_output="\x1b[31mred\x1b[0m \x07 \x9b2J")
    for command in ("tree", "context", "stats", "list"):
        args = [command, str(path)] if command != "list" else ["list", "--session-dir", str(path.parent)]
        code, out, err = run(*args)
        assert code == 0, err
        assert not any(c in out + err for c in "\x1b\x00\x07\x9b"), command
    _, tree, _ = run("tree", str(path))
    assert "\\x1b[2J" in tree and "\\x00" in tree
    _, full, _ = run("context", str(path), "--full")
    assert "\\x1b[31mred\\x1b[0m" in full and "\\x9b2J" in full
    _, as_json, _ = run("context", str(path), "--json")
    assert "\x9b" not in as_json and json.loads(as_json)["messages"][1]["content"][0]["text"].endswith(
        "\x9b2J"
    )


# -- 4. validate before writing -----------------------------------------------------------------------------
def test_4_a_bad_argument_leaves_an_old_file_unmigrated(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(V1, "utf-8")
    for args in (["branch", str(path), "--to", "nosuch"], ["label", str(path), "nosuch", "x"]):
        code, _, err = run(*args)
        assert code == 1 and "nosuch not found" in err
    assert path.read_text("utf-8") == V1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]  # no backup: nothing was migrated
    code, out, err = run("name", str(path), "Old session")
    assert code == 0, err
    assert "migrated from version 1 to 3" in err and str(path) + ".v1.bak" in err
    assert (tmp_path / "old.jsonl.v1.bak").read_text("utf-8") == V1
    assert "name 'Old session'" in out


# -- 5. rewrites keep the file's mode -----------------------------------------------------------------------
def test_5_migration_and_repair_keep_the_mode_new_files_are_private(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(V1, "utf-8")
    os.chmod(old, 0o644)
    assert run("name", str(old), "kept mode")[0] == 0
    assert stat.S_IMODE(old.stat().st_mode) == 0o644
    damaged, _ = _session(tmp_path, "one", "two")
    lines = damaged.read_bytes().split(b"\n")
    lines.insert(2, b'{"broken')
    damaged.write_bytes(b"\n".join(lines))
    os.chmod(damaged, 0o640)
    assert run("check", str(damaged), "--repair")[0] == 0
    assert stat.S_IMODE(damaged.stat().st_mode) == 0o640
    code, out, _ = run("clone", str(damaged))
    assert code == 0 and stat.S_IMODE(Path(out.strip()).stat().st_mode) == 0o600


# -- 6. repair refuses what is not a session ----------------------------------------------------------------
@pytest.mark.parametrize("content", [os.urandom(3000), b'{"a":1}\n{"a":2}\n{"a":3}\n'])
def test_6_repair_refuses_a_file_that_is_not_a_session(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(content)
    code, out, err = run("check", str(path), "--repair")
    assert code == 1 and "not a session file" in err and "--repair --force" in err
    assert path.read_bytes() == content and list(tmp_path.iterdir()) == [path]
    code, out, _ = run("check", str(path), "--repair", "--force", "--json")
    report = json.loads(out)
    assert report["repair"]["movedAside"] and Path(report["repair"]["movedAside"][0]).read_bytes() == content
    assert "RepairReport(" not in out


def test_6_repair_report_is_text(example: Path) -> None:
    example.write_bytes(example.read_bytes() + b'{"type":"message","id":"torn","par')
    code, out, _ = run("check", str(example), "--repair")
    assert (
        code == 0 and out.startswith("repair: moved the torn last line 35 to ") and "RepairReport" not in out
    )
    assert out.splitlines()[-1] == f"ok {example}"


# -- 7. one clear message per failure, one exit code table ---------------------------------------------------
def test_7_missing_files_and_directories_get_one_line(tmp_path: Path) -> None:
    for command in ("check", "tree", "compact", "branch", "stats"):
        extra = ["--to", "x"] if command == "branch" else []
        code, _out, err = run(command, str(tmp_path / "missing.jsonl"), *extra)
        assert code == 1 and err.strip() == f"error: {tmp_path / 'missing.jsonl'}: no such session file", (
            command
        )
        code, _, err = run(command, str(tmp_path), *extra)
        assert code == 1 and err.strip() == f"error: {tmp_path}: is a directory, not a session file", command
    code, _, err = run("compact", str(tmp_path), "--offline", "--model", "openai/gpt-5")
    assert code == 2 and "--model and --offline" in err


# -- 8. damage is not silent ---------------------------------------------------------------------------------
def test_8_damage_is_reported_outside_check(example: Path, tmp_path: Path) -> None:
    example.write_bytes(example.read_bytes() + b'{"type":"message","id":"torn","par')
    code, _, err = run("tree", str(example))
    assert code == 0 and "warning:" in err and "torn" in err
    code, _, err = run("label", str(example), "5e550021", "done")
    assert code == 0 and f"moved to {example}.torn-1" in err
    cycle = tmp_path / "cycle.jsonl"
    cycle.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"custom","id":"a","parentId":"b","timestamp":"2025-01-01T00:00:01.000Z","customType":"x"}\n'
        '{"type":"custom","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","customType":"x"}\n',
        "utf-8",
    )
    code, _, err = run("context", str(cycle))
    assert code == 0 and "parent cycle" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, out, _ = run("check", str(empty))
    assert code == 1 and "the file is empty" in out


# -- 9. trees that fit the terminal ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def branchy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(REPO))
    try:
        from bench.generate import generate_session
    finally:
        sys.path.remove(str(REPO))
    path = tmp_path_factory.mktemp("bench") / "s.jsonl"
    generate_session(path, 3_000, seed=5)
    return path


def test_9_tree_fits_the_width_with_connectors(branchy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.format.safe_text import cell_width

    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run("tree", str(branchy))
    assert code == 0
    rows = out.splitlines()[:-2]
    assert len(rows) == 3_000
    assert max(cell_width(r) for r in rows) <= 80
    assert any("├─ " in r for r in rows) and any("└─ " in r for r in rows)
    manager = SessionManager.open(branchy, read_only=True)
    path = manager.get_branch()
    code, out, _ = run("tree", str(branchy), "--active")
    assert len(out.splitlines()) == len(path) + 2 and f"{len(path)} entries on the active path" in out
    code, out, _ = run("tree", str(branchy), "--depth", "0")
    assert "in branches nested deeper than 0" in out and len(out.splitlines()) < 3_000
    code, out, _ = run("tree", str(branchy), "--limit", "5")
    assert len(out.splitlines()) == 8 and "2995 more entries" in out
    code, out, _ = run("tree", str(branchy), "--json", "--limit", "3")
    nodes = json.loads(out)["nodes"]
    assert [set(n) >= {"role", "preview", "timestamp"} for n in nodes] == [True] * 3


def test_9_duplicate_ids_make_a_linear_tree(tmp_path: Path) -> None:
    lines = ['{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}']
    for i in range(30):
        parent = "null" if i == 0 else f'"n{i - 1}"'
        line = f'{{"type":"custom","id":"n{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:0{i % 10}.000Z","customType":"x"}}'
        lines += [line, line]
    path = tmp_path / "dups.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    done = cli_process("tree", str(path))  # 2^30 rows if the walk followed every copy
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 32


# -- 10. context, one line per message --------------------------------------------------------------------------
def test_10_context_prints_one_line_per_message_and_a_token_total(example: Path) -> None:
    messages = SessionManager.open(example, read_only=True).build_session_context().messages
    code, out, _ = run("context", str(example))
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(messages) + 2
    assert lines[-1].startswith(f"{len(messages)} messages, ~") and "tokens" in lines[-1]
    _, full, _ = run("context", str(example), "--full")
    assert messages[0]["summary"] in full


# -- 11. list ------------------------------------------------------------------------------------------------------
def test_11_list_shows_paths_and_where_it_looked(example: Path, tmp_path: Path) -> None:
    code, out, _ = run("list", "--session-dir", str(example.parent))
    assert code == 0 and str(example) in out  # another project's session, listed without --all
    assert run("list", "--session-dir", str(example.parent), "--paths")[1] == f"{example}\n"
    empty = tmp_path / "nothing"
    empty.mkdir()
    code, out, _ = run("list", "--session-dir", str(empty))
    assert code == 0 and out.strip() == f"No sessions found in {empty}."


# -- 12. help, version, python -m -----------------------------------------------------------------------------------
def test_12_version_help_and_module_entry() -> None:
    from sessiontree import __version__

    assert run("--version")[1] == f"sessiontree {__version__}\n"
    done = cli_process("-h")
    assert done.returncode == 0 and "Exit codes: 0 ok" in done.stdout
    for command in (
        "list",
        "tree",
        "context",
        "show",
        "stats",
        "check",
        "fork",
        "clone",
        "label",
        "name",
        "export",
        "compact",
        "branch",
        "demo",
        "latest",
    ):
        code, out, _ = run(command, "-h")
        assert code == 0 and "<bool>" not in out and "Exit codes" in out, command
    assert "appends to FILE" in run("branch", "--help")[1]
    assert "FILE is not changed" in run("fork", "--help")[1]


def test_12_a_bare_branch_says_nothing_was_written(example: Path) -> None:
    before = example.read_bytes()
    code, out, _ = run("branch", str(example), "--to", "5e550011")
    assert code == 0 and example.read_bytes() == before
    assert "Nothing was written" in out and "--summarize" in out and "--persist-leaf" in out
    assert "editor" not in out.lower()


# -- 13. demo from a wheel --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_13_demo_runs_from_a_wheel_outside_the_repository(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("sessiontree-*.whl")
    target = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done = cli_process("demo", cwd=outside, env={"PYTHONPATH": str(target), "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    assert "context after re-open identical: yes" in done.stdout
    assert "1 model messages" not in done.stdout and "was removed" in done.stdout
    assert list(outside.iterdir()) == []
    where = cli_process("--version", cwd=outside, env={"PYTHONPATH": str(target)})
    assert where.returncode == 0
    probe = subprocess.run(
        [sys.executable, "-c", "import sessiontree; print(sessiontree.__file__)"],
        capture_output=True, text=True, cwd=outside, env={**os.environ, "PYTHONPATH": str(target)},
    )  # fmt: skip
    assert probe.stdout.startswith(str(target))


def test_13_demo_token_figure_agrees_with_compact(example: Path, tmp_path: Path) -> None:
    code, out, _ = run("demo", str(example), "--workdir", str(tmp_path / "work"))
    assert code == 0
    compacted = SessionManager.open(tmp_path / "work" / example.name, read_only=True)
    first = next(
        e for e in compacted.get_entries() if e["type"] == "compaction" and e["id"] not in example.read_text()
    )
    assert f"~{first['tokensBefore']} tokens before" in out
    assert "kept in" in out
