"""The diffs the ``edit`` tool reports: pi's numbered display diff (4 lines of context) and a standard
unified patch.

Pure text comparison with ``difflib``; no I/O.
"""

from __future__ import annotations

import difflib

__all__ = ["display_diff", "unified_patch"]


def unified_patch(path: str, old: str, new: str) -> str:
    """A unified diff of ``old`` → ``new`` with ``a/``/``b/`` headers."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def display_diff(old: str, new: str, context: int = 4) -> tuple[str, int | None]:
    """pi's edit diff: ``+N line`` / ``-N line`` / `` N line`` rows with ``context`` lines before the first
    and after the last change of each run (``...`` for the rest); returns it and the first changed line."""
    old_lines, new_lines = old.split("\n"), new.split("\n")
    width = len(str(max(len(old_lines), len(new_lines))))
    ellipsis = f" {' ' * width} ..."
    rows: list[str] = []
    first_changed: int | None = None
    opcodes = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag != "equal":
            if first_changed is None:
                first_changed = j1 + 1
            rows.extend(f"-{str(k + 1).rjust(width)} {old_lines[k]}" for k in range(i1, i2))
            rows.extend(f"+{str(k + 1).rjust(width)} {new_lines[k]}" for k in range(j1, j2))
            continue
        after_change, before_change = index > 0, index < len(opcodes) - 1
        if not (after_change or before_change):
            continue
        shown = list(range(i1, i2))
        skipped_start = skipped_end = False
        if not after_change and len(shown) > context:
            shown, skipped_start = shown[-context:], True
        if not before_change and len(shown) > context:
            shown, skipped_end = shown[:context], True
        if skipped_start:
            rows.append(ellipsis)
        rows.extend(f" {str(k + 1).rjust(width)} {old_lines[k]}" for k in shown)
        if skipped_end:
            rows.append(ellipsis)
    return "\n".join(rows), first_changed
