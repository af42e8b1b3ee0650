"""Checks that a session's context makes a valid request in each wire format: every tool call is answered by
exactly one tool result before the conversation moves on (the rule every provider enforces)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontree.llm import Context, Model, StreamOptions, Tool, convert_to_llm
from sessiontree.llm.providers import anthropic, openai_completions, openai_responses
from sessiontree.llm.types import Api

APIS: tuple[Api, ...] = ("openai-completions", "openai-responses", "anthropic-messages")


def wire_model(api: Api) -> Model:
    return Model(
        id="check-model", api=api, provider="check", base_url="http://127.0.0.1:9/v1", context_window=200_000
    )


def _completions(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    open_calls: set[str] = set()
    for message in body["messages"]:
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in open_calls:
                problems.append(f"tool result {message['tool_call_id']} answers no open call")
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            problems.append(f"calls {sorted(open_calls)} unanswered before a {role} message")
        open_calls = {c["id"] for c in message.get("tool_calls") or []} if role == "assistant" else set()
    if open_calls:
        problems.append(f"calls {sorted(open_calls)} unanswered at the end")
    return problems


def _responses(body: dict[str, Any]) -> list[str]:
    calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    problems = []
    if sorted(calls) != sorted(outputs) or len(set(outputs)) != len(outputs):
        problems.append(f"calls {calls} and outputs {outputs} do not pair")
    return problems


def _anthropic(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    messages = body["messages"]
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = [b["id"] for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        if not uses:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = (
            [
                b["tool_use_id"]
                for b in following["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            if following is not None
            and following["role"] == "user"
            and isinstance(following["content"], list)
            else []
        )
        if sorted(answered) != sorted(uses):
            problems.append(f"tool_use {uses} answered by {answered}")
    return problems


def request_problems(messages: Sequence[dict[str, Any]], tools: Sequence[Tool] = ()) -> dict[str, list[str]]:
    """For each wire format, what is wrong with the request these runtime messages make (empty: valid)."""
    context = Context(messages=convert_to_llm(messages), system_prompt="check", tools=list(tools))
    options = StreamOptions(api_key="check")
    return {
        "openai-completions": _completions(
            openai_completions.build_request(wire_model(APIS[0]), context, options)
        ),
        "openai-responses": _responses(openai_responses.build_request(wire_model(APIS[1]), context, options)),
        "anthropic-messages": _anthropic(anthropic.build_request(wire_model(APIS[2]), context, options)[0]),
    }
