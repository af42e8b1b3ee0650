"""``AgentSession``: one agent on one session as pi's headless modes drive it (pi's ``AgentSession``), over an
``AgentHarness``: prompts with templates expanded and pi's dispositions, steering and follow-ups, abort,
new / switched / forked / cloned sessions, and pi's events (``wire.py``) to its listeners, a run ending
with ``agent_end`` then ``agent_settled``.

The settings a client changes (model, thinking level, queue modes, automatic compaction and retry) and the
user's shell commands are in ``controls.py``; the reads are in ``queries.py``. ``run`` and ``rpc`` are thin
shells over this class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sessiontree.session.manager import SessionManager

from ...errors import SessionError
from ...llm.models import ENV_API_KEYS
from ...llm.types import AbortSignal, ThinkingLevel
from ..harness import AgentHarness
from ..types import HarnessError
from .config import HostConfig, build_harness, session_model
from .live_summarizer import FollowingSummarizer
from .model_choice import model_api_key
from .thinking import clamp_thinking_level
from .wire import queue_texts, wire_event

__all__ = ["AgentSession", "Disposition", "Listener"]

Listener = Callable[[dict[str, Any]], None]
Disposition = str
"""pi's ``PromptDisposition``: ``started``, ``queued`` or ``handled``."""
Images = Sequence[dict[str, Any]] | None
_BUSY = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
_COMPACTING = (
    "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
)


