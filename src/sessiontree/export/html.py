"""A session branch as one self-contained HTML page: the tree in a sidebar (active path marked), the branch
rendered (markdown, code, tool calls and results, thinking collapsed, images inline).

Everything from the session is escaped; markdown is rendered with raw HTML off and links limited to
http(s); images come only from the session's own base64 blocks. The page has no script and loads nothing
(a Content-Security-Policy says so to the browser too). It reads the session and never writes it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from sessiontree.format.pi_json import dumps
from sessiontree.format.safe_text import safe_text
from sessiontree.tree.views import connector_prefix, entry_preview, tree_rows

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

    from sessiontree.session.manager import SessionManager

__all__ = ["export_html"]

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(r"[A-Za-z0-9+/\r\n]*={0,2}")
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_STYLE = """
body{margin:0;font:15px/1.5 system-ui,sans-serif;color:#1f2328;background:#fff;display:flex}
nav{width:34%;max-width:520px;height:100vh;overflow:auto;position:sticky;top:0;background:#f6f8fa;
border-right:1px solid #d0d7de;font:12px/1.45 ui-monospace,monospace;padding:8px;box-sizing:border-box}
nav a{color:inherit;text-decoration:none}nav .row{white-space:pre;overflow:hidden;text-overflow:ellipsis}
nav .off{color:#8c959f}nav .active{font-weight:600}nav .leaf{background:#ddf4ff}
nav .label{color:#9a6700}main{flex:1;padding:16px 28px;max-width:900px;overflow-wrap:anywhere}
header h1{font-size:20px;margin:0 0 4px}header p{margin:0;color:#59636e;font-size:13px}
section{border:1px solid #d0d7de;border-radius:6px;margin:12px 0;padding:8px 12px}
section h3{margin:0 0 4px;font-size:13px;color:#59636e;text-transform:uppercase;letter-spacing:.03em}
section.user{background:#f0f7ff}section.error{border-color:#cf222e}section.summary{background:#fff8c5}
.event{color:#59636e;font-size:13px;margin:6px 0}pre{background:#f6f8fa;padding:8px;overflow:auto;
white-space:pre-wrap}code{font:13px ui-monospace,monospace}details.thinking{color:#59636e}
.tool-call .name{font-weight:600}img{max-width:100%}.error-text{color:#cf222e}
"""


def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.disable("image")  # a markdown image would load from the network
    md.validateLink = lambda url: url.strip().lower().startswith(("http://", "https://"))  # type: ignore[method-assign]
    return md


class _Page:
    def __init__(self, manager: SessionManager, path: Sequence[dict[str, Any]]) -> None:
        self.manager = manager
        self.path = path
        self.md = _markdown()
        self.anchor = {str(e.get("id")): f"e{n}" for n, e in enumerate(path)}

    def md_html(self, text: Any) -> str:
        return str(self.md.render(safe_text(text if isinstance(text, str) else "", keep_newlines=True)))

    @staticmethod
    def text(value: Any) -> str:
        return escape(safe_text(value if isinstance(value, str) else dumps(value), keep_newlines=True))

    @staticmethod
    def image(block: dict[str, Any]) -> str:
        mime, data = block.get("mimeType"), block.get("data")
        if mime not in _IMAGE_TYPES or not isinstance(data, str) or not _BASE64.fullmatch(data):
            return '<p class="event">[an image that is not inline base64 PNG, JPEG, GIF or WebP]</p>'
        try:
            base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError):
            return '<p class="event">[an image whose data is not base64]</p>'
        return (
            f'<img alt="image from the session" src="data:{mime};base64,{escape(data.replace(chr(10), ""))}">'
        )

    def blocks(self, content: Any) -> str:
        if isinstance(content, str):
            return self.md_html(content)
        if not isinstance(content, list):
            return ""
        out = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                out.append(self.md_html(block.get("text")))
            elif kind == "thinking":
                body = self.md_html(block.get("thinking"))
                out.append(f'<details class="thinking"><summary>Thinking</summary>{body}</details>')
            elif kind == "toolCall":
                args = escape(safe_text(dumps(block.get("arguments")), keep_newlines=True))
                name = self.text(block.get("name"))
                out.append(
                    f'<div class="tool-call">→ <span class="name">{name}</span><pre><code>{args}</code></pre></div>'
                )
            elif kind == "image":
                out.append(self.image(block))
        return "".join(out)

    def message(self, message: dict[str, Any]) -> tuple[str, str, str]:
        """(css class, heading, body) of a message."""
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            return "user", "User", self.blocks(content)
        if role == "assistant":
            model = message.get("model")
            heading = "Assistant" + (f" · {self.text(model)}" if isinstance(model, str) else "")
            body = self.blocks(content)
            if message.get("stopReason") in ("error", "aborted"):
                error = message.get("errorMessage")
                note = self.text(error) if isinstance(error, str) else self.text(message.get("stopReason"))
                return "assistant error", heading, body + f'<p class="error-text">{note}</p>'
            return "assistant", heading, body
        if role == "toolResult":
            css = "tool error" if message.get("isError") is True else "tool"
            pieces = []
            for block in content if isinstance(content, list) else [content]:
                if isinstance(block, dict) and block.get("type") == "image":
                    pieces.append(self.image(block))
                elif isinstance(block, dict) and block.get("type") == "text":
                    pieces.append(f"<pre><code>{self.text(block.get('text'))}</code></pre>")
                elif isinstance(block, str):
                    pieces.append(f"<pre><code>{self.text(block)}</code></pre>")
            return css, f"Tool result · {self.text(message.get('toolName'))}", "".join(pieces)
        if role == "bashExecution":
            body = f"<pre><code>$ {self.text(message.get('command'))}\n{self.text(message.get('output', ''))}</code></pre>"
            return "tool", "Shell command", body
        return "custom", self.text(role if isinstance(role, str) else "message"), self.blocks(content)

    def entry(self, entry: dict[str, Any]) -> str:
        anchor = self.anchor.get(str(entry.get("id")), "")
        kind = entry.get("type")
        if kind == "message" and isinstance(entry.get("message"), dict):
            css, heading, body = self.message(entry["message"])
        elif kind == "compaction":
            css, heading, body = "summary", "Compaction summary", self.md_html(entry.get("summary"))
        elif kind == "branch_summary":
            css, heading, body = (
                "summary",
                "Summary of an abandoned branch",
                self.md_html(entry.get("summary")),
            )
        elif kind == "custom_message":
            css, heading, body = (
                "custom",
                f"Extension message · {self.text(entry.get('customType'))}",
                self.blocks(entry.get("content")),
            )
        else:
            return f'<div class="event" id="{anchor}">{escape(entry_preview(entry, 200))}</div>'
        return f'<section class="{css}" id="{anchor}"><h3>{heading}</h3>{body}</section>'

    def sidebar(self) -> str:
        leaf = self.manager.get_leaf_id() if not self.path else str(self.path[-1].get("id"))
        rows = []
        for row in tree_rows(self.manager.get_tree()):
            entry = row.entry
            entry_id = str(entry.get("id"))
            anchor = self.anchor.get(entry_id)
            css = "row " + ("active" if anchor else "off") + (" leaf" if entry_id == leaf else "")
            marker = "●" if entry_id == leaf else ("•" if anchor else " ")
            label = f' <span class="label">[{escape(safe_text(row.label))}]</span>' if row.label else ""
            text = (
                f"{marker} {escape(connector_prefix(row.guides, row.branch_start, 12))}"
                f"{escape(safe_text(entry_id))}{label} {escape(entry_preview(entry, 80))}"
            )
            rows.append(
                f'<div class="{css}"><a href="#{anchor}">{text}</a></div>'
                if anchor
                else f'<div class="{css}">{text}</div>'
            )
        return "".join(rows)


def export_html(manager: SessionManager, leaf_id: str | None = None) -> str:
    """The page for the branch ending at ``leaf_id`` (default: the leaf), with the whole tree beside it."""
    path = manager.get_branch(leaf_id)
    page = _Page(manager, path)
    name = manager.get_session_name()
    first = next(
        (
            e
            for e in path
            if e.get("type") == "message"
            and isinstance(e.get("message"), dict)
            and e["message"].get("role") == "user"
        ),
        None,
    )
    title = name or (entry_preview(first, 70).removeprefix("user: ") if first else "session")
    facts = " · ".join(
        escape(safe_text(part))
        for part in (
            f"session {manager.get_session_id()}",
            f"cwd {manager.get_cwd()}",
            f"{len(path)} entries on this branch of {len(manager.index)}",
        )
    )
    body = "".join(page.entry(e) for e in path)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(safe_text(title))}</title><style>{_STYLE}</style></head>"
        f'<body><nav aria-label="session tree"><div><b>Tree</b> (● leaf, • this branch)</div>{page.sidebar()}</nav>'
        f"<main><header><h1>{escape(safe_text(title))}</h1><p>{facts}</p></header>{body}</main></body></html>\n"
    )
