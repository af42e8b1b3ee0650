"""Exports of one branch of a session: a self-contained HTML page, Markdown for pasting, or a JSONL session
file of that branch alone.

Each format reads the session through the manager and returns bytes; nothing here writes files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from sessiontree.session.manager import SessionManager

__all__ = ["FORMATS", "ExportFormat", "export_jsonl", "export_session"]

ExportFormat = Literal["html", "md", "jsonl"]
FORMATS: tuple[ExportFormat, ...] = ("html", "md", "jsonl")


def export_jsonl(manager: SessionManager, leaf_id: str | None = None) -> bytes:
    """The branch as its own session file (new session id, ``parentSession`` = this file, lines verbatim,
    labels re-created), as pi's ``createBranchedSession`` would write it."""
    from sessiontree.format import pi_json as _json
    from sessiontree.storage.forking import branch_lines

    from ..errors import SessionError
    from ..storage._encode import encode_entry

    target = leaf_id if leaf_id is not None else manager.get_leaf_id()
    if target is None:
        raise SessionError("Nothing to export: the session has no entries", kind="invalid_argument")
    header, lines, _ = branch_lines(manager, target, session_id=None)
    parts = [_json.dumps_bytes(header)]
    parts.extend(line if isinstance(line, bytes) else encode_entry(line) for line in lines)
    return b"\n".join(parts) + b"\n"


def export_session(manager: SessionManager, fmt: ExportFormat, leaf_id: str | None = None) -> bytes:
    """The branch ending at ``leaf_id`` (default: the leaf) in ``fmt``, as UTF-8 bytes (made with the
    collector paused: the branch's entries and the page's parts are a heap its passes would walk again and
    again while it grows, a quarter of an HTML export of 82,000 entries)."""
    from sessiontree._bulk import bulk_allocation

    with bulk_allocation():
        return _export(manager, fmt, leaf_id)


def _export(manager: SessionManager, fmt: ExportFormat, leaf_id: str | None) -> bytes:
    if fmt == "html":
        from .html import export_html

        return export_html(manager, leaf_id).encode("utf-8")
    if fmt == "md":
        from .markdown import export_markdown

        return export_markdown(manager, leaf_id).encode("utf-8")
    return export_jsonl(manager, leaf_id)
