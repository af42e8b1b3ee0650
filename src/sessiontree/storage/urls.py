"""Which repository a store URL names: ``jsonl:DIR`` or a directory (pi's files; the default), ``memory:``,
``sqlite:///path.db``, ``postgresql://…``; and one shared repository per URL in a process.

Takes the manager class sessions are built with (``stores.py`` binds ``SessionManager``); nothing else.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from sessiontree.errors import SessionError
from sessiontree.storage.repository import JsonlRepo, M, ManagerClass, MemoryRepo, Repo
from sessiontree.storage.session_dirs import get_sessions_root

__all__ = ["STORE_ENV", "is_store_url", "open_repo", "shared_repo"]

STORE_ENV = "SESSIONTREE_STORE"
"""The environment variable naming the default store."""

_SQL_SCHEMES = ("sqlite:", "postgresql:", "postgres:")


def is_store_url(text: str) -> bool:
    """Whether ``text`` names a store by URL (``jsonl:``, ``memory:``, ``sqlite:``, ``postgresql:``)."""
    lower = text.lower()
    return lower.startswith(("jsonl:", "memory:", *_SQL_SCHEMES))


def open_repo(url: str | os.PathLike[str] | None, *, manager_class: ManagerClass[M]) -> Repo[M]:
    """The repository a store URL names (``None``: ``$SESSIONTREE_STORE``, else pi's session directory),
    handing out ``manager_class`` sessions (``sessiontree.open_repo`` binds ``SessionManager``).

    ``sqlite:///PATH`` and ``postgresql://…`` are SQL stores (migrated on first use), ``memory:`` a new
    in-process store, ``jsonl:DIR`` or a plain directory a tree of pi session files.
    """
    if url is None:
        url = os.environ.get(STORE_ENV) or None
    if url is None:
        return JsonlRepo(None, manager_class=manager_class)
    text = os.fspath(url)
    lower = text.lower()
    if lower.startswith(_SQL_SCHEMES):
        from sessiontree.storage.sql.repository import SqlRepo

        return SqlRepo(text, manager_class=manager_class)
    if lower == "memory:":
        return MemoryRepo(manager_class=manager_class)
    if lower.startswith("jsonl:"):
        rest = text[len("jsonl:") :]
        return JsonlRepo(Path(rest) if rest else None, manager_class=manager_class)
    scheme, sep, _ = text.partition(":")
    if sep and len(scheme) > 1 and scheme.isalpha() and "/" not in scheme:
        raise SessionError(
            f"Unsupported store URL: {text} (use a directory, jsonl:DIR, memory:, sqlite:///PATH or "
            "postgresql://…)",
            kind="invalid_argument",
        )
    return JsonlRepo(Path(text), manager_class=manager_class)


_SHARED: dict[tuple[str, Any], Any] = {}
_SHARED_LOCK = threading.Lock()


def shared_repo(url: str, *, manager_class: ManagerClass[M]) -> Repo[M]:
    """One repository per store URL (and manager class) in this process: pools and ``memory:`` are shared."""
    key = (_normalized(url), manager_class)
    with _SHARED_LOCK:
        repo: Repo[M] | None = _SHARED.get(key)
        if repo is None:
            repo = _SHARED[key] = open_repo(url, manager_class=manager_class)
        return repo


def _normalized(url: str) -> str:
    """The URL with relative file paths made absolute, so one store is one key whatever the working dir."""
    lower = url.lower()
    if lower.startswith("sqlite:"):
        from sessiontree.storage.sql.database import parse_sql_url

        return "sqlite://" + parse_sql_url(url).target
    if lower.startswith(("postgresql:", "postgres:", "memory:")):
        return url
    rest = url[len("jsonl:") :] if lower.startswith("jsonl:") else url
    return "jsonl:" + str(Path(rest or get_sessions_root()).expanduser().resolve())
