"""Turn snapshots (the seeds' ``createTurnState``): the harness's live settings, frozen together with the
session's messages at the start of a run and again before every later request of the run.

The messages always come from the persisted session, through an incremental cache that gives exactly what
``SessionManager.build_session_context()`` gives: it extends the cached context with the entries appended
since, and rebuilds when a compaction is among them, when the leaf moved anywhere else (navigation), or when
the store changed under it. Nothing here writes to the session.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sessiontree.session.manager import SessionManager
from sessiontree.tree.context import (
    SessionContext,
    get_session_context_settings,
    session_entry_to_context_messages,
)
from sessiontree.tree.session_index import SessionIndex

from ..llm.types import Model, StreamOptions, ThinkingLevel
from .session import AsyncSession
from .types import AgentContext, AgentTool, HarnessError

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "ContextCache",
    "LiveSettings",
    "SystemPrompt",
    "SystemPromptContext",
    "TurnState",
    "create_turn_state",
]

Entry = dict[str, Any]
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."


@dataclass(frozen=True, slots=True)
class SystemPromptContext:
    """What a system-prompt callback sees: the session and the settings of the request being prepared."""

    session: SessionManager
    model: Model
    thinking_level: ThinkingLevel
    active_tools: tuple[AgentTool, ...]


SystemPrompt = str | Callable[[SystemPromptContext], "str | Awaitable[str]"] | None


def _duplicates(names: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]


@dataclass(slots=True)
class LiveSettings:
    """The harness's current model, thinking level, tools and prompt: what the next snapshot freezes.

    Getters of the harness read these; a request in flight keeps the values of its own snapshot.
    """

    model: Model
    thinking_level: ThinkingLevel = "off"
    tools: dict[str, AgentTool] = field(default_factory=dict)
    active_tool_names: list[str] = field(default_factory=list)
    system_prompt: SystemPrompt = None
    stream_options: StreamOptions = field(default_factory=StreamOptions)

    @staticmethod
    def checked_tools(tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
        """Tools by name; duplicate names raise ``invalid_argument``."""
        duplicates = _duplicates([t.name for t in tools])
        if duplicates:
            raise HarnessError(f"Duplicate tool name(s): {', '.join(duplicates)}", kind="invalid_argument")
        return {t.name: t for t in tools}

    @staticmethod
    def check_active(names: Sequence[str], tools: dict[str, AgentTool]) -> list[str]:
        """``names`` when each is a known tool, once; else ``invalid_argument``."""
        duplicates = _duplicates(names)
        if duplicates:
            raise HarnessError(
                f"Duplicate active tool name(s): {', '.join(duplicates)}", kind="invalid_argument"
            )
        missing = [n for n in names if n not in tools]
        if missing:
            raise HarnessError(f"Unknown tool(s): {', '.join(missing)}", kind="invalid_argument")
        return list(names)

    def active_tools(self) -> tuple[AgentTool, ...]:
        """The active tools, in the order of their names (unknown names dropped)."""
        return tuple(self.tools[n] for n in self.active_tool_names if n in self.tools)


class ContextCache:
    """The context at the last snapshot's leaf, extended in place while the session only grows under it.

    ``rebuilds`` and ``extensions`` count how each request was answered (for tests and benchmarks).
    """

    __slots__ = ("_context", "_generation", "_index", "_leaf", "_size", "extensions", "rebuilds")

    def __init__(self) -> None:
        self._index: SessionIndex | None = None
        self._generation = -1
        self._size = 0
        self._leaf: str | None = None
        self._context: SessionContext | None = None
        self.rebuilds = 0
        self.extensions = 0

    def invalidate(self) -> None:
        """Forget the cached context (the next call rebuilds)."""
        self._context = None

    def context(self, manager: SessionManager) -> SessionContext:
        """The context at the manager's leaf, equal to ``manager.build_session_context()``."""
        extended = self._extended(manager)
        if extended is not None:
            return extended
        index, leaf = manager.index, manager.get_leaf_id()
        built = manager.build_session_context()
        self._remember(index, leaf, built)
        self.rebuilds += 1
        return built

    def current(self, manager: SessionManager) -> SessionContext | None:
        """The cached context when it is still the one at the manager's leaf, told from memory alone (the
        leaf, the index object and its generation; the path to a leaf never changes while the generation
        stays): the store is never asked, so a caller needs no worker thread for a remote store. None
        when the leaf moved or the session was read again (``context`` then extends or rebuilds)."""
        cached = self._context
        if (
            cached is not None
            and manager.get_leaf_id() == self._leaf
            and manager.index is self._index
            and self._index.generation == self._generation
        ):
            return cached
        return None

    def advance(self, manager: SessionManager) -> None:
        """Right after a write, in the same call to the store: extend the cached context to the new leaf
        when it can be (never a rebuild), so the next ``current`` answers from memory. A failure forgets
        the cache instead of being raised: the next ``context`` rebuilds (and raises, if it must)."""
        if self._context is None:
            return
        try:
            self._extended(manager)
        except Exception:
            self.invalidate()

    def _extended(self, manager: SessionManager) -> SessionContext | None:
        """The cached context, extended to the manager's leaf when only appends lead there; else None."""
        index = manager.index
        leaf = manager.get_leaf_id()
        cached = self._context
        if cached is None or index is not self._index or index.generation != self._generation:
            return None
        if leaf == self._leaf and len(index) == self._size:
            return cached
        appended = self._appended_path(index, leaf)
        if appended is None:
            return None
        self._extend(cached, appended)
        self._remember(index, leaf, cached)
        self.extensions += 1
        return cached

    def _remember(self, index: SessionIndex, leaf: str | None, context: SessionContext) -> None:
        self._index, self._generation, self._size = index, index.generation, len(index)
        self._leaf, self._context = leaf, context

    def _appended_path(self, index: SessionIndex, leaf: str | None) -> list[Entry] | None:
        """The entries from the cached leaf (exclusive) to ``leaf``, when all were appended since the cache
        was made and none is a compaction; else None (the context must be rebuilt)."""
        budget = len(index) - self._size
        found: list[Entry] = []
        current = leaf
        while current != self._leaf:
            if current is None or len(found) >= budget:
                return None
            position = index.position(current)
            if position is None or position < self._size:
                return None
            entry = index.get_entry(current)
            if entry is None or entry.get("type") == "compaction":
                return None
            found.append(entry)
            parent = entry.get("parentId")
            current = parent if isinstance(parent, str) else None
        found.reverse()
        return found

    @staticmethod
    def _extend(context: SessionContext, entries: list[Entry]) -> None:
        # The settings of the appended entries alone, by the same rules (last writer wins); each value
        # replaces the cached one only when some appended entry sets it.
        kinds = {entry.get("type") for entry in entries}
        settings = get_session_context_settings(entries)
        if settings.model is not None:
            context.model = settings.model
        if "thinking_level_change" in kinds:
            context.thinking_level = settings.thinking_level
        if "active_tools_change" in kinds:
            context.active_tool_names = settings.active_tool_names
        for entry in entries:
            context.messages.extend(session_entry_to_context_messages(entry))


