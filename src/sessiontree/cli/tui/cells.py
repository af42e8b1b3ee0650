"""Padding and cutting display text by terminal cells (a CJK character or an emoji takes two), for every
row the chat and its pickers lay out by hand. ``len()`` counts characters and puts wide rows out of line.
"""

from __future__ import annotations

from sessiontree.format.safe_text import cell_width, cut_to_width

__all__ = ["fit_to_width", "pad_to_width"]


def pad_to_width(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` cells (unchanged when it is that wide already)."""
    return text + " " * max(0, width - cell_width(text))


def fit_to_width(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells (ending in ``…`` when cut), then padded to exactly ``width``."""
    return pad_to_width(cut_to_width(text, width), width)
