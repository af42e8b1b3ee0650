"""Every storage back end behind one fixture: ``backend`` runs a test on memory, JSONL, SQLite and PostgreSQL.

Each back end gets a store for the whole test session (a PostgreSQL database created once); a test imports
the sessions it needs and the fixture removes them afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.session.copying import read_source
from sessiontree.session.store_access import open_repo
from sessiontree.storage.repository import Repo

BACKENDS = ("memory", "jsonl", "sqlite", "postgres")
SQL_BACKENDS = ("sqlite", "postgres")


@dataclass
class Backend:
    """One store and the sessions a test put there."""

    kind: str
    url: str
    repo: Repo
    root: Path
    made: list[str] = field(default_factory=list)
    managers: list[SessionManager] = field(default_factory=list)

    def load(self, path: Path, *, read_only: bool = True) -> SessionManager:
        """A pi file's readable content in this store (the exact lines where nothing is lost), opened."""
        source = read_source(str(path))
        sid = self.repo.import_session(source.header_block, source.lines, problems=source.problems)
        self.made.append(sid)
        manager = self.repo.open(sid, read_only=read_only)
        self.managers.append(manager)
        return manager

    def create(self, cwd: str = "/work/project", **options: object) -> SessionManager:
        manager = self.repo.create(cwd, **options)  # type: ignore[arg-type]
        self.made.append(manager.get_session_id())
        self.managers.append(manager)
        return manager

    def reopen(self, manager: SessionManager, *, read_only: bool = True) -> SessionManager:
        """The same session read back from the store."""
        if self.kind == "memory" or not manager.index.is_persisted:  # nothing to read back from a store
            return manager
        sid = manager.get_session_id()
        manager.close()
        again = self.repo.open(sid, read_only=read_only)
        self.managers.append(again)
        return again

    def cleanup(self) -> None:
        for manager in self.managers:
            manager.close()
        for sid in self.made:
            self.repo.delete(sid)
        self.made.clear()
        self.managers.clear()


_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def backend_stores(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, Backend]]:
    stores: dict[str, Backend] = {}
    yield stores
    for store in stores.values():
        store.repo.close()


def _make(kind: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Backend:
    root = tmp_path_factory.mktemp(f"store-{kind}")
    if kind == "memory":
        url = "memory:"
    elif kind == "jsonl":
        url = f"jsonl:{root}"
    elif kind == "sqlite":
        url = f"sqlite:///{root}/sessions.db"
    else:
        cluster = request.getfixturevalue("postgres_cluster")
        url = cluster.create_database(f"sessiontree_backends_{os.getpid()}_{next(_numbers)}")
    repo = open_repo(url)
    repo.setup()
    return Backend(kind, url, repo, root)


def _shared(
    request: pytest.FixtureRequest,
    backend_stores: dict[str, Backend],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Backend]:
    """The session's store of the kind ``request.param`` names, made on first use; cleaned after each test."""
    kind = request.param
    if kind not in backend_stores:
        backend_stores[kind] = _make(kind, tmp_path_factory, request)
    store = backend_stores[kind]
    yield store
    store.cleanup()


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest,
    backend_stores: dict[str, Backend],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Backend]:
    yield from _shared(request, backend_stores, tmp_path_factory)


@pytest.fixture(params=SQL_BACKENDS)
def sql_backend(
    request: pytest.FixtureRequest,
    backend_stores: dict[str, Backend],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Backend]:
    yield from _shared(request, backend_stores, tmp_path_factory)


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh, empty SQL store (a SQLite file, a new PostgreSQL database) for this test alone."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/sessions.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


def with_options(url: str, **options: object) -> str:
    """``url`` with store options as query parameters (``lease_ttl_ms=500``)."""
    query = "&".join(f"{name}={value}" for name, value in options.items())
    return f"{url}{'&' if '?' in url else '?'}{query}"
