"""Finding what a person typed: an entry by id, unique id prefix or label; a session by file, id or name.

Reads indexes and session metadata only and never writes; raises ``SessionNotFoundError`` for no match and
``AmbiguousReferenceError`` (listing the candidates) for several.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sessiontree.errors import AmbiguousReferenceError, SessionError, SessionNotFoundError

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager
    from sessiontree.storage.session_dirs import SessionInfo

__all__ = [
    "MIN_PREFIX",
    "resolve_entry_id",
    "resolve_session_file",
    "select_session",
    "shortest_unique_prefixes",
]

MIN_PREFIX = 4
"""The shortest id prefix accepted (shorter ones match too much to be typed safely)."""


def _show(value: str) -> str:
    from sessiontree.format.safe_text import safe_text

    return safe_text(value)


def resolve_entry_id(manager: SessionManager, ref: str) -> str:
    """The id of the entry ``ref`` names: an exact id, else an exact label, else a unique id prefix
    (at least ``MIN_PREFIX`` characters)."""
    index = manager.index
    if index.contains(ref):
        return ref
    labelled = [target for target, label in manager.get_labels().items() if label == ref]
    if len(labelled) == 1:
        return labelled[0]
    where = manager.get_session_file() or "<memory>"
    if len(labelled) > 1:
        raise AmbiguousReferenceError(
            f"{where}: the label {_show(ref)!r} is on {len(labelled)} entries: {', '.join(labelled)}",
            candidates=labelled,
        )
    if len(ref) >= MIN_PREFIX:
        matches = index.ids_starting_with(ref)
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(matches[:10]) + (f" and {len(matches) - 10} more" if len(matches) > 10 else "")
            raise AmbiguousReferenceError(
                f"{where}: {_show(ref)!r} is the start of {len(matches)} entry ids: {shown}",
                candidates=matches,
            )
    hint = "" if len(ref) >= MIN_PREFIX else f" (an id prefix needs at least {MIN_PREFIX} characters)"
    raise SessionNotFoundError(f"Entry {_show(ref)} not found in {where}{hint}", path=where)


def _looks_like_path(ref: str) -> bool:
    return os.sep in ref or (os.altsep or os.sep) in ref or ref.endswith(".jsonl") or ref.startswith("~")


def resolve_session_file(ref: str) -> Path | None:
    """``ref`` as a session file path when it names one; ``None`` when it does not look like a path.

    Raises ``SessionNotFoundError`` for a path that does not exist and ``SessionError`` (``not_a_file``)
    for a directory or another non-regular file.
    """
    path = Path(ref).expanduser()
    if os.path.lexists(path):
        if path.is_dir():
            raise SessionError(
                f"{path}: is a directory, not a session file", kind="not_a_file", path=str(path)
            )
        if not path.is_file():
            raise SessionError(f"{path}: is not a regular file", kind="not_a_file", path=str(path))
        return path
    if _looks_like_path(ref):
        raise SessionNotFoundError(f"{path}: no such session file", path=str(path))
    return None


def select_session(ref: str, groups: Iterable[Sequence[SessionInfo]], looked_in: Sequence[Path]) -> Path:
    """The session ``ref`` names among ``groups`` of listed sessions, searched in order (this project's first):
    an exact session id, else a unique id prefix (at least ``MIN_PREFIX`` characters), else an exact name."""
    for infos in groups:
        exact = [i for i in infos if i.id == ref]
        if exact:
            return Path(exact[0].path)
        matches = [i for i in infos if len(ref) >= MIN_PREFIX and i.id.startswith(ref)]
        if not matches:
            matches = [i for i in infos if i.name is not None and i.name == ref]
        if len(matches) == 1:
            return Path(matches[0].path)
        if matches:
            lines = "\n".join(
                f"  {m.id}  {_show(m.name or m.first_message)[:50]}  {m.path}" for m in matches[:10]
            )
            raise AmbiguousReferenceError(
                f"{_show(ref)!r} matches {len(matches)} sessions:\n{lines}",
                candidates=[str(m.path) for m in matches],
            )
    places = ", ".join(str(p) for p in looked_in) or "(no session directory)"
    raise SessionNotFoundError(
        f"{_show(ref)}: no such session file, and no session id or name matches it (looked in {places})"
    )


def shortest_unique_prefixes(ids: Iterable[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix of each id that no other id in ``ids`` starts with, at least ``minimum``
    characters: what a listing shows so that every row can be named by what it shows (session ids made
    within the same minute share their first eight digits: UUIDv7 starts with the time)."""
    ordered = sorted(set(ids))
    shown: dict[str, str] = {}
    for n, current in enumerate(ordered):
        need = minimum
        for other in (ordered[n - 1] if n else None, ordered[n + 1] if n + 1 < len(ordered) else None):
            if other is None:
                continue
            common = 0
            for a, b in zip(current, other, strict=False):
                if a != b:
                    break
                common += 1
            need = max(need, common + 1)
        shown[current] = current[:need]
    return shown
