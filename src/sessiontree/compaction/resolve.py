"""Which summarizer a command uses: the offline one unless a model is named (``--model`` or
``$SESSIONTREE_MODEL``) and has an API key.

Only chooses; it builds no requests and runs no summaries.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..llm.models import ModelRegistry
from ..llm.types import StreamOptions
from .offline import OfflineSummarizer
from .summarizer import LlmSummarizer, Summarizer

__all__ = ["MODEL_ENV", "resolve_summarizer"]

MODEL_ENV = "SESSIONTREE_MODEL"
"""Environment variable naming the summarization model (``provider/id``) when ``--model`` is not given."""


def resolve_summarizer(
    model_ref: str | None = None,
    *,
    offline: bool = False,
    registry: ModelRegistry | None = None,
    environ: Mapping[str, str] | None = None,
) -> Summarizer:
    """The summarizer for a command: the offline one when asked or when no model is configured, else the
    model named by ``model_ref`` or ``$SESSIONTREE_MODEL`` (``provider/id`` or a bare id) with its API key.

    Raises ``ValueError`` for an unknown model or a model without an API key.
    """
    env = os.environ if environ is None else environ
    ref = model_ref or env.get(MODEL_ENV) or None
    if offline or not ref:
        return OfflineSummarizer()
    models = registry if registry is not None else ModelRegistry.load(environ=env)
    try:
        model = models.require(ref)
    except LookupError as exc:
        raise ValueError(str(exc)) from None
    key = models.api_key(model.provider)
    if not key:
        raise ValueError(
            f"No API key for provider {model.provider!r} (set it in the environment or in pi's auth.json)"
        )
    return LlmSummarizer(model, StreamOptions(api_key=key))
