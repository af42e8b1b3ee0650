"""Where sessiontree keeps its caches: ``$SESSIONTREE_CACHE_DIR``, else the platform's user cache directory.

Nothing kept there is needed for correctness (listings, file indexes, the chat's input history); the
caches never write next to sessions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["CACHE_ENV", "default_cache_dir"]

CACHE_ENV = "SESSIONTREE_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$SESSIONTREE_CACHE_DIR``, else the platform's user cache directory for sessiontree."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    if sys.platform.startswith("linux"):  # platformdirs' answer (XDG), without importing it for every command
        base = os.environ.get("XDG_CACHE_HOME", "")
        return Path(base if base.strip() else os.path.expanduser("~/.cache")) / "sessiontree"
    import platformdirs

    return Path(platformdirs.user_cache_dir("sessiontree", appauthor=False))
