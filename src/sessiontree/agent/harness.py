"""``AgentHarness``: a coding agent on a session, the seeds' harness (pi's first AgentHarness) in Python.

Each request works on a frozen turn snapshot; what callers write while a run is busy is buffered and lands
after the run's own messages; every turn boundary is a durable save point; compaction happens by itself;
the tree can be navigated; an interrupted run can be resumed. This module is the public face: it validates,
guards the phase (``phase_guard.py``) and delegates (runs to ``run.py``, storage to the ``AsyncSession``
facade, compaction and navigation to ``tree_ops.py``); it never calls the ``SessionManager`` directly.

Events (dicts with ``"type"`` and pi's camelCase payload keys): the loop's ``agent_start``, ``turn_start``,
``message_start/update/end``, ``tool_execution_start/update/end``, ``turn_end``, ``agent_end``; the
harness's ``save_point``, ``settled``, ``queue_update``, ``abort``, ``model_update``,
``thinking_level_update``, ``tools_update``, ``compaction_start/end``, ``session_compact``,
``auto_retry_start/end``, ``session_tree`` and, beyond pi, ``resume {kind, rerun, interrupted}``; ``agent_end``
carries ``willRetry`` as pi's AgentSession adds it.

Decisions where pi and the issue are silent: synchronous setters (``set_model``, ``steer``...) return an
awaitable; awaiting it delivers their event at once, otherwise it goes out at the harness's next await. When
idle on a local store a setter writes at once; on a remote store it is queued and flushed before the next
run (or by ``flush_pending_session_writes``). Before a run the live model, thinking level and active tools
are recorded on the path where they differ from it, so navigation can restore them (SPEC A2). The phase
stays busy until a prompt's post-run work (automatic compaction, its retry) is over, so ``settled`` comes
once per prompt; writes buffered during ``compact``/``navigate_tree`` are flushed when they end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sessiontree.format.messages import user_message
from sessiontree.format.pi_json import UNDEFINED
from sessiontree.session.manager import SessionManager

from ..compaction import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    LlmSummarizer,
    OfflineSummarizer,
    Summarizer,
)
from ..llm.models import ModelRegistry
from ..llm.stream import stream as llm_stream
from ..llm.types import Model, StreamOptions, ThinkingLevel
from .bus import EventBus, Posted
from .compaction_policy import Compactor
from .live import apply_tools, change_model, change_thinking_level, record_settings, write
from .phase_guard import normalize_error
from .queues import MessageQueues
from .resume import INTERRUPTED_TEXT, find_interruption
from .retry import DEFAULT_RETRY_SETTINGS, RetrySettings
from .run import (
    RunParts,
    compact_before_prompt,
    drive,
    drop_trailing_error,
    flush_writes,
    repair_interrupted,
    snapshot,
)
from .session import AsyncSession
from .tree_ops import TreeOperations
from .turn_state import ContextCache, LiveSettings, SystemPrompt
from .types import AgentTool, HarnessError, QueueMode, ToolExecution
from .write_buffer import PendingWrite, WriteBuffer

__all__ = ["AbortResult", "AgentHarness"]

AgentMessage = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AbortResult:
    """What ``abort()`` cleared: the queued steering and follow-up messages."""

    cleared_steer: list[AgentMessage]
    cleared_follow_up: list[AgentMessage]


def _summarizer(summarizer: Summarizer | Model | None, api_key: str | None) -> Summarizer:
    if summarizer is None:
        return OfflineSummarizer()
    if isinstance(summarizer, Model):
        return LlmSummarizer(summarizer, StreamOptions(api_key=api_key))
    return summarizer


def _user(text: str, images: Sequence[dict[str, Any]] | None, timestamp: int) -> AgentMessage:
    return user_message([{"type": "text", "text": text}, *(images or ())], timestamp)


class AgentHarness(TreeOperations):
    """Runs an agent against a ``SessionManager`` (see the module docstring; names as in SPEC B§10).

    ``compaction`` takes ``sessiontree.compaction.CompactionSettings`` (pi's defaults); ``retry`` takes
    ``RetrySettings`` (pi's: a reply failed for a passing reason is sent again up to 3 times after 2, 4, 8 s;
    ``RetrySettings(enabled=False)`` turns it off); ``summarizer`` writes
    compaction and branch summaries (a ``Summarizer`` or a ``Model``; default: the offline summarizer);
    ``models`` lets navigation restore a model recorded on a branch; ``stream`` replaces
    ``sessiontree.llm.stream`` (tests, proxies).
    """

    @classmethod
    def open(
        cls,
        store: str,
        model: Model,
        *,
        session_id: str | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> AgentHarness:
        """A harness on a session of the store a URL names (``sqlite:///…``, ``postgresql://…``, a directory):
        the session ``session_id`` (or a unique prefix of it), else a new session for ``cwd``."""
        import os

        from sessiontree.session.store_access import shared_repo

        repo = shared_repo(store)
        manager = repo.open(session_id) if session_id is not None else repo.create(cwd or os.getcwd())
        return cls(manager, model, **options)

    def __init__(
        self,
        session: SessionManager,
        model: Model,
        *,
        tools: Sequence[AgentTool] | None = None,
        system_prompt: SystemPrompt = None,
        api_key: str | None = None,
        thinking_level: ThinkingLevel = "off",
        compaction: CompactionSettings | None = None,
        retry: RetrySettings | None = None,
        summarizer: Summarizer | Model | None = None,
        active_tool_names: Sequence[str] | None = None,
        stream_options: StreamOptions | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: ToolExecution = "parallel",
        models: ModelRegistry | Iterable[Model] | None = None,
        stream: Any = None,
    ) -> None:
        by_name = LiveSettings.checked_tools(list(tools or ()))
        active = LiveSettings.check_active(
            list(active_tool_names) if active_tool_names is not None else list(by_name), by_name
        )
        options = replace(stream_options or StreamOptions())
        if api_key is not None:
            options = replace(options, api_key=api_key)
        live = LiveSettings(model, thinking_level, by_name, active, system_prompt, options)
        settings = compaction or DEFAULT_COMPACTION_SETTINGS
        facade = AsyncSession(session)
        bus = EventBus()
        compactor = Compactor(facade, bus, _summarizer(summarizer, api_key), settings)
        self._parts = RunParts(
            session=facade,
            bus=bus,
            writes=WriteBuffer(),
            queues=MessageQueues(steering_mode, follow_up_mode),
            cache=ContextCache(),
            live=live,
            compactor=compactor,
            compaction=settings,
            retry=retry or DEFAULT_RETRY_SETTINGS,
            tool_execution=tool_execution,
            clock=session.clock,
            stream=stream or llm_stream,
        )
        known = list(models.all()) if isinstance(models, ModelRegistry) else list(models or ())
        self._parts.models.update({(m.provider, m.id): m for m in [*known, model]})

    # -- state ------------------------------------------------------------------------------------------------
    @property
    def session(self) -> SessionManager:
        """The session (synchronous); the harness itself reaches it only through its async facade."""
        return self._parts.session.manager

    @property
    def phase(self) -> str:
        """``idle``, ``turn``, ``compaction`` or ``branch_summary``."""
        return self._parts.phase

    @property
    def model(self) -> Model:
        return self._parts.live.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._parts.live.thinking_level

    @property
    def tools(self) -> list[AgentTool]:
        return list(self._parts.live.tools.values())

    @property
    def active_tools(self) -> list[AgentTool]:
        return list(self._parts.live.active_tools())

    @property
    def pending_session_writes(self) -> tuple[PendingWrite, ...]:
        """Writes waiting for the next flush, oldest first."""
        return self._parts.writes.pending

    @property
    def steering_mode(self) -> QueueMode:
        return self._parts.queues.steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._parts.queues.steering_mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._parts.queues.follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._parts.queues.follow_up_mode = mode

    @property
    def compaction_settings(self) -> CompactionSettings:
        return self._parts.compaction

    def set_compaction_settings(self, settings: CompactionSettings) -> None:
        """Compaction settings from the next check on (``enabled=False`` turns automatic compaction off)."""
        self._parts.compaction = settings
        self._parts.compactor.settings = settings

    @property
    def retry_settings(self) -> RetrySettings:
        return self._parts.retry

    def set_retry_settings(self, settings: RetrySettings) -> None:
        """Retry settings from the next failed reply on (``enabled=False`` turns automatic retry off)."""
        self._parts.retry = settings

    @property
    def context_cache(self) -> ContextCache:
        """The incremental context behind the turn snapshots (its counters say how often it rebuilt)."""
        return self._parts.cache

    def subscribe(self, listener: Any) -> Any:
        """``listener(event)`` (sync or async) for every event; returns the unsubscribe callable."""
        return self._parts.bus.subscribe(listener)

    def on(self, event_type: str, handler: Any) -> Any:
        """A hook: ``handler(event)`` answers events of ``event_type`` (the last non-None answer wins)."""
        return self._parts.bus.on(event_type, handler)

    # -- writes (buffered while busy) ------------------------------------------------------------------------
    async def flush_pending_session_writes(self) -> int:
        """Write everything buffered now (FIFO); returns how many entries were written."""
        return await flush_writes(self._parts)

    def _write(self, kind: str, *args: Any) -> Posted:
        write(self._parts, kind, *args)
        return Posted(self._parts.bus)

    def append_message(self, message: AgentMessage) -> Posted:
        """Append a message (any role): at once when idle, else after the run's own messages."""
        return self._write("message", message)

    def append_custom_entry(self, custom_type: str, data: Any = UNDEFINED) -> Posted:
        """Append extension state (a ``custom`` entry, never part of the context)."""
        return self._write("custom", custom_type, data)

    def append_custom_message(
        self, custom_type: str, content: Any, display: bool = True, details: Any = UNDEFINED
    ) -> Posted:
        """Append a ``custom_message`` entry (part of the context)."""
        return self._write("custom_message", custom_type, content, display, details)

    def set_label(self, target_id: str, label: str | None) -> Posted:
        """Label an entry (``None`` clears the label)."""
        return self._write("label", target_id, label)

    def set_session_name(self, name: str) -> Posted:
        """Name the session (a ``session_info`` entry)."""
        return self._write("session_info", name)

    def set_model(self, model: Model) -> Posted:
        """Use ``model`` from the next request on (recorded as a ``model_change``)."""
        return change_model(self._parts, model)

    def set_thinking_level(self, level: ThinkingLevel) -> Posted:
        """Use ``level`` from the next request on (recorded as a ``thinking_level_change``)."""
        return change_thinking_level(self._parts, level)

    def set_tools(self, tools: Sequence[AgentTool], active_tool_names: Sequence[str] | None = None) -> Posted:
        """Replace the tools (and the active ones); unknown or duplicate names raise ``invalid_argument``."""
        live = self._parts.live
        by_name = LiveSettings.checked_tools(list(tools))
        names = list(active_tool_names) if active_tool_names is not None else live.active_tool_names
        return apply_tools(self._parts, by_name, LiveSettings.check_active(names, by_name), "set")

    def set_active_tools(self, names: Sequence[str]) -> Posted:
        """Choose which tools the model is offered; unknown or duplicate names raise ``invalid_argument``."""
        live = self._parts.live
        return apply_tools(self._parts, live.tools, LiveSettings.check_active(list(names), live.tools), "set")

    def set_system_prompt(self, system_prompt: SystemPrompt) -> None:
        """A string, or a callback of ``SystemPromptContext`` (sync or async); used from the next request on."""
        self._parts.live.system_prompt = system_prompt

    def set_stream_options(self, options: StreamOptions) -> None:
        """Request options (key, headers, timeouts) from the next request on."""
        self._parts.live.stream_options = replace(options)

    # -- queues ----------------------------------------------------------------------------------------------
    def _queue(self, queue: list[AgentMessage], text: str, images: Sequence[dict[str, Any]] | None) -> Posted:
        queue.append(_user(text, images, self._parts.clock()))
        return self._parts.bus.post(self._parts.queues.event())

    def steer(self, text: str, images: Sequence[dict[str, Any]] | None = None) -> Posted:
        """Queue a user message for the running agent, delivered after the current turn."""
        if self._parts.phase == "idle":
            raise HarnessError("Cannot steer while idle", kind="invalid_state")
        return self._queue(self._parts.queues.steer, text, images)

    def follow_up(self, text: str, images: Sequence[dict[str, Any]] | None = None) -> Posted:
        """Queue a user message for when the running agent would stop."""
        if self._parts.phase == "idle":
            raise HarnessError("Cannot follow up while idle", kind="invalid_state")
        return self._queue(self._parts.queues.follow_up, text, images)

    def next_turn(self, text: str, images: Sequence[dict[str, Any]] | None = None) -> Posted:
        """Queue a message sent before the user message of the next prompt (any phase)."""
        return self._queue(self._parts.queues.next_turn, text, images)

    def clear_queues(self) -> AbortResult:
        """Empty the steer, follow-up and next-turn queues without aborting; returns the steer (next-turn ones
        after them) and follow-up messages removed. Announces ``queue_update`` at the next await."""
        queues = self._parts.queues
        steer, follow_up = queues.clear_interactive()
        steer += MessageQueues.take(queues.next_turn, "all")
        self._parts.bus.post(queues.event())
        return AbortResult(steer, follow_up)

    # -- runs ------------------------------------------------------------------------------------------------
    async def prompt(self, text: str, *, images: Sequence[dict[str, Any]] | None = None) -> AgentMessage:
        """Send ``text`` and run until the agent stops; returns the run's last assistant message."""
        self._begin("turn")
        parts = self._parts
        try:
            await flush_writes(parts)
            state = await record_settings(parts, await compact_before_prompt(parts, await snapshot(parts)))
            prompts = [_user(text, images, parts.clock())]
            if parts.queues.next_turn:
                queued = MessageQueues.take(parts.queues.next_turn, "all")
                try:
                    await parts.bus.emit(parts.queues.event())
                except Exception:
                    MessageQueues.put_back(parts.queues.next_turn, queued)
                    raise
                prompts = [*queued, *prompts]
            answer = await parts.bus.hook(
                {
                    "type": "before_agent_start",
                    "prompt": text,
                    "images": images,
                    "systemPrompt": state.system_prompt,
                }
            )
            system_prompt = None
            if isinstance(answer, dict):
                prompts += list(answer.get("messages") or ())
                system_prompt = answer.get("systemPrompt")
            parts.overflow_attempted = False
            last = await drive(parts, state, prompts, system_prompt=system_prompt)
            if last is None:
                raise HarnessError(
                    "AgentHarness prompt completed without an assistant message", kind="invalid_state"
                )
            return last
        except Exception as error:
            raise normalize_error(error, "unknown") from error
        finally:
            await self._end(run=True)

    async def resume(self) -> AgentMessage | None:
        """Finish a run that was interrupted (a crash, a kill); None when the last run finished.

        Unanswered tool calls of repeatable tools run again; the others get a persisted error result saying
        they were interrupted and not run again; then the model is asked again.
        """
        self._begin("turn")
        parts = self._parts
        try:
            await flush_writes(parts)
            state = await snapshot(parts)
            leaf = await parts.session.leaf_id()
            leaf_entry = await parts.session.entry(leaf) if leaf is not None else None
            leaf_type = leaf_entry.get("type") if leaf_entry is not None else None
            found = find_interruption(state.messages, leaf_type, parts.live.model.context_window)
            if found is None:
                return None
            tools = parts.live.tools
            rerun = [c["id"] for c in found.missing if c["name"] in tools and tools[c["name"]].repeatable]
            skipped = [c["id"] for c in found.missing if c["id"] not in rerun]
            await parts.bus.emit(
                {"type": "resume", "kind": found.kind, "rerun": rerun, "interrupted": skipped}
            )
            if found.assistant is not None:
                await repair_interrupted(parts, state, found.assistant, found.missing, INTERRUPTED_TEXT)
                state = await snapshot(parts)
            if found.drop_last:
                state = drop_trailing_error(state)
                parts.overflow_attempted = True
            return await drive(parts, await record_settings(parts, state), None)
        except Exception as error:
            raise normalize_error(error, "unknown") from error
        finally:
            await self._end(run=True)

    async def abort(self) -> AbortResult:
        """Abort the run (steer and follow-up queues are cleared; next-turn messages and pending writes stay)."""
        parts = self._parts
        steer, follow_up = parts.queues.clear_interactive()
        if parts.signal is not None:
            parts.signal.abort()
        await parts.bus.emit(parts.queues.event())
        await self.wait_for_idle()
        await parts.bus.emit({"type": "abort", "clearedSteer": steer, "clearedFollowUp": follow_up})
        return AbortResult(steer, follow_up)

    async def wait_for_idle(self) -> None:
        """Return once no run is in progress (its awaited listeners included); posted events are delivered."""
        done = self._done
        if done is not None:
            await done.wait()
        await self._parts.bus.deliver_posted()

    async def shutdown(self) -> None:
        """Stop for good (idempotent): abort a run, drop the queues and the pending writes."""
        if self._shut_down:
            return
        if self._parts.phase != "idle":
            await self.abort()
        self._shut_down = True
        self._parts.queues.clear()
        self._parts.writes.clear()
