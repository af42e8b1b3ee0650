"""Walking a directory tree the way ripgrep and fd do by default for pi's tools: dotfiles included, ``.git``
skipped, ``.gitignore`` files honoured (a practical subset: globs, ``**``, ``/`` anchors, ``!`` negation,
trailing ``/`` for directories).

Lists paths only; it reads no file other than ``.gitignore``s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["glob_regex", "walk"]


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob (``*``, ``?``, ``[...]``, ``**``) as a regex over ``/``-separated relative paths."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


_Rule = tuple[re.Pattern[str], bool, bool, bool]  # regex, negated, directories only, anchored


def _rules(directory: Path) -> list[_Rule]:
    try:
        text = (directory / ".gitignore").read_text("utf-8", "replace")
    except OSError:
        return []
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        rules.append((glob_regex(line.lstrip("/")), negated, dir_only, anchored))
    return rules


def _ignored(rules: list[tuple[Path, list[_Rule]]], path: Path, is_dir: bool) -> bool:
    ignored = False
    for base, base_rules in rules:
        try:
            relative = path.relative_to(base).as_posix()
        except ValueError:
            continue
        for regex, negated, dir_only, anchored in base_rules:
            if dir_only and not is_dir:
                continue
            subject = relative if anchored else path.name
            if regex.match(subject):
                ignored = not negated
    return ignored


def walk(root: Path, *, stop: Callable[[], bool] = lambda: False) -> Iterator[tuple[Path, bool]]:
    """``(path, is_dir)`` for everything under ``root`` that is not ignored, sorted, depth first."""
    stack: list[tuple[Path, list[tuple[Path, list[_Rule]]]]] = [(root, [])]
    while stack:
        if stop():
            return
        directory, inherited = stack.pop()
        rules = [*inherited, (directory, _rules(directory))]
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        subdirs: list[Path] = []
        for name in names:
            if name == ".git":
                continue
            path = directory / name
            is_dir = path.is_dir() and not path.is_symlink()
            if _ignored(rules, path, is_dir):
                continue
            yield path, is_dir
            if is_dir:
                subdirs.append(path)
        stack.extend((d, rules) for d in reversed(subdirs))
