"""Store URLs for applications: ``open_repo(url)`` and ``shared_repo(url)`` hand out ``SessionManager``s.

``repository.py`` takes the manager class as a parameter so that it sits below ``manager.py``; this module
binds it. No logic of its own.
"""

from __future__ import annotations

import os

from sessiontree.session.manager import SessionManager
from sessiontree.storage.repository import Repo
from sessiontree.storage.urls import open_repo as _open_repo
from sessiontree.storage.urls import shared_repo as _shared_repo

__all__ = ["open_repo", "shared_repo"]


def open_repo(url: str | os.PathLike[str] | None = None) -> Repo[SessionManager]:
    """The repository a store URL names: ``sqlite:///PATH``, ``postgresql://…``, ``memory:``, ``jsonl:DIR`` or
    a directory (``None``: ``$SESSIONTREE_STORE``, else pi's session directory)."""
    return _open_repo(url, manager_class=SessionManager)


def shared_repo(url: str) -> Repo[SessionManager]:
    """The process's one repository for a store URL (database pools and ``memory:`` sessions are shared)."""
    return _shared_repo(url, manager_class=SessionManager)
