"""The listing cache: the same SessionInfo as reading the files, rebuilt when a file changes, never required."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from sessiontree.cli.progress import listing_progress
from sessiontree.storage.listing_cache import CACHE_ENV, Catalogue, list_sessions
from tests.test_cli import EXAMPLE


def _farm(directory: Path, count: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    blob = EXAMPLE.read_bytes()
    header, _, body = blob.partition(b"\n")
    files = []
    for n in range(count):
        path = directory / f"s{n:03d}.jsonl"
        path.write_bytes(header.replace(b"019acd9e", f"{n:08x}".encode(), 1) + b"\n" + body)
        files.append(path)
    return files


def _dicts(infos: list[object]) -> list[dict[str, object]]:
    return [i.to_dict() for i in infos]  # type: ignore[attr-defined]


def test_warm_listing_equals_reading_every_file(tmp_path: Path) -> None:
    _farm(tmp_path / "s", 12)
    cache = Catalogue(tmp_path / "cache")
    cold = list_sessions([tmp_path / "s"], catalogue=cache)
    assert cold.read == 12 and cache.file.is_file()
    warm = list_sessions([tmp_path / "s"], catalogue=Catalogue(tmp_path / "cache"))
    assert warm.read == 0
    uncached = list_sessions([tmp_path / "s"], use_cache=False)
    assert _dicts(warm.infos) == _dicts(uncached.infos) == _dicts(cold.infos)
    assert warm.infos[0].all_messages_text == uncached.infos[0].all_messages_text != ""


def test_a_changed_file_is_read_again_and_a_removed_one_forgotten(tmp_path: Path) -> None:
    files = _farm(tmp_path / "s", 3)
    list_sessions([tmp_path / "s"], catalogue=Catalogue(tmp_path / "cache"))
    with files[0].open("ab") as fh:
        fh.write(
            b'{"type":"session_info","id":"n1","parentId":"5e550021","timestamp":"2025-11-29T11:00:00.000Z","name":"Renamed"}\n'
        )
    files[1].unlink()
    again = list_sessions([tmp_path / "s"], catalogue=Catalogue(tmp_path / "cache"))
    assert again.read == 1
    assert sorted(i.name or "" for i in again.infos) == ["Fix parse_duration accumulator", "Renamed"]
    cat = Catalogue(tmp_path / "cache")
    cat._load()
    assert str(files[1]) not in cat._records


def test_a_damaged_or_unwritable_cache_changes_nothing(tmp_path: Path) -> None:
    _farm(tmp_path / "s", 4)
    expected = _dicts(list_sessions([tmp_path / "s"], use_cache=False).infos)
    damaged = tmp_path / "cache"
    damaged.mkdir()
    (damaged / "catalogue-v1.msgpack").write_bytes(os.urandom(500))
    assert _dicts(list_sessions([tmp_path / "s"], catalogue=Catalogue(damaged)).infos) == expected
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be", "utf-8")
    assert _dicts(list_sessions([tmp_path / "s"], catalogue=Catalogue(blocked)).infos) == expected
    texts = damaged / "texts"
    shutil.rmtree(texts)  # the cached texts are gone: they are read from the sessions again
    warm = list_sessions([tmp_path / "s"], catalogue=Catalogue(damaged))
    assert warm.read == 0 and _dicts(warm.infos) == expected


def test_the_cache_lives_where_the_environment_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "here"))
    _farm(tmp_path / "s", 1)
    list_sessions([tmp_path / "s"])
    assert (tmp_path / "here" / "catalogue-v1.msgpack").is_file()
    assert not any(
        p.name.startswith("catalogue") for p in (tmp_path / "s").iterdir()
    )  # nothing beside sessions


def test_the_progress_bar_shows_only_on_a_terminal_and_for_many_files() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()
    with listing_progress(shown) as update:
        for done in range(101):
            update(done, 100)
    assert "reading sessions" in shown.getvalue()
    quiet = io.StringIO()
    with listing_progress(quiet) as update:
        for done in range(101):
            update(done, 100)
    assert quiet.getvalue() == ""
    few = Terminal()
    with listing_progress(few) as update:
        update(0, 5)
    assert few.getvalue() == ""


def test_a_lone_surrogate_in_a_session_is_cached_exactly(tmp_path: Path) -> None:
    """JavaScript writes lone surrogates (valid JSON ``\\ud800``); one such session must not break listings."""
    files = _farm(tmp_path / "s", 3)
    header = (
        b'{"type":"session","version":3,"id":"odd-\\ud800","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'
    )
    message = (
        b'{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"half a pair \\udc00 here","timestamp":1}}'
    )
    (tmp_path / "s" / "odd.jsonl").write_bytes(header + b"\n" + message + b"\n")
    cold = list_sessions([tmp_path / "s"], catalogue=Catalogue(tmp_path / "cache"))
    assert cold.read == 4 and (tmp_path / "cache").is_dir()
    warm = list_sessions([tmp_path / "s"], catalogue=Catalogue(tmp_path / "cache"))
    assert warm.read == 0  # the cache was written, the odd session included
    assert _dicts(warm.infos) == _dicts(cold.infos)
    odd = next(i for i in warm.infos if i.id.startswith("odd-"))
    assert odd.id == "odd-\ud800" and odd.first_message == "half a pair \udc00 here"
    assert "\udc00" in odd.all_messages_text
    assert len(files) == 3


def test_the_command_lists_a_session_with_a_lone_surrogate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from sessiontree.cli import app

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "s").mkdir()
    header = b'{"type":"session","version":3,"id":"odd","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'
    message = (
        b'{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"x \\ud800 y","timestamp":1}}'
    )
    (tmp_path / "s" / "odd.jsonl").write_bytes(header + b"\n" + message + b"\n")
    for _ in range(2):  # cold, then from the cache
        result = CliRunner().invoke(app, ["list", "--session-dir", str(tmp_path / "s")])
        assert result.exit_code == 0, result.output
        assert "odd" in result.output
