"""``sessiontree compact`` and ``sessiontree branch`` through the typer app, with the offline summarizer;
and compaction of every conformance session (copies), re-opened and read both ways."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli.app import app
from sessiontree.compaction import CompactionError, CompactionSettings, compact_session
from sessiontree.errors import SessionError
from sessiontree.tree.context import build_session_context
from tests.compaction.support import REALISTIC_GOAL, assistant_msg, realistic_messages, user_msg
from tests.conftest import list_cases, require_conformance

runner = CliRunner()


@pytest.fixture(autouse=True)
def no_configured_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONTREE_MODEL", raising=False)


def make_session(tmp_path: Path, turns: int = 3) -> tuple[Path, dict[str, str]]:
    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    ids: dict[str, str] = {}
    for message in realistic_messages():
        manager.append_message(message)
    for i in range(turns):
        ids[f"u{i}"] = manager.append_message(user_msg(f"follow-up {i} " + "f" * 400))
        ids[f"a{i}"] = manager.append_message(assistant_msg(f"reply {i} " + "r" * 400))
    path = Path(str(manager.get_session_file()))
    manager.close()
    return path, ids


def test_compact_appends_a_compaction_and_refuses_a_second_one(tmp_path: Path) -> None:
    path, _ = make_session(tmp_path)
    result = runner.invoke(app, ["compact", str(path), "--keep-recent-tokens", "200", "--focus", "retries"])
    assert result.exit_code == 0, result.output
    assert "Appended compaction" in result.output and "offline summarizer" in result.output
    manager = SessionManager.open(path, read_only=True)
    entry = manager.get_leaf_entry()
    assert entry is not None and entry["type"] == "compaction"
    assert REALISTIC_GOAL in entry["summary"] and "retries" in entry["summary"]
    assert isinstance(entry["retainedTail"], list) and entry["retainedTail"]
    before = path.read_bytes()
    again = runner.invoke(app, ["compact", str(path), "--offline"])
    assert again.exit_code == 0 and "Already compacted: nothing was written" in again.output
    assert path.read_bytes() == before


def test_compact_reports_nothing_to_compact_and_leaves_the_file_alone(tmp_path: Path) -> None:
    path, _ = make_session(tmp_path, turns=0)
    before = path.read_bytes()
    result = runner.invoke(app, ["compact", str(path), "--offline"])
    assert result.exit_code == 0 and "Nothing to compact" in result.output  # not a usage error
    assert path.read_bytes() == before
    as_json = runner.invoke(app, ["compact", str(path), "--offline", "--json"])
    assert as_json.exit_code == 0 and as_json.stdout.splitlines()[0] == "null"


def test_compact_json_and_leaf_option(tmp_path: Path) -> None:
    path, ids = make_session(tmp_path)
    result = runner.invoke(
        app, ["compact", str(path), "--leaf", ids["a1"], "--keep-recent-tokens", "100", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert f'"parentId":"{ids["a1"]}"' in result.output and '"type":"compaction"' in result.output


def test_unknown_model_is_an_error(tmp_path: Path) -> None:
    path, _ = make_session(tmp_path)
    result = runner.invoke(app, ["compact", str(path), "--model", "nobody/no-such-model"])
    assert result.exit_code == 2 and "Unknown model" in result.output


def test_branch_with_summary_records_the_abandoned_leaf(tmp_path: Path) -> None:
    path, ids = make_session(tmp_path)
    old_leaf = SessionManager.open(path, read_only=True).get_leaf_id()
    result = runner.invoke(app, ["branch", str(path), "--to", ids["u1"], "--summarize", "--focus", "tests"])
    assert result.exit_code == 0, result.output
    assert "Appended branch_summary" in result.output and "follow-up 1" in result.output
    manager = SessionManager.open(path, read_only=True)
    entry = manager.get_leaf_entry()
    assert entry is not None and entry["type"] == "branch_summary"
    assert (entry["parentId"], entry["fromId"]) == (ids["a0"], old_leaf)
    assert "## Why Abandoned" in entry["summary"]
    roles = [m["role"] for m in manager.build_session_context().messages]
    assert roles[-1] == "branchSummary"


def test_branch_without_summary_writes_nothing(tmp_path: Path) -> None:
    path, ids = make_session(tmp_path)
    before = path.read_bytes()
    result = runner.invoke(app, ["branch", str(path), "--to", ids["a0"]])
    assert result.exit_code == 0 and "Nothing was written" in result.output
    assert path.read_bytes() == before
    bad = runner.invoke(app, ["branch", str(path), "--to", ids["a0"], "--focus", "x"])
    assert bad.exit_code == 2 and "need --summarize" in bad.output
    missing = runner.invoke(app, ["branch", str(path), "--to", "nope"])
    assert missing.exit_code == 1 and "Entry nope not found" in missing.output


@pytest.mark.parametrize("case", list_cases("cases"))
def test_every_conformance_session_compacts_and_reopens(case: str, tmp_path: Path) -> None:
    source = require_conformance() / "cases" / case / "session.jsonl"
    if not source.is_file():
        pytest.skip(f"{case} has no session.jsonl")
    copy = tmp_path / "session.jsonl"
    copy.write_bytes(source.read_bytes())
    try:
        manager = SessionManager.open(copy)
    except SessionError:
        pytest.skip(f"{case}: sessiontree refuses to open this file (a damaged header)")
    try:
        entry = anyio.run(
            lambda: compact_session(manager, settings=CompactionSettings(keep_recent_tokens=200))
        )
    except CompactionError as error:
        assert error.kind in ("nothing_to_compact", "already_compacted")
        return
    manager.append_message(user_msg("after the compaction"))
    manager.close()
    reopened = SessionManager.open(copy, read_only=True)
    messages = reopened.build_session_context().messages
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == entry["summary"]
    assert messages[1 : 1 + len(entry["retainedTail"])] == entry["retainedTail"]
    assert messages[-1]["content"][0]["text"] == "after the compaction"
    # Read through firstKeptEntryId (as pi reads it), the context is the same.
    stripped = [{k: v for k, v in e.items() if k != "retainedTail"} for e in reopened.get_entries()]
    assert build_session_context(stripped, reopened.get_leaf_id()).messages == messages
