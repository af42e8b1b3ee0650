"""Where a tool may touch files: paths resolved against the session's working directory and confined to it
(and to any extra roots allowed explicitly), symlinks followed before the check.

Resolves and checks only; it opens no file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["Workspace"]


class Workspace:
    """The working directory of the coding tools and the roots they may reach (``None``: anywhere)."""

    __slots__ = ("allowed", "root")

    def __init__(
        self, cwd: str | os.PathLike[str], allowed: Iterable[str | os.PathLike[str]] | None = ()
    ) -> None:
        self.root = Path(os.path.realpath(os.path.expanduser(os.fspath(cwd))))
        self.allowed: list[Path] | None = (
            None if allowed is None else [self.root, *(Path(os.path.realpath(os.fspath(a))) for a in allowed)]
        )

    def resolve(self, path: str) -> Path:
        """``path`` (relative to the working directory, ``~`` expanded, a leading ``@`` dropped) made absolute
        with symlinks followed; outside the allowed roots it raises ``PermissionError``."""
        raw = path[1:] if path.startswith("@") else path
        candidate = Path(os.path.expanduser(raw))
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        if self.allowed is not None and not any(real == a or a in real.parents for a in self.allowed):
            raise PermissionError(
                f"Path {path} is outside the working directory {self.root} (only paths inside it, or explicitly "
                "allowed ones, can be used)"
            )
        return real

    def display(self, path: Path) -> str:
        """``path`` relative to the working directory when it is inside it, else absolute."""
        try:
            return str(path.relative_to(self.root)) or "."
        except ValueError:
            return str(path)
