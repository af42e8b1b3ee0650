"""``copy`` at its edges: a session of a header alone, a torn header, what a lossy copy loses (CRLF line
endings included) and how that record travels on, and ``copy --all`` when some sessions cannot be copied."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree import CorruptSessionError, SessionError
from sessiontree.cli import app
from sessiontree.session.copying import copy_session, read_source
from sessiontree.session.store_access import shared_repo

HEADER = b'{"type":"session","version":3,"id":"%s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'


def _message(entry_id: str, parent: str | None, text: str = "x") -> bytes:
    p = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{p},"timestamp":"2025-01-01T00:00:01.000Z",'
        f'"message":{{"role":"user","content":"{text}","timestamp":1}}}}'
    ).encode()


def _file(path: Path, sid: str, *lines: bytes, eol: bytes = b"\n") -> Path:
    path.write_bytes(b"".join(line + eol for line in (HEADER % sid.encode(), *lines)))
    return path


def test_a_session_of_a_header_alone_is_stored_listed_and_copied_back(tmp_path: Path, sql_url: str) -> None:
    source = _file(tmp_path / "h.jsonl", "header-only")
    result = copy_session(str(source), sql_url)
    assert result.exact and result.entries == 0
    repo = shared_repo(sql_url)
    assert "header-only" in [info.id for info in repo.list()]
    back = tmp_path / "back.jsonl"
    copy_session(f"{sql_url}#header-only", str(back))
    assert back.read_bytes() == source.read_bytes()


def test_a_torn_header_is_a_clear_error_even_with_lossy(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b'{"type":"session","version":3,"id":"x","timest')
    with pytest.raises(CorruptSessionError, match="line 1: not a complete session header"):
        copy_session(str(torn), str(tmp_path / "out.jsonl"), lossy=True)
    result = CliRunner().invoke(app, ["copy", "--lossy", str(torn), str(tmp_path / "out.jsonl")])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "not a complete session header" in result.output
    assert not (tmp_path / "out.jsonl").exists()


def test_a_lossy_copy_of_a_crlf_file_lists_the_line_endings_as_a_loss(tmp_path: Path) -> None:
    source = _file(tmp_path / "crlf.jsonl", "crlf", _message("a1", None), b"GARBAGE", eol=b"\r\n")
    losses = read_source(str(source)).losses()
    assert any("CRLF line endings would become LF" in loss for loss in losses)
    with pytest.raises(SessionError, match="CRLF line endings"):
        copy_session(str(source), str(tmp_path / "no.jsonl"))
    out = tmp_path / "out.jsonl"
    copy_session(str(source), str(out), lossy=True)
    assert b"\r" not in out.read_bytes()  # consistently LF, header included
    clean = _file(tmp_path / "clean.jsonl", "clean", _message("a1", None), eol=b"\r\n")
    copy_session(str(clean), str(tmp_path / "clean-copy.jsonl"))  # nothing lost: exact, \r kept
    assert (tmp_path / "clean-copy.jsonl").read_bytes() == clean.read_bytes()


def test_a_lossy_import_keeps_its_record_and_exact_copies_of_it_go_through(
    tmp_path: Path, postgres_url: str
) -> None:
    source = _file(tmp_path / "l.jsonl", "lossy1", _message("a1", None), b"GARBAGE", _message("a2", "a1"))
    first = f"sqlite:///{tmp_path}/first.db"
    assert not copy_session(str(source), first, lossy=True).exact
    second = copy_session(f"{first}#lossy1", postgres_url)  # rows copy exactly: no refusal
    assert second.exact and second.entries == 2
    third = f"sqlite:///{tmp_path}/third.db"
    assert copy_session(f"{postgres_url}#lossy1", third).exact
    for url in (first, postgres_url, third):
        manager = shared_repo(url).open("lossy1", read_only=True)
        try:
            kinds = [p.kind for p in manager.problems]
            assert "bad_line" in kinds, url  # the record of what the first copy lost goes along
        finally:
            manager.close()


def test_copy_all_copies_what_it_can_and_reports_each_refusal(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _file(store / "a.jsonl", "good-a", _message("a1", None))
    _file(store / "b.jsonl", "damaged-b", _message("a1", None), b"GARBAGE")
    _file(store / "c.jsonl", "good-c", _message("a1", None))
    dest = f"sqlite:///{tmp_path}/all.db"
    result = CliRunner().invoke(app, ["copy", "--all", str(store), dest])
    assert result.exit_code == 1, result.output
    assert "not copied" in result.output and "damaged-b" in result.output
    assert "copied 2 of 3 sessions; 1 refused" in result.output
    assert sorted(info.id for info in shared_repo(dest).list()) == ["good-a", "good-c"]


def test_copy_all_or_none_copies_none_when_one_cannot_be_copied(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _file(store / "a.jsonl", "good-a", _message("a1", None))
    _file(store / "b.jsonl", "damaged-b", _message("a1", None), b"GARBAGE")
    dest = tmp_path / "out"
    dest.mkdir()
    result = CliRunner().invoke(app, ["copy", "--all", "--all-or-none", str(store), f"jsonl:{dest}"])
    assert result.exit_code == 1, result.output
    assert "copied none" in result.output
    assert list(dest.rglob("*.jsonl")) == []
    ok = CliRunner().invoke(app, ["copy", "--all", "--all-or-none", "--lossy", str(store), f"jsonl:{dest}"])
    assert ok.exit_code == 0, ok.output
    assert len(list(dest.rglob("*.jsonl"))) == 2
