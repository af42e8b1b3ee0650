"""A loopback HTTP server that speaks the three wire formats (JSON and SSE) for the official SDKs to call.

Runs a stdlib ThreadingHTTPServer on 127.0.0.1, port 0; records every request and plays scripted replies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class JsonReply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RawReply:
    status: int
    text: str
    content_type: str = "text/plain"


@dataclass
class SseReply:
    """Server-sent events; with ``hold_after`` set, the server stops after that many events and waits for
    ``release`` (then ends the stream, or with ``resume`` sends the rest); ``pace`` seconds between events."""

    events: list[tuple[str | None, Any]]
    hold_after: int | None = None
    resume: bool = False
    pace: float = 0.0


class FakeServer:
    """``keep_alive``: HTTP/1.1 with persistent connections for JSON replies, as real API servers keep them
    (clients then pool connections between requests); server-sent events still end their connection."""

    def __init__(self, keep_alive: bool = False) -> None:
        self.requests: list[Recorded] = []
        self.replies: list[JsonReply | RawReply | SseReply] = []
        self.release = threading.Event()
        self.held = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                server.requests.append(
                    Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                reply = (
                    server.replies.pop(0)
                    if server.replies
                    else JsonReply(500, {"error": {"message": "no reply"}})
                )
                if isinstance(reply, JsonReply):
                    data = json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                elif isinstance(reply, RawReply):
                    data = reply.text.encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    if keep_alive:
                        self.send_header("connection", "close")
                        self.close_connection = True
                    self.end_headers()
                    for index, (name, data) in enumerate(reply.events):
                        if reply.hold_after is not None and index == reply.hold_after:
                            self.wfile.flush()
                            server.held.set()
                            server.release.wait(30)
                            if not reply.resume:
                                return
                        if reply.pace and index:
                            time.sleep(reply.pace)
                        chunk = "" if name is None else f"event: {name}\n"
                        payload = data if isinstance(data, str) else json.dumps(data)
                        chunk += f"data: {payload}\n\n"
                        try:
                            self.wfile.write(chunk.encode())
                            self.wfile.flush()
                        except (BrokenPipeError, ConnectionResetError):
                            return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def fake_server(keep_alive: bool = False) -> Iterator[FakeServer]:
    server = FakeServer(keep_alive)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# -- scripted replies in each API's streaming dialect ---------------------------------------------------------


def pieces(text: str, size: int = 12) -> list[str]:
    """``text`` as the deltas a model streams: ``size`` characters each."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def long_paragraph(words: int, stem: str = "word") -> str:
    """One paragraph with no newline: ``word0 word1 … word{n-1}`` (each word distinct, so a row that breaks
    a word shows)."""
    return " ".join(f"{stem}{i}" for i in range(words))


MARKDOWN_REPLY = (
    "# Release plan\n\n"
    "Ship the **parser** first, then *the renderer*, and keep `main` green; this sentence runs long enough "
    "to need wrapping at a word boundary somewhere near the edge of the terminal.\n\n"
    "```python\n"
    "def greet(name):\n"
    "    return f'hello {name}'  # kept verbatim\n"
    "```\n\n"
    "| step | owner |\n"
    "|------|-------|\n"
    "| parse | ada |\n"
    "| render | bob |\n\n"
    "- first item\n"
    "- second item\n"
)
"""A reply with a heading, emphasis, inline code, a fenced code block, a table and a list."""


def error_500(message: str = "upstream exploded") -> JsonReply:
    """An HTTP 500 with an OpenAI-style error body."""
    return JsonReply(500, {"error": {"message": message, "type": "server_error"}})


def empty_stream() -> SseReply:
    """A 200 event stream that closes without a single event (a server speaking another API looks so)."""
    return SseReply([])


