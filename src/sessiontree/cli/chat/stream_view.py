"""A streamed reply as it arrives: finished markdown blocks go to the scrollback rendered, the unfinished
block is shown live (wrapped, its newest rows) and flows into the scrollback as it outgrows the live area.

``BlockSplitter`` cuts the text at block boundaries (a blank line before unindented text, a heading, a code
fence); a code block goes out line by line, verbatim. ``StreamView`` turns the pieces into rows; it prints
nothing itself: ``feed`` and ``finish`` return the rows for the scrollback, ``live`` the rows to show live.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rich.console import Console
from rich.text import Text

from .markdown_view import THINKING_STYLE, code_row, markdown_rows, plain_rows

__all__ = ["Block", "BlockSplitter", "StreamView"]

_FENCE = re.compile(r"^( *)(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])(\s|$)")
_RENDER_EVERY = 0.1  # seconds between re-renders of a growing block (each is a markdown parse of it)
_RENDER_SHARE = 4  # a block that takes t seconds to render is rendered again after 4 t at the soonest


@dataclass(frozen=True, slots=True)
class Block:
    """A finished piece: a markdown block, the start of a code block (its language), or one code line."""

    kind: Literal["markdown", "code_start", "code_line", "code_end"]
    text: str = ""
    language: str = ""


class BlockSplitter:
    """Markdown text fed in pieces, given back as finished ``Block``s; ``pending()`` is the unfinished rest."""

    def __init__(self) -> None:
        self._partial = ""  # the line being received
        self._lines: list[str] = []  # the markdown block being received (complete lines)
        self._blank = False  # a blank line ended ``_lines``: the block may be over
        self._fence: tuple[str, int, str] | None = None  # a top-level code block: (char, length, indent)
        self._inner: tuple[str, int] | None = None  # a fence inside the markdown block (a list's)
        self._language = ""

    @property
    def in_code(self) -> bool:
        return self._fence is not None

    @property
    def language(self) -> str:
        return self._language

    def feed(self, delta: str) -> list[Block]:
        out: list[Block] = []
        text = (self._partial + delta).replace("\r\n", "\n")  # a trailing \r waits for its \n
        *complete, self._partial = text.split("\n")
        for line in complete:
            self._line(line, out)
        return out

    def finish(self) -> list[Block]:
        out: list[Block] = []
        if self._partial:
            self._line(self._partial, out)
            self._partial = ""
        self._end_markdown(out)
        if self._fence is not None:
            out.append(Block("code_end"))
            self._fence = None
        return out

    def pending(self) -> str:
        """The unfinished markdown (or, in a code block, the code line being received)."""
        if self._fence is not None:
            return self._partial
        if not self._partial:
            return "\n".join(self._lines)
        return "\n".join([*self._lines, *([""] if self._blank else []), self._partial])

    def _end_markdown(self, out: list[Block]) -> None:
        if self._lines:
            out.append(Block("markdown", "\n".join(self._lines)))
        self._lines, self._blank, self._inner = [], False, None

    def _line(self, line: str, out: list[Block]) -> None:
        if self._fence is not None:
            char, length, indent = self._fence
            stripped = line.strip()
            if stripped.startswith(char * length) and not stripped.strip(char):
                out.append(Block("code_end"))
                self._fence = None
            else:
                body = line[len(indent) :] if line.startswith(indent) else line.lstrip(" ")
                out.append(Block("code_line", body, self._language))
            return
        if self._inner is not None:  # inside a list's fence: no block ends here
            self._lines.append(line)
            stripped = line.strip()
            if stripped.startswith(self._inner[0] * self._inner[1]) and not stripped.strip(self._inner[0]):
                self._inner = None
            return
        if not line.strip():
            if self._lines:
                self._blank = True
            return
        fence = _FENCE.match(line)
        in_list = bool(self._lines) and _LIST_ITEM.match(self._lines[0]) is not None
        if fence is not None and (len(fence.group(1)) <= 3 and not (in_list and fence.group(1))):
            self._end_markdown(out)
            marks = fence.group(2)
            self._fence = (marks[0], len(marks), fence.group(1))
            self._language = fence.group(3)
            out.append(Block("code_start", language=self._language))
            return
        if self._blank:
            continues = line[:1] in (" ", "\t") or (in_list and _LIST_ITEM.match(line) is not None)
            if continues:
                self._lines.append("")
            else:
                self._end_markdown(out)
            self._blank = False
        if _HEADING.match(line) and not (self._lines and line[:1] == " "):
            self._end_markdown(out)
            out.append(Block("markdown", line))
            return
        if fence is not None:
            marks = fence.group(2)
            self._inner = (marks[0], len(marks))
        self._lines.append(line)


class StreamView:
    """One streamed content block (a reply's text, or its thinking) as rows: see the module docstring.

    ``width`` and ``live_height`` are asked each time (the terminal can be resized while a reply streams).
    """

    def __init__(
        self,
        console: Console,
        kind: Literal["text", "thinking"],
        width: Callable[[], int],
        live_height: Callable[[], int],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.kind = kind
        self._width = width
        self._live_height = live_height
        self._clock = clock
        self._splitter = BlockSplitter()
        self._partial = ""  # thinking: the line being received
        self._gap = False  # the next block starts after a blank row
        self._committed = 0  # rows of the pending block already in the scrollback
        self._cache: tuple[str, int, list[Text]] | None = None
        self._cached_at = float("-inf")
        self._cost = 0.0  # seconds the last render of the pending block took
        self._rendered_at = float("-inf")

    # -- rendering -----------------------------------------------------------------------------------------
    def _render(self, block: Block, width: int) -> list[Text]:
        if block.kind == "markdown":
            return [*([Text("")] if self._gap else []), *markdown_rows(self.console, block.text, width)]
        if block.kind == "code_start":
            head = [Text(block.language, style="dim")] if block.language else []
            return [*([Text("")] if self._gap else []), *head]
        if block.kind == "code_line":
            return [code_row(block.text, block.language)]
        return []

    def _pending_rows(self, width: int) -> list[Text]:
        if self.kind == "thinking":
            text = self._partial
            key = text
        else:
            text = self._splitter.pending()
            key = ("c" if self._splitter.in_code else "g" if self._gap else "m") + text
        if self._cache is not None and self._cache[1] == width:
            if self._cache[0] == key:
                return self._cache[2]
            # A long block costs a markdown parse per render: between renders the rows shown lag by up to
            # a few render times, so a fast stream spends most of its time arriving, not being drawn. Its
            # rows but the last are final either way (the text only grows at its end).
            if self._clock() - self._cached_at < _RENDER_SHARE * self._cost:
                return self._cache[2]
        began = time.perf_counter()
        if not text:
            rows: list[Text] = []
        elif self.kind == "thinking":
            rows = plain_rows(self.console, text, width, THINKING_STYLE)
        elif self._splitter.in_code:
            rows = [code_row(text, self._splitter.language)]
        else:
            rows = self._render(Block("markdown", text), width)
        self._cost = time.perf_counter() - began
        self._cache, self._cached_at = (key, width, rows), self._clock()
        return rows

    def _emit(self, blocks: list[Block], width: int) -> list[Text]:
        # Rows already committed were the pending render's first rows; that render laid out the blocks
        # finished now and what follows them just as they are laid out one by one, so the count carries on.
        out: list[Text] = []
        skip = self._committed
        for block in blocks:
            rows = self._render(block, width)
            out += rows[skip:]
            skip = max(0, skip - len(rows))
            if block.kind in ("markdown", "code_end"):
                self._gap = True
            elif block.kind == "code_start":
                self._gap = False
        self._committed = skip
        return out

    # -- the stream ----------------------------------------------------------------------------------------
    def feed(self, delta: str) -> list[Text]:
        """Take ``delta``; the rows that are final now (for the scrollback)."""
        width = self._width()
        if self.kind == "thinking":
            text = (self._partial + delta).replace("\r\n", "\n")
            *lines, self._partial = text.split("\n")
            out: list[Text] = []
            for line in lines:
                out += plain_rows(self.console, line, width, THINKING_STYLE)[self._committed :]
                self._committed = 0
        else:
            out = self._emit(self._splitter.feed(delta), width)
        now = self._clock()
        if now - self._rendered_at >= _RENDER_EVERY:
            self._rendered_at = now
            out += self._overflow(width)
        return out

    def _overflow(self, width: int) -> list[Text]:
        """Rows of the pending block that no longer fit the live area: final, to the scrollback."""
        rows = self._pending_rows(width)
        keep = max(1, self._live_height())
        if len(rows) - self._committed <= keep:
            return []
        upto = len(rows) - keep
        out = rows[self._committed : upto]
        self._committed = upto
        return out

    def finish(self) -> list[Text]:
        """The stream ended: the rest of its rows."""
        width = self._width()
        self._cache = None
        if self.kind == "thinking":
            out = plain_rows(self.console, self._partial, width)[self._committed :] if self._partial else []
            self._partial, self._committed = "", 0
            return out
        return self._emit(self._splitter.finish(), width)

    def live(self) -> list[Text]:
        """The unfinished block's rows not yet in the scrollback (the newest that fit the live area)."""
        rows = self._pending_rows(self._width())[self._committed :]
        keep = max(1, self._live_height())
        return rows[-keep:]
