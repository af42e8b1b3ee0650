"""File operations seen in tool calls (read / write / edit) and the file lists appended to summaries.

Collects and formats paths only; it never touches the file system and never reads tool results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FileOperations",
    "compute_file_lists",
    "extract_file_ops_from_message",
    "format_file_operations",
    "js_sorted",
]


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def js_sorted(values: Iterable[str]) -> list[str]:
    """Sort strings as JavaScript's default ``Array.prototype.sort`` does (by UTF-16 code units)."""
    return sorted(values, key=_utf16_key)


@dataclass(slots=True)
class FileOperations:
    """Paths grouped by what the tool calls did with them (pi's ``FileOperations`` sets)."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def copy(self) -> FileOperations:
        return FileOperations(set(self.read), set(self.written), set(self.edited))

    def add_details(self, details: Any) -> None:
        """Seed from a previous summary's ``details``: ``readFiles`` -> read, ``modifiedFiles`` -> edited."""
        if not isinstance(details, Mapping):
            return
        read_files = details.get("readFiles")
        if isinstance(read_files, list):
            self.read.update(f for f in read_files if isinstance(f, str))
        modified = details.get("modifiedFiles")
        if isinstance(modified, list):
            self.edited.update(f for f in modified if isinstance(f, str))

    def to_dict(self) -> dict[str, list[str]]:
        """The sets as sorted lists (JavaScript order): ``{read, written, edited}``."""
        return {
            "read": js_sorted(self.read),
            "written": js_sorted(self.written),
            "edited": js_sorted(self.edited),
        }


_TOOL_TO_SET = {"read": "read", "write": "written", "edit": "edited"}


def extract_file_ops_from_message(message: Mapping[str, Any], file_ops: FileOperations) -> None:
    """Add the ``path`` argument of an assistant's ``read``/``write``/``edit`` tool calls to ``file_ops``."""
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping) or block.get("type") != "toolCall":
            continue
        arguments = block.get("arguments")
        if not isinstance(arguments, Mapping):
            continue
        path = arguments.get("path")
        if not isinstance(path, str) or not path:
            continue
        target = _TOOL_TO_SET.get(block.get("name"))  # type: ignore[arg-type]
        if target is not None:
            getattr(file_ops, target).add(path)


def compute_file_lists(file_ops: FileOperations) -> tuple[list[str], list[str]]:
    """``(readFiles, modifiedFiles)``: files only read, and files edited or written, both sorted as JS does."""
    modified = file_ops.edited | file_ops.written
    read_only = [f for f in file_ops.read if f not in modified]
    return js_sorted(read_only), js_sorted(modified)


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """The text appended to a summary: ``<read-files>`` / ``<modified-files>`` blocks, or ``""``."""
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)
