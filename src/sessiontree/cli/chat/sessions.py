"""Which session the chat works on: open one a person named (a file, an id, a name; an id in a store) or
picked in the ``/resume`` picker, threaded by ``parentSession``.

Opening is the agent session layer's (``agent.host.open_ref``) and listing a library call; this module only
wires them to the picker.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = ["open_ref", "pick_session"]


def open_ref(ref: str, store: str | None) -> SessionManager:
    """Open the session ``ref`` names to write (the agent session layer's rule: a path, or an id, prefix or
    name; with ``store``, an id in that store)."""
    from ...agent.host import open_ref as open_named

    return open_named(ref, store)


async def pick_session(cwd: Path, store: str | None, current: str | None = None) -> str | None:
    """Let the person pick a session (this folder's first, Tab for all); returns a ref for ``open_ref``."""
    from sessiontree.session.manager import SessionManager

    from ..tui.picker_app import Picker
    from ..tui.picker_rows import session_items

    here = SessionManager.list(str(cwd), store=store)
    everywhere: list[Any] = []

    def source(query: str, all_scope: bool) -> list[Any]:
        if all_scope and not everywhere:
            everywhere.extend(SessionManager.list_all(store=store))
        return session_items(everywhere if all_scope else here, query, current)

    picked = await Picker(
        "Resume a session", source, scopes=("this folder", "all"), empty="No sessions here (tab: all folders)"
    ).run_async()
    if picked is None or store is None:
        return picked
    info = next((i for i in [*here, *everywhere] if str(i.path) == picked), None)
    return info.id if info is not None else picked
