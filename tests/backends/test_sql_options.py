"""Store URL options of the SQL back ends: durability (``synchronous``, ``synchronous_commit``) and the
writer lease's time to live (``lease_ttl_ms``), taken from the URL or from ``SqlRepo`` keywords, checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree import SessionManager, open_repo
from sessiontree.errors import SessionError
from sessiontree.storage.sql.database import DEFAULT_LEASE_TTL_MS, parse_sql_url
from sessiontree.storage.sql.repository import SqlRepo
from tests.backends.conftest import with_options
from tests.backends.sql_workers import user


def test_options_leave_the_url_the_driver_sees() -> None:
    parsed = parse_sql_url(
        "postgresql://u:secret@h:5/db?sslmode=disable&lease_ttl_ms=900&synchronous_commit=off"
    )
    assert parsed.target == "postgresql://u:secret@h:5/db?sslmode=disable"
    assert parsed.display == "postgresql://u@h:5/db?sslmode=disable"
    assert parsed.options == {"lease_ttl_ms": "900", "synchronous_commit": "off"}
    untouched = "postgresql://u@h/db?options=-c%20search_path%3Dx+y"
    assert parse_sql_url(untouched).target == untouched  # no option of ours: passed on byte for byte
    sqlite = parse_sql_url("sqlite:////tmp/s.db?synchronous=normal")  # four slashes: an absolute path
    assert (sqlite.target, sqlite.options) == ("/tmp/s.db", {"synchronous": "normal"})


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///tmp/s.db?journal=wal", "unknown store option 'journal'"),
        ("sqlite:///tmp/s.db?synchronous_commit=off", "synchronous_commit is not an option of sqlite"),
        ("postgresql://u:secret@h/db?synchronous=FULL", "synchronous is not an option of postgresql"),
        ("sqlite:///tmp/s.db?synchronous=sometimes", "synchronous must be one of FULL, NORMAL, EXTRA, OFF"),
        ("postgresql://u:secret@h/db?synchronous_commit=maybe", "synchronous_commit must be one of on, off"),
        ("sqlite:///tmp/s.db?lease_ttl_ms=0", "lease_ttl_ms must be a positive whole number"),
        ("postgresql://u:secret@h/db?lease_ttl_ms=soon", "lease_ttl_ms must be a positive whole number"),
    ],
)
def test_bad_options_are_refused_without_showing_a_password(url: str, message: str) -> None:
    with pytest.raises(SessionError, match=message) as caught:
        SqlRepo(url, manager_class=SessionManager)
    assert caught.value.kind == "invalid_argument"
    assert "secret" not in str(caught.value)


def test_sqlite_durability_and_lease_options(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with open_repo(with_options(url, synchronous="NORMAL", lease_ttl_ms=1234)) as repo:
        manager = repo.create("/work/project")
        manager.append_message(user("hello"))
        conn = manager.index.conn  # type: ignore[attr-defined]
        assert conn.query_one("PRAGMA synchronous") == (1,)  # NORMAL
        assert manager.index._lease.ttl_ms == 1234  # type: ignore[attr-defined]
        manager.close()
    with SqlRepo(url, manager_class=SessionManager) as repo:  # the defaults: FULL, 30 s
        manager = repo.open(repo.list()[0].id)
        assert manager.index.conn.query_one("PRAGMA synchronous") == (2,)  # type: ignore[attr-defined]
        assert manager.index._lease.ttl_ms == DEFAULT_LEASE_TTL_MS  # type: ignore[attr-defined]
        manager.close()
    with SqlRepo(
        with_options(url, synchronous="NORMAL"),
        manager_class=SessionManager,
        synchronous="OFF",
        lease_ttl_ms=50,
    ) as repo:
        assert (repo.db.synchronous, repo.db.lease_ttl_ms) == ("OFF", 50)  # keywords win over the URL


def test_postgres_synchronous_commit_option(postgres_url: str) -> None:
    with open_repo(with_options(postgres_url, synchronous_commit="off", lease_ttl_ms=4321)) as repo:
        manager = repo.create("/work/project")
        manager.append_message(user("hello"))
        assert manager.index.conn.query_one("SHOW synchronous_commit") == ("off",)  # type: ignore[attr-defined]
        assert manager.index._lease.ttl_ms == 4321  # type: ignore[attr-defined]
        manager.close()
    with open_repo(postgres_url) as repo:
        assert repo._conn.query_one("SHOW synchronous_commit") == ("on",)  # type: ignore[attr-defined]
