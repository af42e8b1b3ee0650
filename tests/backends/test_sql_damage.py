"""Rows of SQLite and PostgreSQL stores changed behind sessiontree's back with the plain driver: every read ends
(a cycle in the pointers is not walked for ever), gives a ``SessionError`` or reports a problem (never another
exception), reads what the session's file would give once it meets the damage, and ``sessiontree check
--store`` finds all of it, including what no read met.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager, open_repo
from sessiontree.cli import app
from sessiontree.errors import CorruptSessionError, StorageError
from sessiontree.format.pi_json import UNDEFINED, dumps
from sessiontree.storage.repository import Repo
from tests.backends.damage import DAMAGES, Plain, as_file, duplicate_id, huge_line, read_all, read_into, shape
from tests.backends.sql_workers import join_all, start
from tests.builders import assistant, user
from tests.deadline import deadline

runner = CliRunner()


def build(repo: Repo[SessionManager]) -> str:
    """A session with what the pointer columns point at: settings, a compaction that keeps from an entry
    without a retained tail, a label, a side branch; the leaf after the compaction."""
    m = repo.create("/work/project")
    m.append_message(user("one"))
    m.append_model_change("openai", "gpt-test")
    second = m.append_message(assistant("two"))
    m.append_thinking_level_change("high")
    third = m.append_message(user("three"))
    m.append_message(assistant("four"))
    m.append_compaction("the story so far", third, 100, retained_tail=UNDEFINED)
    fifth = m.append_message(user("five"))
    m.append_label_change(second, "mark")
    m.branch(second)
    m.append_message(user("side"))
    m.branch(fifth)
    m.append_message(assistant("six"))
    m.close()
    return m.get_session_id()


@pytest.fixture
def stored(sql_url: str) -> Iterator[tuple[str, str, Plain]]:
    """A store URL, the id of a ``build`` session in it, and a plain connection to its database."""
    with open_repo(sql_url) as repo:
        sid = build(repo)
    plain = Plain(sql_url)
    yield sql_url, sid, plain
    plain.close()


def file_shape(plain: Plain, sid: str, tmp_path: Path) -> dict[str, Any]:
    """What the session's file (its stored header and lines, byte for byte) reads as."""
    manager = SessionManager.open(as_file(plain, sid, tmp_path / "as-file.jsonl"), read_only=True)
    try:
        return shape(manager)
    finally:
        manager.close()


def canon(shape: dict[str, Any]) -> dict[str, str]:
    """Each read's result as JSON text (values nested 1,000 deep compare without recursing)."""
    return {k: dumps(v) for k, v in shape.items()}


def damage_problems(manager: SessionManager) -> list[str]:
    return [p.kind for p in manager.problems if not p.is_note]


def test_an_undamaged_session_reads_as_its_file_and_checks_clean(
    stored: tuple[str, str, Plain], tmp_path: Path
) -> None:
    url, sid, plain = stored
    manager, got = read_all(url, sid)
    assert damage_problems(manager) == []
    assert got == file_shape(plain, sid, tmp_path)
    assert len(got["branch"]) == 9 and got["model"] is not None and got["thinking"] == "high"
    result = runner.invoke(app, ["check", sid, "--store", url])
    assert result.exit_code == 0, result.output
    assert "ok" in result.output


@pytest.mark.parametrize("loop", ["self", "below", "deep"])
def test_a_cycle_in_the_parent_pointers_ends_the_walk_and_is_reported(
    stored: tuple[str, str, Plain], tmp_path: Path, loop: str
) -> None:
    """Defect 5: a row whose parent_seq names itself or a row below it (with depths that keep a walk going)
    made the recursive query of get_branch / build_session_context run for ever."""
    url, sid, plain = stored
    seqs = plain.seqs(sid)
    leaf_seq = seqs[-1]
    target = {"self": 3, "below": leaf_seq, "deep": leaf_seq}[loop]
    plain.set_column(sid, 3, "parent_seq", target)
    if loop == "deep":
        plain.execute("UPDATE st_entries SET depth = depth + 1000000 WHERE session_id = ?", (sid,))
    out = tmp_path / "read.json"
    join_all([start(read_into, url, sid, str(out))], timeout=60)  # SQLite runs an endless query in C
    got = json.loads(out.read_text())
    assert "bad_row" in got["problems"]
    expected = json.loads(json.dumps(file_shape(plain, sid, tmp_path)))
    assert got["shape"] == expected  # the lines say there is no cycle: read as the file reads


