"""The summarizer seam: one request shape, and anything that answers it (a model, the offline summarizer,
a scripted test double). Also the errors summarization raises and the check that turns a reply into text.

Builds no prompts, reads no sessions and picks no summarizer (``resolve`` does); the model path only forwards
the request to ``llm.complete``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from sessiontree.format.ids import now_ms
from sessiontree.format.messages import AssistantMessage

from ..errors import SessionError
from ..llm.stream import complete
from ..llm.types import AbortSignal, Context, Model, StreamOptions, ThinkingLevel

__all__ = [
    "BranchSummaryError",
    "CompactionError",
    "LlmSummarizer",
    "Summarizer",
    "SummaryKind",
    "SummaryRequest",
    "reply_text",
]

SummaryKind = Literal["history", "turn_prefix", "branch"]
AgentMessage = dict[str, Any]


class CompactionError(SessionError):
    """A compaction that could not be made.

    ``kind``: ``nothing_to_compact``, ``already_compacted``, ``summarization_failed``, ``aborted``,
    ``invalid_session``.
    """

    kind = "compaction"


class BranchSummaryError(SessionError):
    """A branch summary that could not be made (``kind``: ``summarization_failed`` or ``aborted``)."""

    kind = "branch_summary"


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summary to produce.

    ``system_prompt`` + ``prompt`` are exactly what a model receives; ``messages`` (the runtime messages
    being summarized), ``previous_summary`` and ``custom_instructions`` are the same content in structured
    form, for summarizers that do not read prose.
    """

    kind: SummaryKind
    messages: Sequence[AgentMessage]
    system_prompt: str
    prompt: str
    max_tokens: int
    previous_summary: str | None = None
    custom_instructions: str | None = None
    reasoning: ThinkingLevel | None = None
    signal: AbortSignal | None = field(default=None, compare=False)

    def user_message(self, timestamp: int | None = None) -> AgentMessage:
        """The single user message a model receives."""
        return {
            "role": "user",
            "content": [{"type": "text", "text": self.prompt}],
            "timestamp": now_ms() if timestamp is None else timestamp,
        }

    def context(self) -> Context:
        """The model-layer request: the system prompt and the one user message."""
        return Context(messages=[self.user_message()], system_prompt=self.system_prompt)  # type: ignore[list-item]


@runtime_checkable
class Summarizer(Protocol):
    """Anything that answers a ``SummaryRequest`` with an assistant message.

    A reply with ``stopReason`` ``error`` or ``aborted`` is a failure (its ``errorMessage`` says why); the
    summary is the reply's text blocks joined by newlines. ``max_output_tokens`` caps the output budget
    (0 = no cap), ``supports_reasoning`` says whether a thinking level is passed on, ``context_window``
    sizes branch-summary budgets (None = 128000), ``name`` is shown to users.
    """

    name: str
    max_output_tokens: int
    supports_reasoning: bool
    context_window: int | None

    async def summarize(self, request: SummaryRequest) -> AssistantMessage: ...


def reply_text(reply: AssistantMessage) -> str:
    """The text blocks of a reply joined by newlines (how pi reads a summary)."""
    parts: list[str] = []
    for block in reply.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            parts.append(text if isinstance(text, str) else "")
    return "\n".join(parts)


async def ask_summary(
    summarizer: Summarizer,
    request: SummaryRequest,
    error: type[SessionError],
    *,
    aborted: str,
    failed: str,
    unknown: str,
) -> str:
    """The reply's text; an aborted or failed reply raises ``error`` (``errorMessage``, else ``aborted`` /
    ``failed: unknown``) with kind ``aborted`` or ``summarization_failed``."""
    reply = await summarizer.summarize(request)
    stop = reply.get("stopReason")
    if stop == "aborted":
        raise error(reply.get("errorMessage") or aborted, kind="aborted")
    if stop == "error":
        reason = reply.get("errorMessage") or unknown
        raise error(f"{failed}: {reason}", kind="summarization_failed")
    return reply_text(reply)


class LlmSummarizer:
    """Summaries from a model through the model layer (``llm.complete``).

    ``options`` carries the API key, headers, base URL and timeouts; each request sets its own
    ``max_tokens``, ``reasoning`` and abort signal on a copy.
    """

    def __init__(self, model: Model, options: StreamOptions | None = None) -> None:
        self.model = model
        self.options = options or StreamOptions()
        self.name = f"{model.provider}/{model.id}"
        self.max_output_tokens = model.max_tokens
        self.supports_reasoning = model.reasoning
        self.context_window: int | None = model.context_window

    async def summarize(self, request: SummaryRequest) -> AssistantMessage:
        options = replace(
            self.options,
            max_tokens=request.max_tokens,
            reasoning=request.reasoning,
            signal=request.signal or self.options.signal,
        )
        return await complete(self.model, request.context(), options)
