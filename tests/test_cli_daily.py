"""The command line as a daily tool: ids that tell sessions apart, one rule for files without a header,
directories that must exist, when a session last changed, and hints that fit the file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree.cli import app
from sessiontree.session.lookup import shortest_unique_prefixes

HEADER = '{"type":"session","version":3,"id":"%s","timestamp":"%s","cwd":"%s"}'


def _session(directory: Path, sid: str, *, stamp: str = "2025-01-01T00:00:00.000Z", cwd: str = "/w") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stamp.replace(':', '-').replace('.', '-')}_{sid}.jsonl"
    message = (
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2024-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hello SID","timestamp":1704067201000}}'
    ).replace("SID", sid)
    path.write_text(HEADER % (sid, stamp, cwd) + "\n" + message + "\n")
    return path


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_shortest_unique_prefixes_are_at_least_eight_and_tell_ids_apart() -> None:
    ids = ["0192abcd-1111-7000", "0192abcd-2222-7000", "0192abce-0000", "ffff0000aaaa"]
    shown = shortest_unique_prefixes(ids)
    assert shown == {
        "0192abcd-1111-7000": "0192abcd-1",
        "0192abcd-2222-7000": "0192abcd-2",
        "0192abce-0000": "0192abce",
        "ffff0000aaaa": "ffff0000",
    }
    assert len(set(shown.values())) == len(ids)


def test_list_and_search_show_prefixes_that_name_one_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    project = store / "--w--"
    _session(project, "0192abcd-1111-7000-8000-000000000001")
    _session(project, "0192abcd-2222-7000-8000-000000000002")
    code, out = _run("list", "--session-dir", str(project))
    assert code == 0, out
    assert "0192abcd-1 " in out and "0192abcd-2 " in out
    code, out = _run("search", "hello", "--store", f"jsonl:{store}")
    assert code == 0, out
    assert "0192abcd-1 " in out and "0192abcd-2 " in out
    assert str(project) in out  # each hit names its session file
    code, out = _run("tree", "0192abcd-2", "--store", f"jsonl:{store}")
    assert code == 0, out
    assert "hello 0192abcd-2222" in out


@pytest.mark.parametrize("content", [b"", b"  \n\n"])
@pytest.mark.parametrize("command", ["tree", "context", "stats", "export", "check"])
def test_a_file_without_a_header_is_an_error_for_every_command(
    tmp_path: Path, command: str, content: bytes
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    extra = ["-o", str(tmp_path / "out.html")] if command == "export" else []
    code, out = _run(command, str(path), *extra)
    assert code == 1, out
    assert "no session header, no entries" in out
    codes = {_run(c, str(path))[0] for c in ("tree", "stats")}
    assert codes == {1}
    assert path.read_bytes() == content and not (tmp_path / "out.html").exists()


def test_stats_of_a_damaged_file_never_makes_up_an_id(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    first, second = _run("stats", str(path)), _run("stats", str(path))
    assert first == second and "session:" not in first[1]


@pytest.mark.parametrize("command", ["list", "latest"])
def test_a_session_directory_must_exist_and_be_a_directory(tmp_path: Path, command: str) -> None:
    code, out = _run(command, "--session-dir", str(tmp_path / "nope"))
    assert code == 1 and "no such directory" in out
    file = _session(tmp_path / "d", "s1")
    code, out = _run(command, "--session-dir", str(file))
    assert code == 1 and "not a directory" in out


def test_list_shows_when_a_session_last_changed(tmp_path: Path) -> None:
    project = tmp_path / "p"
    old = _session(project, "old-session", stamp="2025-01-01T00:00:00.000Z")
    fork = _session(project, "fork-today", stamp="2025-01-02T00:00:00.000Z")  # old entries, a new header
    os.utime(old, (time.time() - 86400 * 400,) * 2)
    code, out = _run("list", "--session-dir", str(project))
    assert code == 0, out
    rows = [line for line in out.splitlines() if "session" in line and "jsonl" in line]
    assert "fork-today" in rows[0] and "old-sess" in rows[1]  # newest change first
    today = time.strftime("%Y-%m-%d", time.gmtime(fork.stat().st_mtime))
    assert rows[0].startswith(today)
    assert not rows[1].startswith("2024-01-01")  # not the last message's time: the header is later
    code, out = _run("list", "--help")
    assert "CHANGED is when the session last changed" in " ".join(out.split())


def test_list_all_of_a_database_store_has_no_note_about_files(tmp_path: Path) -> None:
    source = _session(tmp_path / "d", "in-db")
    url = f"sqlite:///{tmp_path}/s.db"
    assert _run("copy", str(source), url)[0] == 0
    code, out = _run("list", "--all", "--store", url)
    assert code == 0 and "in-db" in out
    assert "--paths prints the files" not in out
    code, out = _run("list", "--all", "--session-dir", str(tmp_path / "d"))
    assert "--paths prints the files" in out


def test_hints_fit_the_file(tmp_path: Path) -> None:
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(200))
    code, out = _run("tree", str(png))
    assert code == 1 and "not a session file" in out and "--repair" not in out
    code, out = _run("check", "--repair", str(png))
    assert code == 1 and "not a session file" in out and "check --repair --force" in out
    damaged = tmp_path / "damaged.jsonl"
    body = _session(tmp_path / "d", "s2").read_text().split("\n", 1)[1]
    damaged.write_text('{"type":"sessio\n' + body)
    code, out = _run("tree", str(damaged))
    assert code == 1 and "`sessiontree check --repair` can recover its entries" in out
