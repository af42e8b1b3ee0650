"""A model summarizer that follows the agent session's model (pi: "the summary comes from the session's
model"), so compaction uses the model ``set_model`` or ``cycle_model`` chose."""

from __future__ import annotations

from ...compaction.summarizer import LlmSummarizer
from ...llm.types import Model, StreamOptions

__all__ = ["FollowingSummarizer"]


class FollowingSummarizer(LlmSummarizer):
    """An ``LlmSummarizer`` that ``follow`` points at another model and key."""

    def __init__(self, model: Model, api_key: str | None) -> None:
        super().__init__(model, StreamOptions(api_key=api_key))

    def follow(self, model: Model, api_key: str | None) -> None:
        """Summarize with ``model`` (and ``api_key``) from now on."""
        super().__init__(model, StreamOptions(api_key=api_key))