class AgentSession:
    """An agent session: ``config`` (``load_config``) on ``manager``; listeners get pi's wire events."""

    def __init__(self, config: HostConfig, manager: SessionManager) -> None:
        self.config = config
        self._listeners: list[Listener] = []
        self.queues: dict[str, list[str]] = {"steering": [], "followUp": []}
        self.run_active = False
        self._abort_requested = False
        self.retrying = False
        self.bash_signals: set[AbortSignal] = set()
        self.api_key: str | None = config.choice.api_key
        self.harness = self._open(manager)

    # -- the harness ---------------------------------------------------------------------------------------
    def _open(self, manager: SessionManager, *, switching: bool = False) -> AgentHarness:
        """A harness on ``manager``: the model and thinking level the session records, when it records ones
        that can be used (at start only if the command line named none); else the chosen ones (at start) or
        the current ones (when switching); the level clamped to the model's."""
        config = self.config
        recorded = session_model(config, manager, restore=switching)
        current = self.harness if switching else None
        if recorded is not None:
            use, self.api_key = recorded, model_api_key(recorded, config.registry)
        else:
            use = current.model if current is not None else config.choice.model
        level: ThinkingLevel = current.thinking_level if current is not None else config.choice.thinking_level
        if (switching or not config.thinking_named) and manager.get_leaf_id() is not None:
            level = manager.build_session_context().thinking_level or level  # type: ignore[assignment]
        self.summarizer = FollowingSummarizer(use, self.api_key)
        harness = build_harness(
            config,
            manager,
            model=use,
            api_key=self.api_key,
            thinking_level=clamp_thinking_level(use, level),
            summarizer=self.summarizer,
        )
        harness.subscribe(self._on_event)
        return harness

    @property
    def session(self) -> SessionManager:
        return self.harness.session

    @property
    def cwd(self) -> Path:
        return Path(self.session.get_cwd())

    @property
    def is_compacting(self) -> bool:
        return self.harness.phase == "compaction"

    # -- events --------------------------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """``listener(event)`` for every pi event from now on; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, event: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "settled":
            self.run_active = False
            aborted, self._abort_requested = self._abort_requested, False
            self.emit({"type": "agent_settled", "aborted": aborted})
            return
        if kind == "queue_update":
            steering = [*(event.get("steer") or ()), *(event.get("nextTurn") or ())]
            self.queues = {"steering": queue_texts(steering), "followUp": queue_texts(event.get("followUp"))}
        elif kind == "auto_retry_start":
            self.retrying = True
        elif kind == "auto_retry_end":
            self.retrying = False
        wire = wire_event(event)
        if wire is not None:
            self.emit(wire)

    # -- prompts -------------------------------------------------------------------------------------------
    def _check_auth(self) -> None:
        model = self.harness.model
        if (
            self.api_key is None
            and model.provider in ENV_API_KEYS
            and model_api_key(model, self.config.registry) is None
        ):
            names = " or ".join(ENV_API_KEYS[model.provider])
            raise SessionError(
                f"No API key found for {model.provider}: set {names}, or put the key in pi's auth.json",
                kind="auth",
            )

    async def prompt(
        self,
        text: str,
        images: Images = None,
        streaming_behavior: str | None = None,
        accepted: Callable[[Disposition], None] | None = None,
    ) -> dict[str, Any] | None:
        """pi's ``prompt``: expand ``/skill:`` and ``/template`` text; while a run goes on, queue it (with
        ``streaming_behavior`` ``steer`` or ``followUp``, else an error); else start a run and wait until it
        settles. ``accepted(disposition)`` is called once the prompt is accepted (before the run's first
        event). Returns the run's last assistant message (None when queued)."""
        expanded = self.config.resources.expand(text)
        if self.run_active:
            if streaming_behavior not in ("steer", "followUp"):
                raise HarnessError(_BUSY, kind="busy")
            queue = self.harness.follow_up if streaming_behavior == "followUp" else self.harness.steer
            await queue(expanded, images)
            if accepted is not None:
                accepted("queued")
            return None
        if self.harness.phase != "idle":
            raise HarnessError(_COMPACTING, kind="busy")
        self._check_auth()
        self.run_active, self._abort_requested = True, False
        if accepted is not None:
            accepted("started")
        try:
            return await self.harness.prompt(expanded, images=images)
        finally:
            self.run_active = False

    async def steer(self, text: str, images: Images = None) -> Disposition:
        """Queue a message for after the current turn (when idle: before the next prompt's message)."""
        expanded = self.config.resources.expand(text)
        await (self.harness.steer if self.run_active else self.harness.next_turn)(expanded, images)
        return "queued"

    async def follow_up(self, text: str, images: Images = None) -> Disposition:
        """Queue a message for when the run would end (when idle: before the next prompt's message)."""
        expanded = self.config.resources.expand(text)
        await (self.harness.follow_up if self.run_active else self.harness.next_turn)(expanded, images)
        return "queued"

    def clear_queue(self) -> dict[str, list[str]]:
        """Remove every queued message; returns their texts."""
        cleared = self.harness.clear_queues()
        return {
            "steering": queue_texts(cleared.cleared_steer),
            "followUp": queue_texts(cleared.cleared_follow_up),
        }

    @property
    def pending_message_count(self) -> int:
        return len(self.queues["steering"]) + len(self.queues["followUp"])

    async def abort(self) -> None:
        """Abort the run, its retry and a compaction, then wait until idle (the partial reply stays)."""
        if self.run_active:
            self._abort_requested = True
        await self.harness.abort()

    # -- other sessions ------------------------------------------------------------------------------------
    def _refuse_while_running(self, what: str) -> None:
        if self.run_active or self.harness.phase != "idle":
            raise HarnessError(f"Cannot {what} while the agent is working: abort it first", kind="busy")

    async def new_session(self, parent_session: str | None = None) -> dict[str, bool]:
        self._refuse_while_running("start a new session")
        await self.harness.new_session(parent_session)
        return {"cancelled": False}

    async def switch_session(self, path: str) -> dict[str, bool]:
        """Continue in the session file ``path``: its context, name, model and thinking level."""
        self._refuse_while_running("switch sessions")
        target = Path(path).expanduser()
        target = (target if target.is_absolute() else self.cwd / target).absolute()
        old = self.harness
        current = old.session.get_session_file()
        if current is not None and Path(current).absolute() == target:  # the same file: let go of it first
            await old.shutdown()
            old.session.close()
            manager = SessionManager.open(target)
        else:
            manager = SessionManager.open(target)
            await old.shutdown()
            old.session.close()
        self.harness = self._open(manager, switching=True)
        return {"cancelled": False}

    async def fork(self, entry_id: str) -> dict[str, Any]:
        """Continue in a new session holding the path before the user message ``entry_id``."""
        self._refuse_while_running("fork")
        result = await self.harness.fork(entry_id)
        return {"text": result.selected_text, "cancelled": False}

    async def clone(self) -> dict[str, bool]:
        """Continue in a new session holding the whole current branch."""
        self._refuse_while_running("clone")
        if self.session.get_leaf_id() is None:
            raise SessionError("Cannot clone session: no current entry selected", kind="invalid_state")
        await self.harness.clone()
        return {"cancelled": False}

    async def close(self) -> None:
        """Abort what runs, write what is buffered, release the session."""
        for signal in list(self.bash_signals):
            signal.abort()
        if self.run_active or self.harness.phase != "idle":
            await self.abort()
        await self.harness.flush_pending_session_writes()
        await self.harness.shutdown()
        self.session.sync()
        self.session.close()
