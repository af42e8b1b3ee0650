"""Text the chat lays out by hand is measured in terminal cells: a tool-call preview of a CJK command is cut
to the same width as an ASCII one, and padding counts a wide character twice."""

from __future__ import annotations

from sessiontree.cli.tui.cells import fit_to_width, pad_to_width
from sessiontree.cli.tui.entry_text import tool_call_summary
from sessiontree.format.safe_text import cell_width


def test_tool_call_previews_are_cut_by_cells() -> None:
    ascii_preview = tool_call_summary("bash", {"command": "x" * 80})
    wide_preview = tool_call_summary("bash", {"command": "日本語" * 30})
    assert cell_width(wide_preview) <= cell_width(ascii_preview) == len("[bash: ]") + 53
    other = tool_call_summary("translate", {"text": "🚀" * 40})
    assert cell_width(other) <= len("[translate: ]") + 43 and other.endswith("...]")


def test_padding_counts_wide_characters_twice() -> None:
    assert pad_to_width("日本", 6) == "日本  " and cell_width(pad_to_width("🚀a", 5)) == 5
    assert cell_width(fit_to_width("日本語のテキスト", 7)) == 7
