"""``one_line`` looks at a prefix of a long text only; it must give what the whole text would give."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.format.safe_text import cell_width, cut_to_width, one_line, safe_text

# Characters that exercise every branch: spaces and newlines (collapsed), controls and escapes (made
# visible), wide CJK and emoji (two cells), combining marks (none), a lone surrogate, plain letters.
_CHARS = st.sampled_from(list("ab  \n\t\x1b\x07é→漢字😀\u0301\u200b\ud800\u202exyz"))
_TEXTS = st.lists(_CHARS, max_size=400).map("".join)


def _whole_text_reference(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return cut_to_width(safe_text(" ".join(text.split())), width)


@settings(max_examples=600, deadline=None)
@given(_TEXTS, st.integers(min_value=0, max_value=120))
def test_one_line_equals_the_whole_text_collapsed_escaped_and_cut(text: str, width: int) -> None:
    got = one_line(text, width)
    assert got == _whole_text_reference(text, width)
    assert cell_width(got) <= max(width, 0)


def test_one_line_on_a_long_text_with_long_whitespace_runs_reads_further() -> None:
    text = "start" + " " * 5000 + "\n" * 3000 + "end of the line that is shown"
    assert one_line(text, 30) == "start end of the line that is…"
    assert one_line("漢字" * 1000, 7) == "漢字漢…"
    assert one_line("e\u0301" * 50, 10) == "e\u0301" * 9 + "…"


def _cut_reference(text: str, width: int) -> str:
    """Cut by adding characters one by one while the text and an ellipsis still fit."""
    if width <= 0:
        return ""
    if cell_width(text) <= width:
        return text
    out = ""
    for char in text:
        if cell_width(out + char) + 1 > width:
            break
        out += char
    return out + "…"


@settings(max_examples=600, deadline=None)
@given(_TEXTS, st.integers(min_value=0, max_value=120))
def test_cut_to_width_is_the_longest_prefix_that_fits_with_its_ellipsis(text: str, width: int) -> None:
    text = safe_text(text)
    assert cut_to_width(text, width) == _cut_reference(text, width)