def chat_completions_sse(
    *,
    text: list[str] = (),  # type: ignore[assignment]
    reasoning: list[str] = (),  # type: ignore[assignment]
    tool_calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "gpt-test",
    hold_after: int | None = None,
    resume: bool = False,
    pace: float = 0.0,
) -> SseReply:
    """Chat Completions chunks: reasoning deltas (``reasoning_content``), text deltas, tool-call deltas."""
    base = {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"reasoning_content": part})) for part in reasoning]
    events += [(None, chunk({"content": part})) for part in text]
    for index, (call_id, name, parts) in enumerate(tool_calls):
        events.append(
            (
                None,
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                ),
            )
        )
        events += [
            (None, chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
            for part in parts
        ]
    events.append((None, chunk({}, finish_reason)))
    if usage is not None:
        events.append((None, {**base, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return SseReply(events, hold_after, resume, pace)


def responses_sse(
    *,
    text: list[str] = (),  # type: ignore[assignment]
    reasoning: list[str] = (),  # type: ignore[assignment]
    tool_calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
    status: str = "completed",
    usage: dict[str, Any] | None = None,
    model: str = "gpt-test",
    hold_after: int | None = None,
) -> SseReply:
    """OpenAI Responses events: reasoning summary, output text and function-call argument deltas."""
    seq = iter(range(1, 10_000))
    response = {
        "id": "resp_123",
        "object": "response",
        "created_at": 1,
        "model": model,
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    events: list[tuple[str | None, Any]] = []

    def add(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(seq), **data}))

    add("response.created", response=response)
    output: list[dict[str, Any]] = []
    index = 0
    if reasoning:
        item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"}
        add("response.output_item.added", output_index=index, item=item)
        add(
            "response.reasoning_summary_part.added",
            item_id="rs_1",
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        )
        for part in reasoning:
            add(
                "response.reasoning_summary_text.delta",
                item_id="rs_1",
                output_index=index,
                summary_index=0,
                delta=part,
            )
        full = "".join(reasoning)
        add(
            "response.reasoning_summary_text.done",
            item_id="rs_1",
            output_index=index,
            summary_index=0,
            text=full,
        )
        add(
            "response.reasoning_summary_part.done",
            item_id="rs_1",
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": full},
        )
        done = {**item, "summary": [{"type": "summary_text", "text": full}]}
        add("response.output_item.done", output_index=index, item=done)
        output.append(done)
        index += 1
    if text:
        item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        add("response.output_item.added", output_index=index, item=item)
        add(
            "response.content_part.added",
            item_id="msg_1",
            output_index=index,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for part in text:
            add(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=index,
                content_index=0,
                delta=part,
                logprobs=[],
            )
        full = "".join(text)
        add(
            "response.output_text.done",
            item_id="msg_1",
            output_index=index,
            content_index=0,
            text=full,
            logprobs=[],
        )
        content = {"type": "output_text", "text": full, "annotations": []}
        add("response.content_part.done", item_id="msg_1", output_index=index, content_index=0, part=content)
        done = {**item, "status": "completed", "content": [content]}
        add("response.output_item.done", output_index=index, item=done)
        output.append(done)
        index += 1
    for call_id, name, parts in tool_calls:
        item_id = f"fc_{call_id}"
        item = {
            "id": item_id,
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        add("response.output_item.added", output_index=index, item=item)
        for part in parts:
            add("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=part)
        full = "".join(parts)
        add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=full,
            name=name,
        )
        done = {**item, "arguments": full, "status": "completed"}
        add("response.output_item.done", output_index=index, item=done)
        output.append(done)
        index += 1
    final = {**response, "status": status, "output": output, "usage": usage}
    if status == "incomplete":
        final["incomplete_details"] = {"reason": "max_output_tokens"}
        add("response.incomplete", response=final)
    else:
        add("response.completed", response=final)
    return SseReply(events, hold_after)


def anthropic_sse(
    *,
    text: list[str] = (),  # type: ignore[assignment]
    thinking: list[str] = (),  # type: ignore[assignment]
    signature: str = "SIG",
    tool_calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    model: str = "claude-test",
    hold_after: int | None = None,
) -> SseReply:
    """Anthropic Messages events: thinking (with signature), text and tool_use input_json deltas."""
    start_usage = dict(usage or {"input_tokens": 0, "output_tokens": 0})
    out_tokens = start_usage.get("output_tokens", 0)
    start_usage["output_tokens"] = 1
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_123",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        for delta in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if thinking:
        block(
            {"type": "thinking", "thinking": "", "signature": ""},
            [{"type": "thinking_delta", "thinking": t} for t in thinking]
            + [{"type": "signature_delta", "signature": signature}],
        )
    if text:
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in text])
    for call_id, name, parts in tool_calls:
        block(
            {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": p} for p in parts],
        )
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": out_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return SseReply(events, hold_after)


def reply_for(
    api: str,
    *,
    text: list[str] = (),  # type: ignore[assignment]
    thinking: list[str] = (),  # type: ignore[assignment]
    tool_calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
    stop: str = "stop",
    usage: tuple[int, int, int, int] = (1000, 300, 200, 50),
) -> SseReply:
    """The same reply in each API's dialect; ``usage`` = (uncached input, output, cache read, cache write)."""
    fresh, output, cache_read, cache_write = usage
    if api == "openai-completions":
        finish = {"stop": "stop", "toolUse": "tool_calls", "length": "length"}[stop]
        return chat_completions_sse(
            text=text, reasoning=thinking, tool_calls=tool_calls, finish_reason=finish,
            usage={"prompt_tokens": fresh + cache_read, "completion_tokens": output,
                   "total_tokens": fresh + cache_read + output,
                   "prompt_tokens_details": {"cached_tokens": cache_read}},
        )  # fmt: skip
    if api == "openai-responses":
        return responses_sse(
            text=text, reasoning=thinking, tool_calls=tool_calls,
            status="incomplete" if stop == "length" else "completed",
            usage={"input_tokens": fresh + cache_read, "output_tokens": output,
                   "total_tokens": fresh + cache_read + output,
                   "input_tokens_details": {"cached_tokens": cache_read},
                   "output_tokens_details": {"reasoning_tokens": 0}},
        )  # fmt: skip
    return anthropic_sse(
        text=text, thinking=thinking, tool_calls=tool_calls,
        stop_reason={"stop": "end_turn", "toolUse": "tool_use", "length": "max_tokens"}[stop],
        usage={"input_tokens": fresh, "output_tokens": output, "cache_read_input_tokens": cache_read,
               "cache_creation_input_tokens": cache_write},
    )  # fmt: skip
