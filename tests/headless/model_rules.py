"""A loopback model that answers by rule instead of by a fixed script: ``FakeServer`` from tests/llm with a
replies object that picks each reply from the request it answers (its last message), in the Chat
Completions dialect. Replies stay right however many requests come and in whatever order (summaries
included)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.llm.fake_servers import FakeServer, JsonReply, RawReply, Recorded, SseReply, chat_completions_sse

Reply = JsonReply | RawReply | SseReply
USAGE = {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}


def last_message(request: Recorded) -> dict[str, Any]:
    messages = (request.body or {}).get("messages") or [{}]
    return messages[-1]


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        p.get("text", "") for p in content or () if isinstance(p, dict) and p.get("type") == "text"
    )


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> SseReply:
    raw = json.dumps(arguments)
    return chat_completions_sse(
        text=["Running it.\n"], tool_calls=[(call_id, name, [raw[:4], raw[4:]])], finish_reason="tool_calls",
        usage=USAGE,
    )  # fmt: skip


def text_reply(text: str) -> SseReply:
    half = len(text) // 2
    return chat_completions_sse(text=[text[:half], text[half:]], usage=USAGE)


def standard_rules(request: Recorded) -> Reply:
    """tool → a bash call; slow / long → bash sleeping 2 s / 30 s; flaky → an overloaded error; a tool result
    → "Tool said: …"; a summary request → a summary; anything else → "Echo: <text>"."""
    message = last_message(request)
    text = text_of(message)
    if message.get("role") == "tool":
        return text_reply(f"Tool said: {text.strip()}")
    if text.startswith("<conversation>"):
        return text_reply("## Goal\nTest the headless modes.\n## Progress\nDone.")
    first = text.strip().split("\n")[-1]
    if first == "tool":
        return tool_call("call_1", "bash", {"command": "echo from-tool"})
    if first == "slow":
        return tool_call("call_slow", "bash", {"command": "sleep 2; echo slept"})
    if first == "long":
        return tool_call("call_long", "bash", {"command": "sleep 30"})
    if first == "flaky":
        return JsonReply(
            400, {"error": {"message": "The server is overloaded, try later", "type": "overloaded"}}
        )
    if first == "broken":
        return JsonReply(401, {"error": {"message": "Invalid API key given", "type": "auth"}})
    return text_reply(f"Echo: {text}")


class RuleReplies:
    """Stands in for ``FakeServer.replies``: ``pop`` answers the request just recorded."""

    def __init__(self, server: FakeServer, rules: Callable[[Recorded], Reply]) -> None:
        self.server = server
        self.rules = rules

    def __bool__(self) -> bool:
        return True

    def pop(self, _index: int = 0) -> Reply:
        return self.rules(self.server.requests[-1])


def answer_by_rules(server: FakeServer, rules: Callable[[Recorded], Reply] = standard_rules) -> FakeServer:
    server.replies = RuleReplies(server, rules)  # type: ignore[assignment]
    return server
