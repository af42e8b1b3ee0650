"""The command line, run in-process on real files: every command's output and exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "coding-session.jsonl"
runner = CliRunner()


@pytest.fixture
def session(tmp_path: Path) -> Path:
    target = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, target)
    return target


def test_tree_shows_labels_and_active_path(session: Path) -> None:
    result = runner.invoke(app, ["tree", str(session)])
    assert result.exit_code == 0, result.output
    assert "[task]" in result.output and "[green]" in result.output
    leaf = SessionManager.open(session, read_only=True).get_leaf_id()
    assert "● " in result.output and f" {leaf} " in result.output
    assert any(line.startswith("●") and leaf in line for line in result.output.splitlines())
    assert "Fix parse_duration accumulator" in result.output


def test_tree_json_lists_every_entry(session: Path) -> None:
    result = runner.invoke(app, ["tree", str(session), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    manager = SessionManager.open(session, read_only=True)
    assert [n["id"] for n in data["nodes"]] != []
    assert sorted(n["id"] for n in data["nodes"]) == sorted(e["id"] for e in manager.get_entries())
    assert data["leafId"] == manager.get_leaf_id()


def test_context_json_equals_library(session: Path) -> None:
    manager = SessionManager.open(session, read_only=True)
    result = runner.invoke(app, ["context", str(session), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(json.dumps(manager.build_session_context().to_dict()))
    first = manager.get_entries()[2]["id"]
    at = runner.invoke(app, ["context", str(session), "--leaf", first, "--json"])
    assert json.loads(at.output)["messages"] == [manager.get_entries()[2]["message"]]
    missing = runner.invoke(app, ["context", str(session), "--leaf", "nope"])
    assert missing.exit_code == 1 and "Entry nope not found" in missing.output


def test_show_prints_entry_and_fails_for_unknown_id(session: Path) -> None:
    manager = SessionManager.open(session, read_only=True)
    entry = manager.get_entries()[0]
    result = runner.invoke(app, ["show", str(session), entry["id"]])
    assert result.exit_code == 0
    assert json.loads(result.output) == entry
    assert runner.invoke(app, ["show", str(session), "zzz"]).exit_code == 1


def test_check_reports_damage_and_repair_keeps_data(session: Path) -> None:
    assert runner.invoke(app, ["check", str(session)]).exit_code == 0
    lines = session.read_bytes().split(b"\n")
    lines.insert(5, b'{"type":"message","id":"broken",')
    session.write_bytes(b"\n".join(lines) + b'{"type":"message","id":"torn","par')
    before = session.read_bytes()
    result = runner.invoke(app, ["check", str(session)])
    assert result.exit_code == 1
    assert "line 6" in result.output
    assert session.read_bytes() == before  # check without --repair never writes
    repaired = runner.invoke(app, ["check", str(session), "--repair"])
    assert repaired.exit_code == 0, repaired.output
    manager = SessionManager.open(session, read_only=True)
    assert len(manager.get_entries()) == 33
    assert manager.problems == []
    kept_aside = [p for p in session.parent.iterdir() if p.name != session.name]
    assert kept_aside, "the damaged original must be kept aside"
    assert any(b'"id":"broken"' in p.read_bytes() or b'"id":"torn"' in p.read_bytes() for p in kept_aside)


def test_list_finds_sessions_in_a_directory(session: Path) -> None:
    result = runner.invoke(app, ["list", "--all", "--session-dir", str(session.parent), "--json"])
    assert result.exit_code == 0, result.output
    infos = json.loads(result.output)
    assert [i["name"] for i in infos] == ["Fix parse_duration accumulator"]
    assert infos[0]["firstMessage"].startswith("The test test_parse_duration_resets_number fails")


def test_demo_runs_the_tour_without_touching_the_original(session: Path, tmp_path: Path) -> None:
    before = session.read_bytes()
    work = tmp_path / "work"
    result = runner.invoke(app, ["demo", str(session), "--workdir", str(work)])
    assert result.exit_code == 0, result.output
    assert "context after re-open identical: yes" in result.output
    assert session.read_bytes() == before
    copy = SessionManager.open(work / session.name, read_only=True)
    kinds = [e["type"] for e in copy.get_entries()]
    assert kinds.count("compaction") == 2 and kinds.count("branch_summary") == 2
