"""The agent session layer shared by ``sessiontree chat``, ``run`` and ``rpc``: settings, the model choice,
the session to open, the tools, the prompt resources and the harness built from them (``config``), and
``AgentSession``, pi's headless agent session over the harness, with pi's wire events.

One module per job: settings files (``settings``), models and keys (``model_choice``), thinking levels
(``thinking``), which session (``opening``), which tools (``tool_choice``), the prompt resources
(``prompt``), the configuration and the harness (``config``), the session (``agent_session``), what a
client changes (``controls``) and reads (``queries``), pi's event form (``wire``).
"""

from __future__ import annotations

from .agent_session import AgentSession, Disposition, Listener
from .config import HostConfig, HostOptions, build_harness, load_config, session_model
from .model_choice import (
    LOCAL_MODEL_ID,
    MODEL_ENV,
    ModelChoice,
    available_models,
    choose_model,
    model_api_key,
)
from .opening import SessionSpec, looks_like_path, open_ref, open_session
from .prompt import PromptResources, ResourceOptions, load_prompt_resources
from .settings import (
    SETTINGS_ENV,
    AgentSettings,
    agent_dir,
    default_settings_path,
    load_settings,
    pi_settings_path,
)
from .thinking import THINKING_LEVELS, check_thinking_level, clamp_thinking_level, supported_thinking_levels
from .tool_choice import DEFAULT_ACTIVE_TOOLS, choose_tools, parse_tool_list
from .wire import wire_event

__all__ = [
    "DEFAULT_ACTIVE_TOOLS",
    "LOCAL_MODEL_ID",
    "MODEL_ENV",
    "SETTINGS_ENV",
    "THINKING_LEVELS",
    "AgentSession",
    "AgentSettings",
    "Disposition",
    "HostConfig",
    "HostOptions",
    "Listener",
    "ModelChoice",
    "PromptResources",
    "ResourceOptions",
    "SessionSpec",
    "agent_dir",
    "available_models",
    "build_harness",
    "check_thinking_level",
    "choose_model",
    "choose_tools",
    "clamp_thinking_level",
    "default_settings_path",
    "load_config",
    "load_prompt_resources",
    "load_settings",
    "looks_like_path",
    "model_api_key",
    "open_ref",
    "open_session",
    "parse_tool_list",
    "pi_settings_path",
    "session_model",
    "supported_thinking_levels",
    "wire_event",
]
