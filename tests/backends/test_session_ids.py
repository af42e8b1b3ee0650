"""Session ids on the way into every store: one rule (pi's for custom session ids) on create, import, copy and
fork, so that every stored session can be named as ``STORE#ID``, opened, copied and deleted; and names that no
store can hold (a NUL, a lone surrogate) are simply not found, never an error of the database driver.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree.cli import app
from sessiontree.errors import SessionError, SessionNotFoundError
from sessiontree.session.store_access import open_repo
from tests.backends.conftest import Backend
from tests.builders import user

runner = CliRunner()

BAD_IDS = {
    "hash": "abc#def",
    "ends_in_hash": "abc#",
    "empty": "",
    "lone_surrogate": "ab\ud800cd",
    "nul": "ab\x00cd",
    "slash": "../../escape",
    "space": "two words",
    "leading_dot": ".hidden",
    "newline": "abc\n",
}


def header_block(session_id: str) -> bytes:
    """A session header as pi writes it (a lone surrogate escaped as JavaScript does)."""
    return json.dumps(
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/w",
        },
        ensure_ascii=True,
    ).encode()


def entry_line(entry_id: str) -> bytes:
    message = {"role": "user", "content": "hi", "timestamp": 1}
    return json.dumps(
        {
            "type": "message",
            "id": entry_id,
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": message,
        }
    ).encode()


@pytest.mark.parametrize("name", sorted(BAD_IDS))
def test_an_import_with_an_id_no_store_can_name_is_refused(backend: Backend, name: str) -> None:
    """Defect 9: a lone surrogate gave UnicodeEncodeError on SQLite and PostgreSQL; '#' and the others were
    stored under names that cannot be given back as URL#ID (or, for files, as a file name)."""
    bad = BAD_IDS[name]
    before = [info.id for info in backend.repo.list()]
    with pytest.raises(SessionError) as raised:
        backend.repo.import_session(header_block(bad), [entry_line("e1")])
    assert raised.value.kind == "invalid_session"
    assert repr(bad) in str(raised.value) and "alphanumeric" in str(raised.value)
    assert [info.id for info in backend.repo.list()] == before  # nothing was stored


@pytest.mark.parametrize("name", ["hash", "lone_surrogate", "empty", "nul"])
def test_create_and_fork_refuse_such_ids_on_every_store(backend: Backend, name: str) -> None:
    bad = BAD_IDS[name]
    with pytest.raises(ValueError, match="Session id must be non-empty"):
        backend.repo.create("/w", id=bad)
    source = backend.create()
    source.append_message(user("hello"))
    with pytest.raises(ValueError, match="Session id must be non-empty"):
        backend.repo.fork(source.get_session_id(), id=bad)


def test_copy_of_a_file_with_such_an_id_says_why_and_stores_nothing(tmp_path: Path, sql_url: str) -> None:
    source = tmp_path / "odd.jsonl"
    source.write_bytes(header_block("abc#def") + b"\n" + entry_line("e1") + b"\n")
    result = runner.invoke(app, ["copy", str(source), sql_url])
    assert result.exit_code == 1, result.output
    assert "cannot store this session" in result.output and "'abc#def'" in result.output
    assert "Traceback" not in result.output
    if sql_url.startswith("sqlite:"):
        assert not (tmp_path / "sessions.db").exists()  # refused before anything was made
    else:
        with open_repo(sql_url) as repo:
            assert repo.list() == []


@pytest.mark.parametrize("name", ["nul", "lone_surrogate"])
def test_names_no_store_can_hold_are_not_found(sql_backend: Backend, name: str) -> None:
    """Looking up, opening or deleting such a name is "not found" (PostgreSQL refused the NUL in the query,
    SQLite's driver the surrogate), never a driver error."""
    bad = BAD_IDS[name]
    kept = sql_backend.create()
    kept.append_message(user("hello"))
    with pytest.raises(SessionNotFoundError):
        sql_backend.repo.open(bad)
    with pytest.raises(SessionNotFoundError):
        sql_backend.repo.resolve(bad)  # type: ignore[attr-defined]
    sql_backend.repo.delete(bad)
    assert kept.get_session_id() in [info.id for info in sql_backend.repo.list()]


def test_every_stored_id_can_be_named_opened_copied_and_deleted(tmp_path: Path, sql_url: str) -> None:
    """What the rule admits goes all the way round: URL#ID names it, a copy keeps it, delete removes it."""
    with open_repo(sql_url) as repo:
        manager = repo.create("/w", id="My.custom-id_1")
        manager.append_message(user("hello"))
        manager.close()
    target = tmp_path / "copied.jsonl"
    result = runner.invoke(app, ["copy", f"{sql_url}#My.custom-id_1", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_bytes().split(b"\n")[0])["id"] == "My.custom-id_1"
    with open_repo(sql_url) as repo:
        repo.delete("My.custom-id_1")
        assert repo.list() == []