ISSUE_DAMAGES = {
    # the issue's list: each read gives a documented SessionError or a reported problem
    "bad_json": lambda p, sid: p.set_line(sid, 5, p.line(sid, 5)[:20]),
    "not_an_object": lambda p, sid: p.set_line(sid, 5, b"[1,2,3]"),
    "nul_bytes": lambda p, sid: p.set_line(sid, 5, p.line(sid, 5).replace(b'"role"', b'"ro\x00le"')),
    "dangling_parent": lambda p, sid: p.set_column(sid, 6, "parent_seq", 999),
    # a setting above the compaction takes the id of a side entry, and the other way round
    "duplicate_ids": lambda p, sid: duplicate_id(p, sid, random.Random(), (9, 3)),
    "duplicate_ids_later": lambda p, sid: duplicate_id(p, sid, random.Random(), (3, 9)),
    "duplicate_on_path": lambda p, sid: duplicate_id(p, sid, random.Random(), (5, 9)),
    "deep_nesting": lambda p, sid: p.set_line(
        sid, 6, p.line(sid, 6)[:-1] + b',"x":' + b"[" * 5000 + b"]" * 5000 + b"}"
    ),
    "deep_role": lambda p, sid: DAMAGES["deep_role"](p, sid, random.Random(1)),
    "bad_problems_column": lambda p, sid: p.execute(
        "UPDATE st_sessions SET problems = '[{' WHERE id = ?", (sid,)
    ),
    "odd_problems_column": lambda p, sid: p.execute(
        "UPDATE st_sessions SET problems = '[1]' WHERE id = ?", (sid,)
    ),
    "compaction_names_nothing": lambda p, sid: p.execute(
        "UPDATE st_entries SET compaction_seq = 999 WHERE session_id = ? AND compaction_seq IS NOT NULL",
        (sid,),
    ),
    "model_names_nothing": lambda p, sid: p.execute(
        "UPDATE st_entries SET model_seq = 999 WHERE session_id = ? AND model_seq IS NOT NULL", (sid,)
    ),
    "seq_gap": lambda p, sid: p.execute("DELETE FROM st_entries WHERE session_id = ? AND seq = 4", (sid,)),
    "last_row_gone": lambda p, sid: p.execute(
        "DELETE FROM st_entries WHERE session_id = ? AND seq = (SELECT MAX(seq) FROM st_entries)", (sid,)
    ),
}
ISSUE_ERRORS = {
    "bad_header": (
        lambda p, sid: p.execute("UPDATE st_sessions SET header = ? WHERE id = ?", (b"{", sid)),
        CorruptSessionError,
    ),
    "header_not_a_header": (
        lambda p, sid: p.execute("UPDATE st_sessions SET header = ? WHERE id = ?", (b"[1]", sid)),
        CorruptSessionError,
    ),
    "future_schema": (
        lambda p, sid: p.execute(
            "INSERT INTO st_schema (version, description, applied_at_ms) VALUES (9, 'x', 0)"
        ),
        StorageError,
    ),
}


@pytest.mark.parametrize("kind", sorted(ISSUE_DAMAGES))
def test_damaged_rows_are_reported_problems_and_read_as_the_file(
    stored: tuple[str, str, Plain], tmp_path: Path, kind: str
) -> None:
    """Defect 6: these gave JSONDecodeError, TypeError, AssertionError or RecursionError (or a silently
    different context); each is now a reported problem, and the reads give what the file gives."""
    url, sid, plain = stored
    ISSUE_DAMAGES[kind](plain, sid)
    with deadline(30):
        manager, got = read_all(url, sid)
        assert damage_problems(manager), f"{kind}: nothing reported"
        assert canon(got) == canon(file_shape(plain, sid, tmp_path))


