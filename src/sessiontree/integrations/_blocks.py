"""Reading a stored message's blocks back in order, for the residuals that own them (both mappings).

Pure; a residual that does not fit its blocks raises ``Mismatch`` (the caller reads the message the plain
way and says so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Blocks", "Mismatch", "data_url", "plain_parts"]


class Mismatch(ValueError):
    """A stored message whose residual does not fit its blocks (edited by hand, or by another program)."""


class Blocks:
    """The blocks of one stored message, handed out in order."""

    __slots__ = ("_content", "_next")

    def __init__(self, content: Any) -> None:
        if not isinstance(content, list):
            raise Mismatch("content is not a list of blocks")
        self._content = content
        self._next = 0

    def take(self, kind: str) -> dict[str, Any]:
        """The next block, which must be of type ``kind``."""
        if self._next >= len(self._content):
            raise Mismatch("fewer blocks than the residuals need")
        block = self._content[self._next]
        if not isinstance(block, dict) or block.get("type") != kind:
            raise Mismatch(f"expected a {kind} block at {self._next}")
        self._next += 1
        return block

    def text(self, kind: str = "text", key: str = "text") -> str:
        """The string ``key`` of the next block (of type ``kind``)."""
        value = self.take(kind).get(key)
        if not isinstance(value, str):
            raise Mismatch(f"a {kind} block without {key}")
        return value

    def rest(self) -> list[Any]:
        """Every block not handed out yet."""
        out = self._content[self._next :]
        self._next = len(self._content)
        return out

    def done(self) -> None:
        """Raise unless every block was handed out."""
        if self._next != len(self._content):
            raise Mismatch("more blocks than the residuals own")


def data_url(block: dict[str, Any]) -> str:
    """An image block as a ``data:`` URL."""
    return f"data:{block.get('mimeType')};base64,{block.get('data')}"


def plain_parts(
    content: Any, text: Callable[[str], dict[str, Any]], image: Callable[[str], dict[str, Any]]
) -> str | list[dict[str, Any]]:
    """pi content in a framework's part shape: a string stays a string, text and image blocks become
    ``text(the text)`` and ``image(a data: URL)``, other blocks are left out."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(text(str(block.get("text", ""))))
        elif isinstance(block, dict) and block.get("type") == "image":
            parts.append(image(data_url(block)))
    return parts