@dataclass(slots=True)
class TurnState:
    """One request's frozen inputs: messages, settings, tools and prompt (never changed once taken)."""

    messages: list[dict[str, Any]]
    settings: SessionContext
    session_id: str
    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel
    tools: tuple[AgentTool, ...]
    active_tools: tuple[AgentTool, ...]
    stream_options: StreamOptions

    def agent_context(self, system_prompt: str | None = None) -> AgentContext:
        """A fresh loop context over a copy of the messages (the loop grows its own list)."""
        return AgentContext(system_prompt or self.system_prompt, list(self.messages), self.active_tools)


def _snapshot(manager: SessionManager, cache: ContextCache) -> tuple[SessionContext, list[Any], str]:
    context = cache.context(manager)
    return context, list(context.messages), manager.get_session_id()


async def create_turn_state(session: AsyncSession, cache: ContextCache, live: LiveSettings) -> TurnState:
    """Freeze the live settings and the persisted session's messages for the next request (from memory,
    without a call through the facade, when the cache is current: the run advanced it with its writes)."""
    manager = session.manager
    fresh = cache.current(manager)
    if fresh is not None:
        context, messages, session_id = fresh, list(fresh.messages), manager.get_session_id()
    else:
        context, messages, session_id = await session.run(_snapshot, cache)
    active = live.active_tools()
    prompt = live.system_prompt
    if callable(prompt):
        produced = prompt(SystemPromptContext(session.manager, live.model, live.thinking_level, active))
        text = await produced if inspect.isawaitable(produced) else produced
    else:
        text = prompt if isinstance(prompt, str) else DEFAULT_SYSTEM_PROMPT
    settings = SessionContext([], context.thinking_level, context.model, context.active_tool_names)
    return TurnState(
        messages=messages,
        settings=settings,
        session_id=session_id,
        system_prompt=str(text),
        model=live.model,
        thinking_level=live.thinking_level,
        tools=tuple(live.tools.values()),
        active_tools=active,
        stream_options=replace(live.stream_options, headers=dict(live.stream_options.headers or {})),
    )
