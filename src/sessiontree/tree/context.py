"""Context building: stored entries -> the runtime messages and settings in force at a leaf.

Pure functions named as in the design articles (``build_session_path``, ``get_session_context_settings``,
``build_context_entries``, ``session_entry_to_context_messages``, ``build_session_context``). No I/O here.

Every function takes a sequence of entry dicts. A sequence may also carry ``types`` and ``ids`` lists
(see ``PathView``) so that large sessions are answered without decoding entries that cannot matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from sessiontree.format import messages as _msgs
from sessiontree.format.ids import epoch_ms
from sessiontree.tree.session_index import PathView as WalkedPath

__all__ = [
    "SessionContext",
    "SessionSettings",
    "build_context_entries",
    "build_session_context",
    "build_session_path",
    "compute_retained_tail",
    "context_indexes",
    "get_latest_compaction_index",
    "get_session_context_settings",
    "path_ids",
    "path_types",
    "session_entry_to_context_messages",
    "settings_kind",
]

Entry = dict[str, Any]


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Final = _Unset()


@runtime_checkable
class PathView(Protocol):
    """A sequence of entries that knows every entry's type and id without decoding it."""

    types: Sequence[str]
    ids: Sequence[str]

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Entry: ...


def path_types(path: Sequence[Entry]) -> Sequence[str]:
    """The ``type`` of every entry of ``path`` (from the view without decoding, when it knows them)."""
    if type(path) is not list and isinstance(path, (WalkedPath, PathView)):  # a protocol check is slow
        return path.types
    return [e.get("type", "") if isinstance(e, dict) else "" for e in path]


def path_ids(path: Sequence[Entry]) -> Sequence[str]:
    """The ``id`` of every entry of ``path`` (from the view without decoding, when it knows them)."""
    if type(path) is not list and isinstance(path, (WalkedPath, PathView)):  # a protocol check is slow
        return path.ids
    return [e.get("id", "") if isinstance(e, dict) else "" for e in path]


_types = path_types
_ids = path_ids


class SessionSettings:
    """Settings in force at the end of a path: thinking level, model, active tools."""

    __slots__ = ("active_tool_names", "model", "thinking_level")

    def __init__(
        self, thinking_level: Any, model: dict[str, Any] | None, active_tool_names: list[str] | None
    ) -> None:
        self.thinking_level = thinking_level
        self.model = model
        self.active_tool_names = active_tool_names

    def __repr__(self) -> str:
        return (
            f"SessionSettings(thinking_level={self.thinking_level!r}, model={self.model!r}, "
            f"active_tool_names={self.active_tool_names!r})"
        )


