"""The command-line options ``run`` and ``rpc`` share (pi's names): the session, the model, the thinking level,
the tools and the prompt resources; and the agent session's configuration they make.

Option declarations and one function that turns them into ``agent.host.HostOptions``; no agent logic.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import STORE_ENV, flag

if TYPE_CHECKING:
    from ..agent.host import HostOptions

__all__ = [
    "AgentArgs",
    "AppendPromptOpt",
    "ApproveOpt",
    "BaseUrlOpt",
    "ContinueOpt",
    "ModelOpt",
    "NoApproveOpt",
    "NoContextFilesOpt",
    "NoSessionOpt",
    "NoToolsOpt",
    "ProviderOpt",
    "SessionDirOpt",
    "SessionOpt",
    "StoreOpt",
    "SystemPromptOpt",
    "ThinkingOpt",
    "ToolsOpt",
    "with_agent_options",
]

SessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session",
        metavar="FILE|ID",
        help="The session to continue: a .jsonl file (a missing one is created), or a session id (a unique "
        "prefix will do) or name; with --store, an id in that store. Default: a new session.",
        show_default=False,
    ),
]
ContinueOpt = Annotated[bool, flag("--continue", "Continue the most recent session of the directory.", "-c")]
NoSessionOpt = Annotated[bool, flag("--no-session", "Keep the session in memory only: nothing is written.")]
SessionDirOpt = Annotated[
    str | None,
    typer.Option(
        "--session-dir",
        metavar="DIR",
        help="Look for and create sessions in DIR (default: pi's session directory for this folder).",
        show_default=False,
    ),
]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URL",
        envvar=STORE_ENV,
        help="Where sessions live: a directory, jsonl:DIR, sqlite:///PATH or postgresql://… "
        f"(default: ${STORE_ENV}, else pi's session directory).",
        show_default=False,
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="[PROVIDER/]ID[:LEVEL]",
        help='The model (default: $SESSIONTREE_MODEL, then "model" in the settings file, then pi\'s '
        "defaultProvider/defaultModel, then the first provider with an API key).",
        show_default=False,
    ),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider",
        metavar="NAME",
        help="The provider of --model (or its default model).",
        show_default=False,
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        metavar="URL",
        help="Send requests to this OpenAI-compatible server instead (http://localhost:11434/v1); the model "
        "is then a name on that server.",
        show_default=False,
    ),
]
ThinkingOpt = Annotated[
    str | None,
    typer.Option(
        "--thinking",
        metavar="LEVEL",
        help="Thinking level: off, minimal, low, medium, high or xhigh (default: the session's, the settings', "
        "else off; clamped to what the model has).",
        show_default=False,
    ),
]
ToolsOpt = Annotated[
    str | None,
    typer.Option(
        "--tools",
        "-t",
        metavar="LIST",
        help="The tools the model is offered, comma-separated (read,bash,edit,write,grep,find,ls; * patterns "
        "work). Default: read,bash,edit,write.",
        show_default=False,
    ),
]
NoToolsOpt = Annotated[bool, flag("--no-tools", "Offer the model no tools.", "-nt")]
SystemPromptOpt = Annotated[
    str | None,
    typer.Option(
        "--system-prompt",
        metavar="TEXT|FILE",
        help="Replace the system prompt's default text (a file's content when FILE exists).",
        show_default=False,
    ),
]
AppendPromptOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--append-system-prompt",
        metavar="TEXT|FILE",
        help="Append to the system prompt (repeatable; replaces APPEND_SYSTEM.md).",
        show_default=False,
    ),
]
NoContextFilesOpt = Annotated[
    bool, flag("--no-context-files", "Leave AGENTS.md / CLAUDE.md files out of the system prompt.", "-nc")
]
ApproveOpt = Annotated[
    bool, flag("--approve", "Trust this project's .pi/ resources (skills, prompts, SYSTEM.md).", "-a")
]
NoApproveOpt = Annotated[bool, flag("--no-approve", "Do not trust this project's .pi/ resources.", "-na")]


@dataclass(frozen=True, slots=True)
class AgentArgs:
    """The shared options as given."""

    session: str | None = None
    continue_recent: bool = False
    no_session: bool = False
    session_dir: str | None = None
    store: str | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    thinking: str | None = None
    tools: str | None = None
    no_tools: bool = False
    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    no_context_files: bool = False
    approve: bool = False
    no_approve: bool = False

    def host_options(self, cwd: Path) -> HostOptions:
        """``agent.host.HostOptions`` for ``cwd``."""
        from ..agent.host import HostOptions, ResourceOptions, SessionSpec, parse_tool_list

        spec = SessionSpec(
            ref=self.session,
            continue_recent=self.continue_recent,
            in_memory=self.no_session,
            session_dir=self.session_dir,
            store=self.store,
        )
        resources = ResourceOptions(
            system_prompt=self.system_prompt,
            append_system_prompt=self.append_system_prompt,
            no_context_files=self.no_context_files,
            approve=True if self.approve else (False if self.no_approve else None),
        )
        return HostOptions(
            cwd,
            spec,
            model=self.model,
            provider=self.provider,
            base_url=self.base_url,
            thinking=self.thinking,
            tools=parse_tool_list(self.tools) if self.tools is not None else None,
            no_tools=self.no_tools,
            resources=resources,
        )


# the shared options in the order ``--help`` lists them: (parameter name, annotation, default, AgentArgs field)
_SHARED: tuple[tuple[str, Any, Any, str], ...] = (
    ("session", SessionOpt, None, "session"),
    ("continue_", ContinueOpt, False, "continue_recent"),
    ("no_session", NoSessionOpt, False, "no_session"),
    ("session_dir", SessionDirOpt, None, "session_dir"),
    ("store", StoreOpt, None, "store"),
    ("model", ModelOpt, None, "model"),
    ("provider", ProviderOpt, None, "provider"),
    ("base_url", BaseUrlOpt, None, "base_url"),
    ("thinking", ThinkingOpt, None, "thinking"),
    ("tools", ToolsOpt, None, "tools"),
    ("no_tools", NoToolsOpt, False, "no_tools"),
    ("system_prompt", SystemPromptOpt, None, "system_prompt"),
    ("append_system_prompt", AppendPromptOpt, None, "append_system_prompt"),
    ("no_context_files", NoContextFilesOpt, False, "no_context_files"),
    ("approve", ApproveOpt, False, "approve"),
    ("no_approve", NoApproveOpt, False, "no_approve"),
)


def with_agent_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the shared options added after its own, handed to it as one ``args: AgentArgs``.

    ``command`` declares its own options and a keyword parameter ``args``; typer sees the combined signature
    (``__signature__``), so both commands list the shared options once, in the same order, with the same help.
    """
    own = inspect.signature(command, eval_str=True)
    kept = [p for p in own.parameters.values() if p.name != "args"]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        for name, annotation, default, _ in _SHARED
    ]

    @functools.wraps(command)
    def wrapper(**options: Any) -> None:
        values = {field: options.pop(name) for name, _, _, field in _SHARED}
        values["append_system_prompt"] = tuple(values["append_system_prompt"] or ())
        command(args=AgentArgs(**values), **options)

    wrapper.__signature__ = own.replace(parameters=[*kept, *shared])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in (*kept, *shared)}
    return wrapper
