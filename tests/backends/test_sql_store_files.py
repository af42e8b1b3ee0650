"""What a SQL store leaves on disk: reads of a store that does not exist say so and create nothing (no SQLite
file, no tables in an empty PostgreSQL database); the SQLite files a write creates are private (0600, and
their -wal and -shm, in directories created 0700), as session files are.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree import open_repo
from sessiontree.cli import app
from sessiontree.errors import SessionNotFoundError
from sessiontree.storage.sql.schema import SCHEMA_VERSION
from tests.backends.damage import Plain
from tests.builders import user

runner = CliRunner()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    "command",
    [
        ["db", "status"],
        ["tree", "abcd"],
        ["list"],
        ["show", "abcd", "efgh"],
        ["check", "abcd"],
        ["search", "hello"],
    ],
)
def test_reads_of_a_sqlite_store_that_does_not_exist_create_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    """Defect 18: `db status` and `tree --store sqlite:///typo.db` left a new empty database behind."""
    url = f"sqlite:///{tmp_path}/typo.db"
    before = sorted(os.listdir(tmp_path))
    result = runner.invoke(app, [*command, "--store", url])
    assert result.exit_code == 1, result.output
    assert "no such store" in result.output and "typo.db does not exist" in result.output
    assert sorted(os.listdir(tmp_path)) == before


def test_library_reads_of_a_missing_sqlite_store_raise_and_create_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/nested/missing.db"
    with open_repo(url) as repo:
        for read in (repo.list, lambda: repo.open("abcd"), repo.schema_version, lambda: repo.search("x")):
            with pytest.raises(SessionNotFoundError, match="no such store"):
                read()  # type: ignore[no-untyped-call]
        repo.delete("abcd")  # nothing to delete: no error, and nothing made
    assert not (tmp_path / "nested").exists()


def test_reads_of_an_empty_postgresql_database_create_no_tables(postgres_url: str) -> None:
    with open_repo(postgres_url) as repo:
        assert repo.list() == []
        assert repo.search("hello") == []
        assert repo.schema_version() == 0  # type: ignore[attr-defined]
        with pytest.raises(SessionNotFoundError):
            repo.open("abcd")
    result = runner.invoke(app, ["db", "status", "--store", postgres_url])
    assert result.exit_code == 0 and "schema version 0 of" in result.output
    plain = Plain(postgres_url)
    try:
        assert plain.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'") == []
    finally:
        plain.close()


def test_a_write_creates_the_store_private(tmp_path: Path) -> None:
    """Defect 20: SQLite databases were 0644 (and their directories the umask's) while session files are
    0600: every session's text was readable by every user of the machine."""
    previous = os.umask(0o022)
    try:
        url = f"sqlite:///{tmp_path}/new/deeper/sessions.db"
        with open_repo(url) as repo:
            manager = repo.create("/work/project")
            manager.append_message(user("hello"))  # the store is created with the first entry
            files = sorted(p.name for p in (tmp_path / "new" / "deeper").iterdir())
            assert files == ["sessions.db", "sessions.db-shm", "sessions.db-wal"]  # open: WAL mode
            for name in files:
                assert _mode(tmp_path / "new" / "deeper" / name) == 0o600, name
            manager.close()
        assert _mode(tmp_path / "new") == 0o700
        assert _mode(tmp_path / "new" / "deeper") == 0o700
    finally:
        os.umask(previous)


def test_db_migrate_creates_a_private_store_and_status_reads_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/made/sessions.db"
    result = runner.invoke(app, ["db", "migrate", "--store", url])
    assert result.exit_code == 0, result.output
    assert _mode(tmp_path / "made" / "sessions.db") == 0o600
    assert _mode(tmp_path / "made") == 0o700
    result = runner.invoke(app, ["db", "status", "--store", url])
    assert result.exit_code == 0 and f"schema version {SCHEMA_VERSION} of {SCHEMA_VERSION}" in result.output


def test_an_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    with open_repo(f"sqlite:///{shared}/sessions.db") as repo:
        repo.setup()
    assert _mode(shared) == 0o755
    assert _mode(shared / "sessions.db") == 0o600
