"""The model and wire layers: runtime messages to model messages, token accounting, providers that stream.

Import from here; the SDK-backed providers load lazily on the first ``stream``/``complete`` call.
"""

from __future__ import annotations

from sessiontree._lazy import export_lazily

TYPE_CHECKING = False  # importing typing for it would cost more than this module

if TYPE_CHECKING:
    from .convert import (
        BRANCH_SUMMARY_PREFIX,
        BRANCH_SUMMARY_SUFFIX,
        COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
        bash_execution_to_text,
        convert_to_llm,
        prepare_llm_messages,
    )
    from .models import (
        BUILTIN_MODELS,
        ModelRegistry,
        get_env_api_key,
        load_models_file,
        openai_compatible_model,
    )
    from .overflow import is_context_overflow
    from .stream import AssistantMessageStream, calculate_cost, complete, stream
    from .tokens import (
        ContextUsageEstimate,
        calculate_context_tokens,
        estimate_context_tokens,
        estimate_tokens,
        get_last_assistant_usage,
    )
    from .transform import transform_messages
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

export_lazily(
    __name__,
    {
        "BRANCH_SUMMARY_PREFIX": ".convert",
        "BRANCH_SUMMARY_SUFFIX": ".convert",
        "COMPACTION_SUMMARY_PREFIX": ".convert",
        "COMPACTION_SUMMARY_SUFFIX": ".convert",
        "bash_execution_to_text": ".convert",
        "convert_to_llm": ".convert",
        "prepare_llm_messages": ".convert",
        "BUILTIN_MODELS": ".models",
        "ModelRegistry": ".models",
        "get_env_api_key": ".models",
        "load_models_file": ".models",
        "openai_compatible_model": ".models",
        "is_context_overflow": ".overflow",
        "AssistantMessageStream": ".stream",
        "calculate_cost": ".stream",
        "complete": ".stream",
        "stream": ".stream",
        "transform_messages": ".transform",
        "ContextUsageEstimate": ".tokens",
        "calculate_context_tokens": ".tokens",
        "estimate_context_tokens": ".tokens",
        "estimate_tokens": ".tokens",
        "get_last_assistant_usage": ".tokens",
        "AbortSignal": ".types",
        "Api": ".types",
        "Context": ".types",
        "Model": ".types",
        "ModelCost": ".types",
        "StreamEvent": ".types",
        "StreamOptions": ".types",
        "ThinkingLevel": ".types",
        "Tool": ".types",
    },
)
