"""The harness operations that reshape the session instead of running the agent: manual compaction, tree
navigation (pi's ``/tree``) and continuing in another file (``/fork``, ``/clone``, ``/new``).

Each runs under the phase guard, flushes the buffered writes first and, after a file switch, brings the live
settings in line with the new path. ``AgentHarness`` inherits them; the work itself is in ``branching``,
``navigation`` and ``compaction_policy``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from sessiontree.session.manager import SessionManager

from . import events as ev
from .branching import navigate
from .live import restore_settings
from .navigation import BranchMove, ForkResult, clone_session, fork_session
from .phase_guard import PhaseGuard, normalize_error

__all__ = ["TreeOperations"]

Entry = dict[str, Any]


class TreeOperations(PhaseGuard):
    """Compaction, navigation, fork, clone and new session for ``AgentHarness``."""

    async def compact(self, focus: str | None = None) -> Entry:
        """Compact the branch now (``focus``: what the summary should stress); returns the compaction entry."""
        self._begin("compaction")
        parts = self._parts
        try:
            await parts.writes.flush(parts.session)
            await parts.bus.emit(ev.compaction_start("manual"))
            try:
                entry = await parts.compactor.compact(
                    custom_instructions=focus, thinking_level=parts.live.thinking_level, signal=parts.signal
                )
            except Exception as error:
                aborted = getattr(error, "kind", None) == "aborted"
                await parts.bus.emit(
                    ev.compaction_end("manual", aborted=aborted, error_message=f"Compaction failed: {error}")
                )
                raise normalize_error(error, "compaction") from error
            await parts.bus.emit(ev.compaction_end("manual", result=entry))
            return entry
        finally:
            await self._end()

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        focus: str | None = None,
        label: str | None = None,
        *,
        replace_instructions: bool = False,
    ) -> BranchMove:
        """Move to another entry of the tree (pi's ``/tree``); see ``navigation.branch_to``.

        A user or custom-message target moves the leaf to its parent and returns its text as ``editor_text``;
        with ``summarize`` the abandoned branch is summarized at the new position; ``label`` labels the
        summary (or the target). Afterwards the live model, thinking level and active tools are the path's.
        """
        self._begin("branch_summary")
        try:
            await self._parts.writes.flush(self._parts.session)
            return await navigate(
                self._parts,
                target_id,
                summarize=summarize,
                focus=focus,
                label=label,
                replace_instructions=replace_instructions,
            )
        except Exception as error:
            raise normalize_error(error, "branch_summary") from error
        finally:
            await self._end()

    async def _switch(self, work: Any, *args: Any) -> Any:
        self._begin("branch_summary")
        try:
            await self._parts.writes.flush(self._parts.session)
            result = await self._parts.session.run(work, *args)
            self._parts.cache.invalidate()
            await restore_settings(self._parts)
            return result
        except Exception as error:
            raise normalize_error(error, "session") from error
        finally:
            await self._end()

    async def fork(self, entry_id: str) -> ForkResult:
        """pi's ``/fork``: continue in a new session file holding the path before the user message ``entry_id``."""
        result: ForkResult = await self._switch(fork_session, entry_id)
        return result

    async def clone(self) -> str | None:
        """pi's ``/clone``: continue in a new session file holding the current path; returns its path."""
        path: str | None = await self._switch(clone_session)
        return path

    async def new_session(self, parent_session: str | None = None) -> str | None:
        """pi's ``/new``: continue in a new, empty session file (its header naming ``parent_session`` when
        given); returns its path (None in memory)."""
        path: str | None = await self._switch(
            partial(SessionManager.new_session, parent_session=parent_session)
        )
        return path
