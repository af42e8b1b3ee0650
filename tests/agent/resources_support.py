"""Helpers for the prompt-resource tests: a project tree written to disk, and a file that exists but cannot be
read (a symlink to ``/proc/self/mem``, whose first page is unmapped: every read fails with EIO, even as root)."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.agent.resources import Resources, load_resources


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """``files`` (paths relative to ``root``) written; returns ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def unreadable(path: Path) -> Path:
    """``path`` made a regular file (as ``stat`` sees it) whose reads fail."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("/proc/self/mem", path)
    return path


def project(tmp_path: Path, files: dict[str, str | bytes], **options: object) -> Resources:
    """Resources for ``<tmp>/proj`` with the agent dir ``<tmp>/home/.pi/agent`` and home ``<tmp>/home``."""
    root = Path(os.path.realpath(tmp_path))
    write(root, files)
    (root / "proj").mkdir(parents=True, exist_ok=True)
    return load_resources(root / "proj", root / "home/.pi/agent", home=root / "home", **options)  # type: ignore[arg-type]
