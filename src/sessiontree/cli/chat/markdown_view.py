"""How a reply's finished pieces look: markdown rendered by rich (headings, emphasis, lists, tables) wrapped at
word boundaries to the terminal's width, code lines verbatim and syntax-highlighted, thinking dimmed.

Rows are rich ``Text`` lines, at most ``width`` cells wide except code lines, which are never cut or broken
(the terminal wraps them, so a copied line is the line). ``fragments`` turns a row into prompt_toolkit's
(style, text) pairs for the live area above the input. Pure rendering: nothing here prints.
"""

from __future__ import annotations

from typing import ClassVar

from rich.color import Color, ColorType
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Heading, Markdown, MarkdownElement
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text

from sessiontree.format.safe_text import safe_text

__all__ = ["THINKING_STYLE", "code_row", "fragments", "markdown_rows", "plain_rows"]

THINKING_STYLE = "dim italic"
_CODE_THEME = "ansi_dark"  # the terminal's own palette, readable on dark and light backgrounds alike


class _Heading(Heading):
    """Headings left-aligned and bold (rich centres a level-1 heading)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        text.stylize("bold")
        yield text


class _Code(CodeBlock):
    """An indented code block inside markdown: its lines as they are, highlighted, no padding or frame."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip("\n")
        for line in code.split("\n"):
            yield code_row(line, self.lexer_name)


class ChatMarkdown(Markdown):
    """rich's Markdown with the chat's headings and verbatim code blocks."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _Heading,
        "fence": _Code,
        "code_block": _Code,
    }


def _rows_of(console: Console, renderable: object, width: int) -> list[Text]:
    options = console.options.update(width=max(1, width), height=None)
    rows: list[Text] = []
    for line in console.render_lines(renderable, options, pad=False, new_lines=False):  # type: ignore[arg-type]
        row = Text()
        for segment in line:
            if not segment.control:
                row.append(segment.text, segment.style)
        row.rstrip()
        if row.plain or (rows and rows[-1].plain):  # one blank row between elements at most
            rows.append(row)
    while rows and not rows[-1].plain:
        rows.pop()
    while rows and not rows[0].plain:
        rows.pop(0)
    return rows


def markdown_rows(console: Console, text: str, width: int) -> list[Text]:
    """A complete markdown block as rows of at most ``width`` cells (code lines excepted)."""
    safe = safe_text(text, keep_newlines=True)
    return _rows_of(console, ChatMarkdown(safe, code_theme=_CODE_THEME, hyperlinks=False), width)


def plain_rows(console: Console, text: str, width: int, style: str = THINKING_STYLE) -> list[Text]:
    """Plain text (thinking) wrapped at word boundaries in ``style``; an empty line is one empty row."""
    if not text:
        return [Text("")]
    return _rows_of(console, Text(safe_text(text, keep_newlines=True), style=style), width) or [Text("")]


def code_row(line: str, language: str) -> Text:
    """One line of code, highlighted for ``language`` (plain for an unknown one), never wrapped."""
    safe = safe_text(line.rstrip("\r"), keep_newlines=True).expandtabs(4)
    try:
        syntax = Syntax("", language or "text", theme=_CODE_THEME, background_color="default")
        row = syntax.highlight(safe)
    except Exception:  # an unknown lexer name: the line unhighlighted
        row = Text(safe)
    row.rstrip()
    row.no_wrap = True
    return row


_ATTRIBUTES = ("bold", "dim", "italic", "underline", "reverse", "strike")
_ANSI_NAMES = (
    "ansiblack", "ansired", "ansigreen", "ansiyellow", "ansiblue", "ansimagenta", "ansicyan", "ansigray",
    "ansibrightblack", "ansibrightred", "ansibrightgreen", "ansibrightyellow", "ansibrightblue",
    "ansibrightmagenta", "ansibrightcyan", "ansiwhite",
)  # fmt: skip


def _pt_color(color: Color) -> str:
    if color.type == ColorType.STANDARD and color.number is not None:
        return _ANSI_NAMES[color.number]
    red, green, blue = color.get_truecolor()
    return f"#{red:02x}{green:02x}{blue:02x}"


def _pt_style(style: Style | None) -> str:
    """A rich style in prompt_toolkit's style language."""
    if style is None:
        return ""
    parts = [name for name in _ATTRIBUTES if getattr(style, name)]
    if style.color is not None and not style.color.is_default:
        parts.append(f"fg:{_pt_color(style.color)}")
    if style.bgcolor is not None and not style.bgcolor.is_default:
        parts.append(f"bg:{_pt_color(style.bgcolor)}")
    return " ".join(parts)


def fragments(console: Console, row: Text, width: int) -> list[tuple[str, str]]:
    """``row`` cut to ``width`` cells as prompt_toolkit fragments."""
    if row.cell_len > width:
        row = row.copy()
        row.truncate(max(1, width), overflow="ellipsis")
    return [(_pt_style(segment.style), segment.text) for segment in row.render(console) if segment.text]