class SessionContext:
    """What the model sees at a leaf: messages plus the settings in force there."""

    __slots__ = ("active_tool_names", "messages", "model", "thinking_level")

    def __init__(
        self,
        messages: list[dict[str, Any]],
        thinking_level: Any = "off",
        model: dict[str, Any] | None = None,
        active_tool_names: list[str] | None = None,
    ) -> None:
        self.messages = messages
        self.thinking_level = thinking_level
        self.model = model
        self.active_tool_names = active_tool_names

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape: ``{messages, thinkingLevel, model}`` plus ``activeToolNames`` when set."""
        out: dict[str, Any] = {
            "messages": self.messages,
            "thinkingLevel": self.thinking_level,
            "model": self.model,
        }
        if self.active_tool_names is not None:
            out["activeToolNames"] = self.active_tool_names
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionContext):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"SessionContext(messages=<{len(self.messages)}>, thinking_level={self.thinking_level!r}, "
            f"model={self.model!r}, active_tool_names={self.active_tool_names!r})"
        )


def _index_by_id(entries: Iterable[Entry]) -> dict[str, Entry]:
    by_id: dict[str, Entry] = {}
    for entry in entries:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            by_id[entry_id] = entry  # last occurrence wins, as in pi
    return by_id


def build_session_path(
    entries: Sequence[Entry], leaf_id: str | _Unset | None = _UNSET, by_id: Mapping[str, Entry] | None = None
) -> list[Entry]:
    """Entries from the root to the leaf, root first (pi's ``getBranch`` / path walk).

    ``leaf_id=None`` gives ``[]``; an omitted or unknown leaf falls back to the last entry (pi's rule).
    The walk stops at a null or missing parent and at a cycle.
    """
    if leaf_id is None or not entries:
        return []
    index = by_id if by_id is not None else _index_by_id(entries)
    leaf = index.get(leaf_id) if isinstance(leaf_id, str) else None
    if leaf is None:
        leaf = entries[-1]
    path: list[Entry] = []
    seen: set[str] = set()
    current: Entry | None = leaf
    while current is not None:
        current_id = current.get("id")
        if isinstance(current_id, str):
            if current_id in seen:
                break
            seen.add(current_id)
        path.append(current)
        parent = current.get("parentId")
        current = index.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path


def settings_kind(entry: Mapping[str, Any]) -> str | None:
    """Which setting an entry sets (``"model"``, ``"thinking"``, ``"tools"``), by the rules below, or ``None``.

    Stores that read a context without the whole path keep, per entry, the latest entry of each kind above
    it; this is the one place that decides what counts.
    """
    kind = entry.get("type")
    if kind == "model_change":
        return "model"
    if kind == "thinking_level_change":
        return "thinking"
    if kind == "active_tools_change":
        return "tools"
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            return "model"
    return None


def get_session_context_settings(path: Sequence[Entry]) -> SessionSettings:
    """Thinking level, model and active tools at the end of ``path`` (the whole path counts, last wins).

    The model is set by ``model_change`` entries and by every assistant message.
    """
    return _settings(path, _last_indexes(_types(path), _SETTING_KINDS))


_SETTING_KINDS = ("thinking_level_change", "active_tools_change")
_CONTEXT_KINDS = ("compaction", *_SETTING_KINDS)


def _settings(path: Sequence[Entry], last: Mapping[str, int | None]) -> SessionSettings:
    types = _types(path)
    thinking: Any = _UNSET
    tools: Any = _UNSET
    last_thinking = last["thinking_level_change"]
    if last_thinking is not None:
        thinking = path[last_thinking].get("thinkingLevel")
    last_tools = last["active_tools_change"]
    if last_tools is not None:
        names = path[last_tools].get("activeToolNames")
        tools = list(names) if isinstance(names, list) else None
    model: Any = _UNSET
    # The model comes from the last model_change or assistant message: usually near the leaf.
    for i in range(len(types) - 1, -1, -1):
        kind = types[i]
        if kind == "message":
            message = path[i].get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                model = _model(message.get("provider", _UNSET), message.get("model", _UNSET))
                break
        elif kind == "model_change":
            entry = path[i]
            model = _model(entry.get("provider", _UNSET), entry.get("modelId", _UNSET))
            break
    return SessionSettings(
        "off" if thinking is _UNSET else thinking,
        None if model is _UNSET else model,
        None if tools is _UNSET else tools,
    )


def _last_index(types: Sequence[str], kind: str) -> int | None:
    """Index of the last ``kind`` in ``types``."""
    return _last_indexes(types, (kind,))[kind]


def _last_indexes(types: Sequence[str], kinds: Sequence[str]) -> dict[str, int | None]:
    """The index of the last occurrence of each of ``kinds`` in ``types`` (``None`` when absent), searched
    in C in windows from the end that grow fourfold: the last compaction or setting is usually near the
    leaf, so a long path is neither walked in Python nor copied reversed, and the kinds share the windows."""
    if not isinstance(types, list):
        types = list(types)
    found: dict[str, int | None] = dict.fromkeys(kinds)
    pending = list(found)
    hi = len(types)
    step = 512
    while hi > 0 and pending:
        lo = max(0, hi - step)
        window = types[lo:hi]
        for kind in [k for k in pending if k in window]:
            found[kind] = hi - 1 - window[::-1].index(kind)
            pending.remove(kind)
        hi = lo
        step *= 4
    return found


def _index_before(path: Sequence[Entry], entry_id: str, stop: int) -> int | None:
    """The index of the first ``entry_id`` among the ids of ``path[:stop]``, or ``None``.

    A walked path (a ``PathView``) holds each id once, so it is searched back from ``stop`` in growing
    windows: a firstKeptEntryId is usually a few dozen entries before its compaction."""
    ids = _ids(path)
    id_list = ids if isinstance(ids, list) else list(ids)
    if isinstance(path, WalkedPath):
        hi, step = stop, 256
        while hi > 0:
            lo = max(0, hi - step)
            try:
                return id_list.index(entry_id, lo, hi)
            except ValueError:
                hi, step = lo, step * 4
        return None
    try:
        return id_list.index(entry_id, 0, stop)
    except ValueError:
        return None


def _model(provider: Any, model_id: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if provider is not _UNSET:
        out["provider"] = provider
    if model_id is not _UNSET:
        out["modelId"] = model_id
    return out


def get_latest_compaction_index(path: Sequence[Entry]) -> int | None:
    """Index of the last ``compaction`` entry on ``path``, or ``None``."""
    return _last_index(_types(path), "compaction")


def _has_retained_tail(entry: Entry) -> bool:
    return isinstance(entry.get("retainedTail"), list)


def build_context_entries(path: Sequence[Entry]) -> list[Entry]:
    """The entries of ``path`` whose messages make up the context, honouring the latest compaction.

    Without a compaction: the whole path. With one (``C``): ``C`` first, then, unless ``C`` carries a
    ``retainedTail`` array, the entries from ``C.firstKeptEntryId`` up to ``C`` (earlier compactions
    left out), then every entry after ``C``. Non-message entries of the range are kept so a UI can
    render them; they map to no message.
    """
    return [path[i] for i in context_indexes(path)]


def context_indexes(path: Sequence[Entry]) -> list[int]:
    """The indexes into ``path`` of ``build_context_entries(path)``, in the same order."""
    return _context_indexes(path, get_latest_compaction_index(path))


def _context_indexes(path: Sequence[Entry], c_index: int | None) -> list[int]:
    if c_index is None:
        return list(range(len(path)))
    compaction = path[c_index]
    selected = [c_index]
    if not _has_retained_tail(compaction):
        first_kept = compaction.get("firstKeptEntryId")
        start = _index_before(path, first_kept, c_index) if isinstance(first_kept, str) else None
        if start is not None:
            types = _types(path)
            if "compaction" in types[start:c_index]:
                selected.extend(i for i in range(start, c_index) if types[i] != "compaction")
            else:
                selected.extend(range(start, c_index))
    selected.extend(range(c_index + 1, len(path)))
    return selected


def session_entry_to_context_messages(entry: Entry) -> list[dict[str, Any]]:
    """The runtime messages one entry contributes to a context (pi's mapping, B§5.4).

    A compaction gives its summary message, followed by its ``retainedTail`` when that is an array.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return [message] if message is not None else []
    if kind == "custom_message":
        msg: dict[str, Any] = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
            "display": entry.get("display"),
        }
        if "details" in entry:
            msg["details"] = entry["details"]
        msg["timestamp"] = epoch_ms(entry.get("timestamp"))
        return [msg]
    if kind == "branch_summary":
        if not entry.get("summary"):
            return []
        return [branch_summary_entry_message(entry)]
    if kind == "compaction":
        out: list[dict[str, Any]] = [compaction_summary_message(entry)]
        tail = entry.get("retainedTail")
        if isinstance(tail, list):
            out.extend(tail)
        return out
    return []


def compute_retained_tail(path: Sequence[Entry], first_kept_entry_id: str | None) -> list[dict[str, Any]]:
    """The messages a compaction appended after ``path`` keeps verbatim (its ``retainedTail``, SPEC B§13).

    The context mapping of ``path[indexOf(first_kept_entry_id):]`` without compaction entries, which is
    exactly what pi's reader keeps through ``firstKeptEntryId``; ``[]`` when the id is not on the path.
    """
    ids = path_ids(path)
    id_list = ids if isinstance(ids, list) else list(ids)
    try:
        start = id_list.index(first_kept_entry_id)
    except ValueError:
        return []
    types = path_types(path)
    tail: list[dict[str, Any]] = []
    for i in range(start, len(id_list)):
        if types[i] != "compaction":
            tail.extend(session_entry_to_context_messages(path[i]))
    return tail


def compaction_summary_message(entry: Entry) -> dict[str, Any]:
    """The ``compactionSummary`` runtime message for a compaction entry."""
    return _msgs.compaction_summary_message(
        entry.get("summary"),  # type: ignore[arg-type]
        entry.get("tokensBefore"),  # type: ignore[arg-type]
        epoch_ms(entry.get("timestamp")),
    )


def branch_summary_entry_message(entry: Entry) -> dict[str, Any]:
    """The ``branchSummary`` runtime message for a branch_summary entry (whatever its summary)."""
    return _msgs.branch_summary_message(
        entry.get("summary"),  # type: ignore[arg-type]
        entry.get("fromId"),  # type: ignore[arg-type]
        epoch_ms(entry.get("timestamp")),
    )


def context_from_path(path: Sequence[Entry]) -> SessionContext:
    """``build_session_context`` for a path that is already known (root first)."""
    types = _types(path)
    present = path.has_type if isinstance(path, WalkedPath) else None
    # one search from the leaf back for all of them, but for a kind no entry of the session has
    kinds = _CONTEXT_KINDS if present is None else tuple(filter(present, _CONTEXT_KINDS))
    last = dict.fromkeys(_CONTEXT_KINDS) | _last_indexes(types, kinds)
    indexes = _context_indexes(path, last["compaction"])
    preload = getattr(path, "preload", None)
    if preload is not None:  # a lazy view: decode the entries read below in bulk
        preload(indexes)
    settings = _settings(path, last)
    messages: list[dict[str, Any]] = []
    add = messages.append
    entries = path.entries_at(indexes) if isinstance(path, WalkedPath) else [path[i] for i in indexes]
    for i, entry in zip(indexes, entries, strict=True):
        if types[i] == "message":  # most entries: the stored message is the runtime message, not a copy
            message = entry.get("message")
            if message is not None:
                add(message)
        else:
            messages.extend(session_entry_to_context_messages(entry))
    return SessionContext(messages, settings.thinking_level, settings.model, settings.active_tool_names)


def build_session_context(
    entries: Sequence[Entry], leaf_id: str | _Unset | None = _UNSET, by_id: Mapping[str, Entry] | None = None
) -> SessionContext:
    """Messages, thinking level, model and active tools at ``leaf_id`` (pi's ``buildSessionContext``).

    ``leaf_id=None`` gives an empty context; an omitted or unknown leaf uses the last entry.
    """
    return context_from_path(build_session_path(entries, leaf_id, by_id))