@pytest.mark.parametrize("kind", sorted(ISSUE_ERRORS))
def test_damage_that_leaves_nothing_to_read_is_a_session_error(
    stored: tuple[str, str, Plain], kind: str
) -> None:
    url, sid, plain = stored
    damage, error = ISSUE_ERRORS[kind]
    damage(plain, sid)
    with open_repo(url) as repo, pytest.raises(error) as raised:
        repo.open(sid, read_only=True)
    assert "sessions.db" in str(raised.value) or "postgresql://" in str(raised.value)  # names the store
    result = runner.invoke(app, ["check", sid, "--store", url])
    assert result.exit_code == 1


def test_a_64_mb_row_reads(stored: tuple[str, str, Plain], tmp_path: Path) -> None:
    url, sid, plain = stored
    plain.set_line(sid, 5, huge_line(64 << 20)(plain.line(sid, 5), random.Random(0)))
    with deadline(120):
        manager, got = read_all(url, sid)
    assert damage_problems(manager) == []  # a big line is not damage
    assert len(json.dumps(manager.get_entries()[4])) > 64 << 20
    assert got["branch"] == file_shape(plain, sid, tmp_path)["branch"]


# What the reads do not meet (or only part of): every one of these said "ok" to `sessiontree check --store`.
CHECKED = {
    "id_column_off_path": lambda p, sid: p.set_column(sid, 10, "id", "renamed"),
    "body_parent_off_path": lambda p, sid: p.set_line(
        sid, 10, p.line(sid, 10).replace(b'"parentId":"', b'"parentId":"x', 1)
    ),
    "parent_seq_off_path": lambda p, sid: p.set_column(sid, 10, "parent_seq", 1),
    "depth": lambda p, sid: p.set_column(sid, 10, "depth", 2),
    "model_seq": lambda p, sid: p.set_column(sid, 10, "model_seq", None),
    "target_id": lambda p, sid: p.execute(
        "UPDATE st_entries SET target_id = 'nowhere' WHERE session_id = ? AND type = 'label'", (sid,)
    ),
    "type_column": lambda p, sid: p.set_column(sid, 1, "type", "custom"),
    "timestamp_column": lambda p, sid: p.set_column(sid, 10, "timestamp", "1999-01-01T00:00:00.000Z"),
    "entry_count": lambda p, sid: p.execute("UPDATE st_sessions SET entry_count = 3 WHERE id = ?", (sid,)),
    "message_count": lambda p, sid: p.execute(
        "UPDATE st_sessions SET message_count = 1 WHERE id = ?", (sid,)
    ),
    "name": lambda p, sid: p.execute("UPDATE st_sessions SET name = 'renamed' WHERE id = ?", (sid,)),
    "first_message": lambda p, sid: p.execute(
        "UPDATE st_sessions SET first_message = 'x' WHERE id = ?", (sid,)
    ),
    "irregular_flag": lambda p, sid: (
        duplicate_id(p, sid, random.Random(), (4, 9)),
        p.execute("UPDATE st_sessions SET irregular = 0 WHERE id = ?", (sid,)),
    ),
    "missing_row": lambda p, sid: p.execute(
        "DELETE FROM st_entries WHERE session_id = ? AND seq = 10", (sid,)
    ),
    "bad_line": lambda p, sid: p.set_line(sid, 10, b"{"),
}


@pytest.mark.parametrize("kind", sorted(CHECKED))
def test_check_of_a_stored_session_verifies_every_row(stored: tuple[str, str, Plain], kind: str) -> None:
    """Defect 7: `sessiontree check --store URL ID` checks each row's line against its key columns and its
    pointers, and the session row's counts, as the file check checks a file."""
    url, sid, plain = stored
    CHECKED[kind](plain, sid)
    result = runner.invoke(app, ["check", sid, "--store", url, "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["ok"] is False and report["problems"]
    assert all(sid in p["message"] for p in report["problems"])
