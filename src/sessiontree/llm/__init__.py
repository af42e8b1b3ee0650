"""The model and wire layers: runtime messages to model messages, token accounting, providers that stream.

Import from here; the SDK-backed providers load lazily on the first ``stream``/``complete`` call.
"""

from __future__ import annotations

from .convert import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    bash_execution_to_text,
    convert_to_llm,
    prepare_llm_messages,
)
from .models import BUILTIN_MODELS, ModelRegistry, get_env_api_key, load_models_file, openai_compatible_model
from .overflow import is_context_overflow
from .stream import AssistantMessageStream, calculate_cost, complete, stream
from .tokens import (
    ContextUsageEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
)
from .types import (
    AbortSignal,
    Api,
    Context,
    Model,
    ModelCost,
    StreamEvent,
    StreamOptions,
    ThinkingLevel,
    Tool,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "BUILTIN_MODELS",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "AbortSignal",
    "Api",
    "AssistantMessageStream",
    "Context",
    "ContextUsageEstimate",
    "Model",
    "ModelCost",
    "ModelRegistry",
    "StreamEvent",
    "StreamOptions",
    "ThinkingLevel",
    "Tool",
    "bash_execution_to_text",
    "calculate_context_tokens",
    "calculate_cost",
    "complete",
    "convert_to_llm",
    "estimate_context_tokens",
    "estimate_tokens",
    "get_env_api_key",
    "get_last_assistant_usage",
    "is_context_overflow",
    "load_models_file",
    "openai_compatible_model",
    "prepare_llm_messages",
    "stream",
    "transform_messages",
]
