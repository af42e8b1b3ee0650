"""How harness events look in the chat: streamed text line by line (the unfinished line is shown live
above the input), thinking dimmed, each tool call and its result on one line, queued messages, compaction
and errors.

Keeps only display state and prints through a rich ``Console``; it never reads or writes the session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from sessiontree.format.safe_text import one_line, safe_text

from ..tui.entry_text import text_of, tool_call_summary

__all__ = ["Transcript"]

_WIDTH = 160


def _result_text(result: Any) -> str:
    content = result.get("content") if isinstance(result, dict) else None
    return text_of(content) if isinstance(content, list) else ""


class Transcript:
    """The chat's scrollback: ``handle(event)`` for every harness event; ``live_lines()`` is what the input
    area shows above the prompt (the unfinished line, the current activity, the queued messages)."""

    def __init__(self, console: Console, redraw: Callable[[], None] = lambda: None) -> None:
        self.console = console
        self.redraw = redraw
        self.partial = ""
        self._partial_style = ""
        self._block: str | None = None
        self.activity = ""
        self.queued: list[tuple[str, str]] = []

    # -- printing ------------------------------------------------------------------------------------------
    def line(self, text: str, style: str = "") -> None:
        """Print one line of display text (already safe) in ``style``."""
        self.console.print(Text(text, style=style), soft_wrap=True, highlight=False, markup=False)

    def notice(self, text: str) -> None:
        self.line(text, "grey62")

    def error(self, text: str) -> None:
        for part in safe_text(text, keep_newlines=True).split("\n"):
            self.line(part, "red")

    def user(self, text: str) -> None:
        lines = safe_text(text, keep_newlines=True).split("\n")
        for i, part in enumerate(lines):
            self.line(("› " if i == 0 else "  ") + part, "bold cyan")

    def _stream(self, delta: str, style: str) -> None:
        if style != self._partial_style and self.partial:
            self._flush()
        self._partial_style = style
        self.partial += delta
        while "\n" in self.partial:
            head, self.partial = self.partial.split("\n", 1)
            self.line(safe_text(head), style)
        self.redraw()

    def _flush(self) -> None:
        if self.partial:
            self.line(safe_text(self.partial), self._partial_style)
        self.partial = ""

    # -- events --------------------------------------------------------------------------------------------
    def handle(self, event: dict[str, Any]) -> None:
        """Draw one harness event."""
        kind = event.get("type")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(event)
            self.redraw()

    def _on_agent_start(self, _event: dict[str, Any]) -> None:
        self.activity = "working… (ctrl+c aborts)"

    def _on_agent_end(self, _event: dict[str, Any]) -> None:
        self._flush()
        self.activity = ""

    def _on_message_update(self, event: dict[str, Any]) -> None:
        update = event.get("assistantMessageEvent") or {}
        kind = update.get("type")
        if kind in ("text_start", "thinking_start", "toolcall_start"):
            if self._block is not None and self._block != kind:
                self._flush()
            self._block = kind
        if kind == "text_delta":
            self._stream(str(update.get("delta") or ""), "")
        elif kind == "thinking_delta":
            self._stream(str(update.get("delta") or ""), "dim italic")
        elif kind in ("text_end", "thinking_end"):
            self._flush()

    def _on_message_end(self, event: dict[str, Any]) -> None:
        message = event.get("message") or {}
        role = message.get("role")
        if role == "user":
            self.user(text_of(message.get("content")))
        elif role == "assistant":
            self._flush()
            self._block = None
            stop = message.get("stopReason")
            if stop == "aborted":
                self.line("(aborted)", "yellow")
            elif stop == "error":
                self.error(f"error: {message.get('errorMessage') or 'the request failed'}")
        elif role == "custom" and message.get("display"):
            self.notice(one_line(f"[{message.get('customType')}] {text_of(message.get('content'))}", _WIDTH))

    def _on_tool_execution_start(self, event: dict[str, Any]) -> None:
        self._flush()
        summary = tool_call_summary(str(event.get("toolName")), event.get("args"))
        self.line(f"⚙ {summary}", "yellow")
        self.activity = f"running {summary} (ctrl+c aborts)"

    def _on_tool_execution_end(self, event: dict[str, Any]) -> None:
        text = _result_text(event.get("result"))
        lines = text.rstrip("\n").split("\n") if text.strip() else []
        first = one_line(lines[0], _WIDTH) if lines else "(no output)"
        more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        if event.get("isError"):
            self.line(f"  ✗ {first}{more}", "red")
        else:
            self.line(f"  ↳ {first}{more}", "grey62")
        self.activity = "working… (ctrl+c aborts)"

    def _on_queue_update(self, event: dict[str, Any]) -> None:
        self.queued = [
            (label, one_line(text_of(m.get("content")), _WIDTH))
            for label, key in (("steer", "steer"), ("follow-up", "followUp"))
            for m in event.get(key) or []
            if isinstance(m, dict)
        ]

    def _on_compaction_start(self, event: dict[str, Any]) -> None:
        self._flush()
        self.activity = f"compacting ({event.get('reason')})…"

    def _on_compaction_end(self, event: dict[str, Any]) -> None:
        self.activity = "working… (ctrl+c aborts)" if event.get("reason") != "manual" else ""
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
        self.activity = "waiting to retry… (ctrl+c aborts)"

    def _on_auto_retry_end(self, event: dict[str, Any]) -> None:
        self.activity = "working… (ctrl+c aborts)"
        if not event.get("success"):
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
    def live_lines(self) -> list[tuple[str, str]]:
        """``(style, text)`` lines for above the prompt."""
        out: list[tuple[str, str]] = []
        if self.partial:
            out.append(("italic" if self._partial_style else "", safe_text(self.partial)))
        if self.activity:
            out.append(("ansibrightblack", self.activity))
        out += [("ansiyellow", f"queued {label}: {text}") for label, text in self.queued]
        return out
