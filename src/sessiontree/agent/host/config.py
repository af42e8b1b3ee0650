"""An agent session's configuration from its command line: the settings files, the models and keys, the
chosen model and thinking level, the session to open, the tools and the prompt resources; and the harness
built from it, the same for ``chat``, ``run`` and ``rpc``.

Reads files and builds objects; sends no request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sessiontree.session.manager import SessionManager

from ...compaction.summarizer import Summarizer
from ...errors import SessionError
from ...llm.models import ModelRegistry
from ...llm.types import Model, ThinkingLevel
from ..harness import AgentHarness
from ..turn_state import SystemPromptContext
from ..types import AgentTool
from .model_choice import ModelChoice, choose_model, model_api_key
from .opening import SessionSpec, open_session
from .prompt import PromptResources, ResourceOptions, load_prompt_resources
from .settings import AgentSettings, load_settings
from .tool_choice import choose_tools

__all__ = ["HostConfig", "HostOptions", "build_harness", "load_config", "session_model"]


@dataclass(frozen=True, slots=True)
class HostOptions:
    """The command line of an agent session (``None``: not given)."""

    cwd: Path
    session: SessionSpec = field(default_factory=SessionSpec)
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    thinking: str | None = None
    tools: Sequence[str] | None = None
    no_tools: bool = False
    resources: ResourceOptions = field(default_factory=ResourceOptions)


@dataclass(slots=True)
class HostConfig:
    """Everything an agent session is built from."""

    cwd: Path
    settings: AgentSettings
    registry: ModelRegistry
    choice: ModelChoice
    spec: SessionSpec
    tools: list[AgentTool]
    active_tools: list[str]
    resources: PromptResources
    base_url: str | None = None
    model_named: bool = False
    """Whether the command line named the model (then an opened session's own model does not replace it)."""
    thinking_named: bool = False
    """Whether the command line named the thinking level (likewise)."""

    def open_session(self) -> SessionManager:
        """The session the command line names (created when it names none)."""
        return open_session(self.spec, self.cwd)


def load_config(
    options: HostOptions, *, environ: Mapping[str, str] | None = None, settings: AgentSettings | None = None
) -> HostConfig:
    """Read the settings and the models, choose the model, the tools and the resources."""
    options.session.check()
    settings = settings if settings is not None else load_settings(environ=environ)
    try:
        registry = ModelRegistry.load(environ=environ)
    except ValueError as exc:
        raise SessionError(str(exc), kind="invalid_argument") from None
    choice = choose_model(
        options.model,
        options.base_url,
        options.thinking,
        provider=options.provider,
        settings=settings,
        registry=registry,
        environ=environ,
    )
    tools, active = choose_tools(options.cwd, options.tools, no_tools=options.no_tools)
    return HostConfig(
        cwd=options.cwd,
        settings=settings,
        registry=registry,
        choice=choice,
        spec=options.session,
        tools=tools,
        active_tools=active,
        resources=load_prompt_resources(
            options.cwd, options.resources, [t for t in tools if t.name in active]
        ),
        base_url=options.base_url or settings.base_url,
        model_named=bool(options.model or options.provider),
        thinking_named=bool(options.thinking) or ":" in (options.model or ""),
    )


def session_model(config: HostConfig, manager: SessionManager, *, restore: bool = False) -> Model | None:
    """The model an opened session last used, when it is known and usable here and, unless ``restore``
    (switching sessions), the command line asked for none (no ``--model``, no ``--base-url``); else None."""
    if not restore and (config.model_named or config.base_url):
        return None
    recorded = manager.build_session_context().model or {}
    model = config.registry.get(str(recorded.get("provider")), str(recorded.get("modelId")))
    if model is None or model_api_key(model, config.registry) is None:
        return None
    return model


def build_harness(
    config: HostConfig,
    manager: SessionManager,
    *,
    model: Model | None = None,
    api_key: str | None = None,
    thinking_level: ThinkingLevel | None = None,
    summarizer: Summarizer | None = None,
) -> AgentHarness:
    """The harness for ``manager``: the chosen (or given) model, the tools, the system prompt from the
    resources, the settings' compaction and retry, summaries written by the model."""
    use = model or config.choice.model
    key = api_key if model is not None else config.choice.api_key
    resources = config.resources

    def system_prompt(context: SystemPromptContext) -> str:
        return resources.system_prompt(context.active_tools)

    return AgentHarness(
        manager,
        use,
        tools=config.tools,
        active_tool_names=config.active_tools,
        system_prompt=system_prompt,
        api_key=key,
        thinking_level=thinking_level or config.choice.thinking_level,
        compaction=config.settings.compaction,
        retry=config.settings.retry,
        summarizer=summarizer or use,
        models=config.registry,
    )
