"""Check and repair of damaged session files: report every problem, recover what can be recovered.

Never deletes bytes: anything taken out of a file is kept beside it (``.corrupt-<n>``, ``.torn-<n>``,
``.v<N>.bak``). It must not change what a healthy file means (duplicates, dangling parents and cycles are
only reported).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiontree.format import pi_json as _json
from sessiontree.tree.entry_store import Problem

from ..errors import CorruptSessionError
from . import _fileio, lock
from ._fileformat import find_header
from .jsonl import JsonlStore, resolve_path

__all__ = ["RepairReport", "repair_session_file"]

_REWRITE_KINDS = frozenset({"bad_line", "extra_header", "bad_parent"})


@dataclass(slots=True)
class RepairReport:
    """What ``repair_session_file`` found and did."""

    path: Path
    problems: list[Problem] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    moved_aside: list[Path] = field(default_factory=list)
    recovered_entries: int | None = None
    dropped_lines: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the file was modified."""
        return bool(self.actions)

    def describe(self) -> list[str]:
        """What was done, one sentence per line (``nothing to repair`` when the file was left alone)."""
        return list(self.actions) or [f"{self.path}: nothing to repair"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "path": str(self.path),
            "problems": [p.to_dict() for p in self.problems],
            "actions": list(self.actions),
            "movedAside": [str(p) for p in self.moved_aside],
            "recoveredEntries": self.recovered_entries,
            "droppedLines": list(self.dropped_lines),
        }


def _recover_lines(data: bytes) -> tuple[list[bytes], list[int]]:
    """Lines that parse as session entries (verbatim, ``\\r`` stripped) and the numbers of the others."""
    kept: list[bytes] = []
    dropped: list[int] = []
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    for n, line in enumerate(body.split(b"\n"), start=1):
        raw = line[:-1] if line.endswith(b"\r") else line
        if not raw.strip():
            continue
        try:
            value = _json.loads(raw)
        except ValueError:
            dropped.append(n)
            continue
        if (
            isinstance(value, dict)
            and isinstance(value.get("type"), str)
            and value.get("type") != "session"
            and isinstance(value.get("id"), str)
        ):
            kept.append(raw)
        else:
            dropped.append(n)
    return kept, dropped


def _keep_original(file: Path, data: bytes, report: RepairReport) -> None:
    aside = _fileio.first_free(file, ".corrupt-")
    _fileio.write_new_file(aside, data)
    report.moved_aside.append(aside)


def _refuse_non_session(file: Path, header_error: str, kept: int, dropped: int) -> None:
    total = kept + dropped
    raise CorruptSessionError(
        f"{file}: not a session file: {header_error.removeprefix(f'{file}: ').split(' (', 1)[0]}; "
        f"{kept} of {total} non-blank lines parse as session entries. Nothing was changed "
        "(`sessiontree check --repair --force` rewrites it anyway, keeping the original aside).",
        kind="not_a_session",
        path=str(file),
    )


def repair_session_file(
    path: str | Path, *, new_header_factory: Callable[[], Mapping[str, Any]], force: bool = False
) -> RepairReport:
    """Repair ``path`` in place under the writer lock (``SessionLockedError`` if a writer holds it).

    A damaged header: the original is kept as ``<file>.corrupt-<n>`` and the file is rewritten (atomically)
    with ``new_header_factory()`` and every line that parses as an entry; when fewer than half of the lines
    (or none) parse as entries the file is not a session and is left untouched (``CorruptSessionError`` of
    kind ``not_a_session``) unless ``force``. Bad lines in the middle or extra headers: the same rewrite with
    the original header. A torn last line only: moved to ``<file>.torn-<n>`` and cut. A missing final
    newline: written. A v1/v2 file is migrated first (backup ``.v<N>.bak``). Rewrites keep the file's mode.
    """
    file = resolve_path(Path(path))  # a link is resolved once, as at open: the target is what gets repaired
    report = RepairReport(file)
    try:
        with JsonlStore.open(file, read_only=True) as probe:
            migrated = probe.header is not None and any(p.kind == "migrated" for p in probe.problems)
    except CorruptSessionError:
        migrated = False
    if migrated:
        with JsonlStore.open(file) as upgraded:
            note = next(p.message for p in upgraded.problems if p.kind == "migrated")
            report.actions.append(f"migrated to version 3: {note}")
    fd = _fileio.open_regular(file, os.O_RDWR | os.O_APPEND)
    try:
        lock.acquire(fd, file)
        data = _fileio.read_all(file)
        try:
            store = JsonlStore.open(file, read_only=True)
        except CorruptSessionError as exc:
            kept, dropped = _recover_lines(data)
            if not force and (not kept or len(kept) < len(dropped)):
                _refuse_non_session(file, str(exc), len(kept), len(dropped))
            report.problems.append(Problem("bad_header", exc.line, str(exc)))
            header = _json.dumps_bytes(dict(new_header_factory()))
            _keep_original(file, data, report)
            _fileio.atomic_replace(file, b"".join([header, b"\n", *(line + b"\n" for line in kept)]))
            report.recovered_entries, report.dropped_lines = len(kept), dropped
            report.actions.append(
                f"rewrote {file} with a new header and {len(kept)} recovered entries; the original is "
                f"kept as {report.moved_aside[-1]}"
            )
            return report
        with store:
            report.problems.extend(store.problems)
            _repair_v3(file, fd, data, store, report)
    finally:
        os.close(fd)
    return report


def _repair_v3(file: Path, fd: int, data: bytes, store: JsonlStore, report: RepairReport) -> None:
    kinds = {p.kind for p in store.problems}
    if kinds & _REWRITE_KINDS:
        found = find_header(data)
        assert found is not None
        start, stop, _ = found
        header = data[start:stop].rstrip(b"\r")
        lines = [store.raw_at(i) for i in range(len(store))]
        _keep_original(file, data, report)
        _fileio.atomic_replace(file, b"".join([header, b"\n", *(line + b"\n" for line in lines)]))
        report.recovered_entries = len(lines)
        report.dropped_lines = sorted(p.line for p in store.problems if p.kind in _REWRITE_KINDS and p.line)
        report.actions.append(
            f"rewrote {file} without {len(report.dropped_lines)} damaged line(s); the original is kept as "
            f"{report.moved_aside[-1]}"
        )
    elif store.torn_tail is not None:
        offset, line = store.torn_tail
        aside = _fileio.first_free(file, ".torn-")
        _fileio.write_new_file(aside, data[offset:])
        os.ftruncate(fd, offset)
        os.fsync(fd)
        report.moved_aside.append(aside)
        report.dropped_lines = [line]
        report.actions.append(f"moved the torn last line {line} to {aside} and cut it off")
    elif data and not data.endswith(b"\n"):
        _fileio.write_all(fd, b"\n")
        os.fsync(fd)
        report.actions.append("wrote the missing final newline")
