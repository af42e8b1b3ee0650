"""Test support for the agent suite: harnesses on in-memory or file sessions, event recorders, small tools
(pi's test ``calculate`` and ``get_current_time``), and readers of what a session stored."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, AgentTool, ScriptedModel, ToolResult

Event = dict[str, Any]


def _calculate_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    }


async def _calculate(_call_id: str, args: dict[str, Any], _signal: Any, _update: Any) -> ToolResult:
    allowed = set("0123456789+-*/(). ")
    expression = str(args["expression"])
    if not set(expression) <= allowed:
        raise ValueError(f"Cannot evaluate {expression!r}")
    return ToolResult([{"type": "text", "text": f"{expression} = {eval(expression)}"}])


CALCULATE = AgentTool("calculate", "Evaluate an arithmetic expression", _calculate_schema(), _calculate)


async def _now(_call_id: str, _args: dict[str, Any], _signal: Any, _update: Any) -> ToolResult:
    return ToolResult([{"type": "text", "text": "2025-01-01T00:00:00Z"}])


GET_CURRENT_TIME = AgentTool(
    "get_current_time", "The current time", {"type": "object", "properties": {}}, _now, repeatable=True
)


def delayed_tool(name: str, seconds: float, *, repeatable: bool = False) -> AgentTool:
    """A tool that answers ``name:<n>`` after ``seconds`` (to make end events arrive out of order)."""

    async def execute(_call_id: str, args: dict[str, Any], _signal: Any, _update: Any) -> ToolResult:
        await anyio.sleep(seconds)
        return ToolResult([{"type": "text", "text": f"{name}:{args.get('n')}"}])

    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    return AgentTool(name, f"answers after {seconds}s", schema, execute, repeatable=repeatable)


class Recorder:
    """Records every event; ``types()`` and ``of(type)`` read them back."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e["type"] == kind]


def roles(manager: SessionManager) -> list[str]:
    """Roles of the stored ``message`` entries, in file order."""
    return [e["message"]["role"] for e in manager.get_entries() if e["type"] == "message"]


def texts(message: dict[str, Any]) -> str:
    """The text of a message (string content or its text blocks joined)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


@contextmanager
def session_kinds(kind: str, tmp_path: Path) -> Iterator[SessionManager]:
    """A fresh session in memory (``memory``) or in a JSONL file (``file``), closed afterwards."""
    if kind == "memory":
        manager = SessionManager.in_memory(str(tmp_path))
    else:
        manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    try:
        yield manager
    finally:
        manager.close()


def harness(model: ScriptedModel, manager: SessionManager | None = None, **options: Any) -> AgentHarness:
    """An ``AgentHarness`` on ``manager`` (a new in-memory session by default)."""
    return AgentHarness(manager or SessionManager.in_memory("/work"), model, **options)
