"""How harness events look in the chat: replies rendered as markdown as their blocks complete (the block
being streamed shown live above the input, wrapped, flowing into the scrollback), thinking dimmed, each
tool call and its result on one line (Ctrl+O prints a collapsed result in full), queued messages, a spinner
with the elapsed time while a run works, compaction and errors.

Keeps only display state and prints through a rich ``Console``; it never reads or writes the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from sessiontree.format.safe_text import one_line, safe_text

from ..tui.entry_text import text_of, tool_call_summary
from .markdown_view import fragments
from .stream_view import StreamView

__all__ = ["SPINNER", "Transcript", "elapsed"]

_WIDTH = 160
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_EXPANDED_LINES = 200  # lines of a tool result Ctrl+O prints (the session keeps all of it)
_KEPT_OUTPUTS = 50  # collapsed tool outputs kept for Ctrl+O, newest
_ABORTS = "(ctrl+c aborts)"

Fragments = list[tuple[str, str]]


def _result_text(result: Any) -> str:
    content = result.get("content") if isinstance(result, dict) else None
    return text_of(content) if isinstance(content, list) else ""


def elapsed(seconds: float) -> str:
    """``7s``, ``2m 05s``, ``1h 02m``."""
    whole = int(max(0.0, seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def _is_empty_reply(message: dict[str, Any]) -> bool:
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "toolCall" or (kind == "text" and str(block.get("text") or "").strip()):
            return False
        if kind == "thinking" and str(block.get("thinking") or "").strip():
            return False
    return True


class Transcript:
    """The chat's scrollback: ``handle(event)`` for every harness event; ``live_lines()`` is what the input
    area shows above the prompt (the block being streamed, the current activity, the queued messages)."""

    def __init__(
        self,
        console: Console,
        redraw: Callable[[], None] = lambda: None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.redraw = redraw
        self.clock = clock
        self._view: StreamView | None = None
        self.activity = ""
        self._since: float | None = None  # when the run being shown started
        self.queued: list[tuple[str, str]] = []
        self._collapsed: list[tuple[str, str]] = []  # (tool call summary, full output), newest last
        self._running: dict[str, str] = {}  # tool call id -> its summary, while it runs

    # -- printing ------------------------------------------------------------------------------------------
    def line(self, text: str, style: str = "") -> None:
        """Print one line of display text (already safe) in ``style``."""
        self.console.print(Text(text, style=style), soft_wrap=True, highlight=False, markup=False)

    def rows(self, rows: list[Text]) -> None:
        """Print rendered rows as they are (a code line longer than the terminal wraps there, unbroken)."""
        for row in rows:
            self.console.print(row, soft_wrap=True, highlight=False, markup=False)

    def notice(self, text: str) -> None:
        self.line(text, "grey62")

    def error(self, text: str) -> None:
        for part in safe_text(text, keep_newlines=True).split("\n"):
            self.line(part, "red")

    def user(self, text: str) -> None:
        lines = safe_text(text, keep_newlines=True).split("\n")
        for i, part in enumerate(lines):
            self.line(("› " if i == 0 else "  ") + part, "bold cyan")

    def _width(self) -> int:
        return max(10, self.console.width)

    def _live_height(self) -> int:
        return max(3, self.console.height - 8)

    def _open(self, kind: str) -> None:
        self._flush()
        self._view = StreamView(
            self.console,
            "thinking" if kind == "thinking" else "text",
            self._width,
            self._live_height,
            clock=self.clock,
        )

    def _flush(self) -> None:
        if self._view is not None:
            view, self._view = self._view, None
            self.rows(view.finish())

    # -- events --------------------------------------------------------------------------------------------
    def handle(self, event: dict[str, Any]) -> None:
        """Draw one harness event."""
        kind = event.get("type")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(event)
            self.redraw()

    def _working(self, label: str = "working…") -> None:
        self.activity = label
        if self._since is None:
            self._since = self.clock()

    def _idle(self) -> None:
        self.activity = ""
        self._since = None

    def _on_agent_start(self, _event: dict[str, Any]) -> None:
        self._working()

    def _on_agent_end(self, _event: dict[str, Any]) -> None:
        self._flush()
        self._idle()

    def _on_settled(self, _event: dict[str, Any]) -> None:
        self._flush()
        self._idle()

    def _on_message_update(self, event: dict[str, Any]) -> None:
        update = event.get("assistantMessageEvent") or {}
        kind = update.get("type")
        if kind in ("text_start", "thinking_start"):
            self._open("thinking" if kind == "thinking_start" else "text")
        elif kind == "toolcall_start":
            self._flush()
        elif kind in ("text_delta", "thinking_delta"):
            if self._view is None or self._view.kind != ("thinking" if kind == "thinking_delta" else "text"):
                self._open("thinking" if kind == "thinking_delta" else "text")
            assert self._view is not None
            self.rows(self._view.feed(str(update.get("delta") or "")))
        elif kind in ("text_end", "thinking_end"):
            self._flush()

    def _on_message_end(self, event: dict[str, Any]) -> None:
        message = event.get("message") or {}
        role = message.get("role")
        if role == "user":
            self.user(text_of(message.get("content")))
        elif role == "assistant":
            self._flush()
            stop = message.get("stopReason")
            if stop == "aborted":
                self.line("(aborted)", "yellow")
            elif stop == "error":
                self.error(f"error: {message.get('errorMessage') or 'the request failed'}")
            elif _is_empty_reply(message):
                self.line("(empty reply: the model sent no text and no tool call)", "yellow")
        elif role == "custom" and message.get("display"):
            self.notice(one_line(f"[{message.get('customType')}] {text_of(message.get('content'))}", _WIDTH))

    def _on_tool_execution_start(self, event: dict[str, Any]) -> None:
        self._flush()
        summary = tool_call_summary(str(event.get("toolName")), event.get("args"))
        self._running[str(event.get("toolCallId"))] = summary
        self.line(f"⚙ {summary}", "yellow")
        self._working(f"running {summary}")

    def _on_tool_execution_end(self, event: dict[str, Any]) -> None:
        text = _result_text(event.get("result"))
        lines = text.rstrip("\n").split("\n") if text.strip() else []
        first = one_line(lines[0], _WIDTH) if lines else "(no output)"
        hidden = len(lines) - 1
        more = f" (+{hidden} line{'s' if hidden > 1 else ''}, ctrl+o shows them)" if hidden else ""
        summary = self._running.pop(str(event.get("toolCallId")), None) or f"[{event.get('toolName')}]"
        if hidden:
            self._collapsed.append((summary, text.rstrip("\n")))
            del self._collapsed[:-_KEPT_OUTPUTS]
        if event.get("isError"):
            self.line(f"  ✗ {first}{more}", "red")
        else:
            self.line(f"  ↳ {first}{more}", "grey62")
        self._working()

    def expand_last(self) -> bool:
        """Print the newest collapsed tool result in full (then the one before it, on the next call)."""
        if not self._collapsed:
            self.notice("No collapsed tool output to show")
            return False
        summary, text = self._collapsed.pop()
        lines = text.split("\n")
        self.line(f"── {summary}: {len(lines)} lines ──", "yellow")
        for part in lines[:_EXPANDED_LINES]:
            self.line("  " + safe_text(part), "grey70")
        if len(lines) > _EXPANDED_LINES:
            self.notice(f"  … {len(lines) - _EXPANDED_LINES} more lines (all of it is in the session)")
        return True

    def _on_queue_update(self, event: dict[str, Any]) -> None:
        self.queued = [
            (label, one_line(text_of(m.get("content")), _WIDTH))
            for label, key in (("steer", "steer"), ("follow-up", "followUp"))
            for m in event.get(key) or []
            if isinstance(m, dict)
        ]

    def _on_compaction_start(self, event: dict[str, Any]) -> None:
        self._flush()
        self._working(f"compacting ({event.get('reason')})…")

    def _on_compaction_end(self, event: dict[str, Any]) -> None:
        if event.get("reason") != "manual":
            self._working()
        else:
            self._idle()
        entry = event.get("result")
        if isinstance(entry, dict):
            tokens = entry.get("tokensBefore")
            self.notice(f"Compacted the context ({tokens} tokens before); summary entry {entry.get('id')}")
        elif event.get("errorMessage") and not event.get("aborted") and event.get("reason") != "manual":
            self.error(str(event.get("errorMessage")))  # a manual /compact reports its own failure

    def _on_auto_retry_start(self, event: dict[str, Any]) -> None:
        seconds = (event.get("delayMs") or 0) / 1000
        self.notice(
            f"Retrying in {seconds:g} s (attempt {event.get('attempt')} of {event.get('maxAttempts')}): "
            + one_line(str(event.get("errorMessage") or ""), _WIDTH)
        )
        self._working("waiting to retry…")

    def _on_auto_retry_end(self, event: dict[str, Any]) -> None:
        if event.get("success"):
            self._working()
        else:
            self._idle()  # the run is over: nothing works any more
            self.error(f"Gave up after {event.get('attempt')} retries: {event.get('finalError')}")

    def _on_resume(self, event: dict[str, Any]) -> None:
        self.notice(f"Resuming an interrupted run ({event.get('kind')})")

    def recap(self, messages: list[dict[str, Any]]) -> None:
        """One line per message of a branch (what the chat showed when it was made)."""
        for message in messages:
            role = message.get("role")
            if role == "user":
                self.line("› " + one_line(text_of(message.get("content")), _WIDTH), "cyan")
            elif role == "assistant":
                body = one_line(text_of(message.get("content")), _WIDTH)
                if body:
                    self.line("  " + body)
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "toolCall":
                        self.line(
                            "⚙ " + tool_call_summary(str(block.get("name")), block.get("arguments")), "yellow"
                        )
                if message.get("stopReason") == "aborted":
                    self.line("  (aborted)", "yellow")
            elif role == "bashExecution":
                self.line("! " + one_line(str(message.get("command") or ""), _WIDTH), "bold")
            elif role == "branchSummary":
                self.line("[branch summary] " + one_line(str(message.get("summary") or ""), _WIDTH), "yellow")
            elif role == "compactionSummary":
                self.line("[compaction] " + one_line(str(message.get("summary") or ""), _WIDTH), "magenta")

    # -- the live area --------------------------------------------------------------------------------------
    def status(self) -> str:
        """The activity line: a spinner, what runs, for how long (empty when nothing runs)."""
        if not self.activity:
            return ""
        now = self.clock()
        since = self._since if self._since is not None else now
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        return f"{frame} {self.activity} {elapsed(now - since)} {_ABORTS}"

    def live_lines(self) -> list[Fragments]:
        """The rows above the prompt, each as prompt_toolkit fragments."""
        width = self._width()
        out: list[Fragments] = []
        if self._view is not None:
            out += [fragments(self.console, row, width) for row in self._view.live()]
        status = self.status()
        if status:
            out.append([("ansibrightblack", one_line(status, width))])
        out += [[("ansiyellow", one_line(f"queued {label}: {text}", width))] for label, text in self.queued]
        return out
