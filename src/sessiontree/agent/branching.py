"""Tree navigation as the harness does it (pi's ``AgentHarness.navigateTree`` with the coding agent's label
option): the ``session_before_tree`` hook, an optional branch summary, the move, the restored settings and
the ``session_tree`` event.

Every storage step goes through the session facade, around the awaited summary; phases and errors are the
harness's business.
"""

from __future__ import annotations

from typing import Any

from sessiontree.format.pi_json import UNDEFINED
from sessiontree.session.manager import SessionManager

from ..compaction.summarizer import BranchSummaryError
from .live import restore_settings
from .navigation import BranchMove, apply_navigation, plan_navigation, summarize_abandoned
from .run import RunParts
from .types import HarnessError

__all__ = ["navigate"]


async def navigate(
    parts: RunParts,
    target_id: str,
    *,
    summarize: bool,
    focus: str | None,
    label: str | None,
    replace_instructions: bool,
) -> BranchMove:
    """Move to ``target_id``; see ``AgentHarness.navigate_tree``."""
    try:
        plan = await parts.session.run(plan_navigation, target_id)
    except Exception as error:
        raise HarnessError(str(error), kind="invalid_argument", cause=error) from error
    if plan.no_op:
        return BranchMove(plan.old_leaf_id, plan.old_leaf_id)
    answer: Any = await parts.bus.hook(
        {"type": "session_before_tree", "preparation": plan, "signal": parts.signal}
    )
    answer = answer if isinstance(answer, dict) else {}
    if answer.get("cancel"):
        return BranchMove(plan.old_leaf_id, plan.old_leaf_id, cancelled=True)
    provided = answer.get("summary") if isinstance(answer.get("summary"), dict) else None
    summary: str | None = None
    details: Any = UNDEFINED
    if provided is not None:  # a hook's summary is used even when none was asked for (the harness's rule)
        summary, details = provided.get("summary"), provided.get("details", UNDEFINED)
    elif summarize:
        try:
            result = await summarize_abandoned(
                plan,
                parts.compactor.summarizer,
                custom_instructions=answer.get("customInstructions", focus),
                replace_instructions=bool(answer.get("replaceInstructions", replace_instructions)),
                signal=parts.signal,
            )
        except BranchSummaryError as error:
            if error.kind == "aborted":
                return BranchMove(plan.old_leaf_id, plan.old_leaf_id, cancelled=True)
            raise HarnessError(str(error), kind="branch_summary", cause=error) from error
        if result is not None:
            summary, details = result.summary, result.details
    move: BranchMove = await parts.session.run(
        apply_navigation, plan, summary, details, True if provided is not None else UNDEFINED
    )
    label = answer.get("label", label)
    if label:
        target = move.summary_entry["id"] if move.summary_entry else plan.target_id
        await parts.session.run(SessionManager.append_label_change, target, label)
    await restore_settings(parts)
    await parts.bus.emit(
        {
            "type": "session_tree",
            "newLeafId": await parts.session.leaf_id(),
            "oldLeafId": plan.old_leaf_id,
            "summaryEntry": move.summary_entry,
            "fromHook": provided is not None,
        }
    )
    return move
