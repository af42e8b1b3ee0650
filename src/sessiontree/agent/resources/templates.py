"""Prompt templates as pi 1.6 reads and expands them.

A template is a ``*.md`` file named ``/name`` after the file. Its front matter may give ``description`` and
``argument-hint``; without a description the first non-blank body line is used, cut to 60 UTF-16 units
(``...`` added when longer). The content is the body after the front matter, trimmed; a file without front
matter is used whole (CRLF→LF, not trimmed). The first template of a name wins.

Expansion applies to text that starts with ``/`` and names a template exactly (``/name args``, args may
span lines). Args are split shell-style: a quote opens only at the start of an argument, ``\\"`` inside
quotes is a quote, an unclosed quote is literal text, ``""`` is an empty argument. Placeholders: ``$1``…
(missing: empty), ``$@`` and ``$ARGUMENTS`` (all, space-joined), ``${N:-default}``, ``${@:-default}``,
``${ARGUMENTS:-default}``, ``${@:N}``, ``${@:N:L}`` (1-based; 0 counts as 1). Substituted values are not
expanded again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from ...errors import ResourceError
from ._text import DEFAULT_MAX_FILE_BYTES, JS_SPACE, js_len, js_slice, js_trim, read_resource, reason
from .frontmatter import parse_frontmatter
from .types import Diagnostic, PromptTemplate, SourceInfo

__all__ = [
    "expand_template",
    "load_template_file",
    "load_templates",
    "parse_command_args",
    "substitute_args",
]

_SPACE = f"[{re.escape(JS_SPACE)}]"
_COMMAND = re.compile(rf"/((?:(?!{_SPACE}).)+)(?:{_SPACE}+(.*))?\Z", re.S)
_PLACEHOLDER = re.compile(
    r"\$\{([0-9]+|ARGUMENTS|@):-([^}]*)\}|\$\{@:([0-9]+)(?::([0-9]+))?\}|\$(ARGUMENTS|@|[0-9]+)"
)
_DESCRIPTION_UNITS = 60


def load_template_file(
    path: str, source_info: SourceInfo, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[PromptTemplate | None, list[Diagnostic]]:
    """One template file, or None with a warning naming the file when it cannot be read or parsed."""
    try:
        fields, body = parse_frontmatter(read_resource(path, max_bytes), path)
    except ResourceError as exc:
        return None, [Diagnostic("warning", reason(exc), path, exc.line)]
    name = os.path.basename(path).removesuffix(".md")
    description = fields.get("description")
    if not isinstance(description, str) or not description:
        description = ""
        first = next((line for line in body.split("\n") if js_trim(line)), None)
        if first is not None:
            description = js_slice(first, _DESCRIPTION_UNITS)
            if js_len(first) > _DESCRIPTION_UNITS:
                description += "..."
    hint = fields.get("argument-hint")
    template = PromptTemplate(
        name=name,
        description=description,
        content=body,
        file_path=path,
        source_info=source_info,
        argument_hint=hint if isinstance(hint, str) and hint else None,
    )
    return template, []


def load_templates(
    candidates: Iterable[tuple[str, SourceInfo]], max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[list[PromptTemplate], list[Diagnostic]]:
    """The templates of ``(file, source)`` candidates in precedence order; the first of a name wins."""
    by_name: dict[str, PromptTemplate] = {}
    warnings: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    for path, info in candidates:
        template, found = load_template_file(path, info, max_bytes)
        warnings.extend(found)
        if template is None:
            continue
        winner = by_name.get(template.name)
        if winner is not None:
            collisions.append(
                Diagnostic(
                    "collision",
                    f'template name "/{template.name}" is already taken by {winner.file_path}; this one is not loaded',
                    path,
                    name=template.name,
                    winner=winner.file_path,
                )
            )
            continue
        by_name[template.name] = template
    return list(by_name.values()), warnings + collisions


def parse_command_args(text: str) -> list[str]:
    """``text`` split into arguments the way pi splits a template's arguments."""
    args: list[str] = []
    current = ""
    started = False
    quote: str | None = None
    quote_start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\" and text[i + 1 : i + 2] == quote:
                current += quote
                i += 1
            elif ch == quote:
                quote = None
            else:
                current += ch
        elif ch in "\"'" and not started:
            quote, quote_start, started = ch, i, True
        elif ch in JS_SPACE:
            if started:
                args.append(current)
                current, started = "", False
        else:
            current += ch
            started = True
        if quote is not None and i == len(text) - 1:
            # An unclosed quote: keep the quote character as text and read on from just after it.
            quote, current, i = None, text[quote_start], quote_start
        i += 1
    if started:
        args.append(current)
    return args


def substitute_args(content: str, args: Sequence[str]) -> str:
    """``content`` with its placeholders replaced by ``args`` (no recursion into the values)."""
    everything = " ".join(args)

    def arg(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(match: re.Match[str]) -> str:
        target, default, start, length, simple = match.groups()
        if target is not None:
            value = everything if target in ("@", "ARGUMENTS") else arg(target)
            return value or default
        if start is not None:
            first = max(int(start) - 1, 0)
            chosen = args[first:] if length is None else args[first : first + int(length)]
            return " ".join(chosen)
        return everything if simple in ("@", "ARGUMENTS") else arg(simple)

    return _PLACEHOLDER.sub(replace, content)


def expand_template(text: str, templates: Sequence[PromptTemplate]) -> str:
    """``/name args`` as the named template with the args substituted; any other text unchanged."""
    if not text.startswith("/"):
        return text
    match = _COMMAND.match(text)
    if match is None:
        return text
    template = next((t for t in templates if t.name == match.group(1)), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(match.group(2) or ""))
