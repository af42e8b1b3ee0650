"""The line printed when the chat ends: the command that continues this session (by its id, or ``-c`` for
the directory's latest), so a person never has to look the session up.

Builds text only. A store URL with a password is not printed (``--store URL`` is shown instead).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sessiontree.format.safe_text import safe_text

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = ["continue_hint"]

STORE_ENV = "SESSIONTREE_STORE"


def _store_option(store: str | None) -> list[str]:
    if store is None or store == os.environ.get(STORE_ENV):
        return []  # the same store is found again without naming it
    try:
        secret = urlsplit(store).password is not None
    except ValueError:
        secret = False
    return ["--store", "URL" if secret else store]


def continue_hint(
    manager: SessionManager, store: str | None, cwd: Path, shell_dir: Path | None = None
) -> str | None:
    """``Continue with: sessiontree chat ID (or: sessiontree chat -c)``, or None when nothing was written."""
    if not manager.is_persisted() or not manager.get_entries():
        return None
    session_id = manager.get_session_id()
    base = ["sessiontree", "chat", *_store_option(store)]
    by_id = shlex.join([*base, session_id])
    here = shell_dir is None or shell_dir.resolve() == cwd
    latest = shlex.join([*base, "-c", *([] if here else ["--cwd", str(cwd)])])
    return safe_text(f"Continue with: {by_id}  (or the latest of {cwd}: {latest})")
