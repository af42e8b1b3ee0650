"""``.gitignore``, ``.ignore`` and ``.fdignore`` inside skill and prompt folders, applied as pi applies them:
each folder's patterns are prefixed with the folder's path relative to the walk's root (so ``foo`` in
``a/.gitignore`` becomes ``a/foo``) and collected into one rule set for the whole walk; directories are
tested with a trailing ``/``.

No walking here; the discovery modules call ``add_folder`` as they enter folders.
"""

from __future__ import annotations

import os

import pathspec

__all__ = ["IGNORE_FILE_NAMES", "IgnoreRules"]

IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


def _prefixed(line: str, prefix: str) -> str | None:
    trimmed = line.strip()
    if not trimmed or (trimmed.startswith("#") and not trimmed.startswith("\\#")):
        return None
    pattern, negated = line, False
    if pattern.startswith("!"):
        negated, pattern = True, pattern[1:]
    elif pattern.startswith("\\!"):
        pattern = pattern[1:]
    if pattern.startswith("/"):
        pattern = pattern[1:]
    full = f"{prefix}{pattern}" if prefix else pattern
    return f"!{full}" if negated else full


class IgnoreRules:
    """The ignore patterns met so far in one walk rooted at ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._patterns: list[str] = []
        self._spec: pathspec.GitIgnoreSpec | None = None

    def add_folder(self, folder: str) -> None:
        """Read ``folder``'s ignore files (unreadable ones are skipped, as pi does)."""
        relative = os.path.relpath(folder, self.root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        added = False
        for name in IGNORE_FILE_NAMES:
            path = os.path.join(folder, name)
            if not os.path.isfile(path):  # checked first: opening a FIFO would block
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read(1024 * 1024)
            except OSError:
                continue
            for line in text.replace("\r\n", "\n").split("\n"):
                pattern = _prefixed(line, prefix)
                if pattern is not None:
                    self._patterns.append(pattern)
                    added = True
        if added:
            self._spec = None

    def ignores(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute, under the root) is excluded."""
        if not self._patterns:
            return False
        if self._spec is None:
            self._spec = pathspec.GitIgnoreSpec.from_lines(self._patterns)
        relative = os.path.relpath(path, self.root).replace(os.sep, "/")
        return self._spec.match_file(f"{relative}/" if is_dir else relative)
