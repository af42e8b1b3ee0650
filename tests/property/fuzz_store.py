"""The mutation fuzzer of the store: mutated pi files must open (or fail with a ``SessionError``) in bounded time,
index exactly the lines a line-by-line reference parse finds, stay byte-identical under read-only use, and
lose nothing when written to. Used by ``test_store_fuzz.py`` (a bounded quick run) and runnable for long runs:

    .venv/bin/python -m tests.property.fuzz_store --cases 100000 [--seed N]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from sessiontree import SessionError, SessionManager
from sessiontree.format import pi_json as _json
from sessiontree.format.entries import session_header
from sessiontree.llm import convert_to_llm
from sessiontree.session.check import check_session_file
from sessiontree.storage import JsonlStore, repair_session_file
from sessiontree.tree.views import entry_preview, tree_rows
from tests.conftest import conformance_root
from tests.deadline import deadline
from tests.property.fuzz_report import FuzzReport, print_report
from tests.property.mutations import mutate

TIME_BOUND = 5.0  # seconds one case may take (open, walks, context, check, write, repair)
_BOM = b"\xef\xbb\xbf"


@dataclass
class Report(FuzzReport):
    """Counts of one fuzz run (every failure list must stay empty)."""

    mutations: collections.Counter[str] = field(default_factory=collections.Counter)
    index_mismatches: list[str] = field(default_factory=list)
    read_only_changes: list[str] = field(default_factory=list)
    lost_entries: list[str] = field(default_factory=list)

    FAILURES = (*FuzzReport.FAILURES, "index_mismatches", "read_only_changes", "lost_entries")

    def summary(self) -> str:
        return (
            f"store fuzz: {self.timing()}, {self.opened} opened; SessionError by kind: {self.errors_by_kind()}; "
            f"other exceptions {len(self.other_exceptions)}, over the {TIME_BOUND:g} s bound "
            f"{len(self.slow_cases)}, index mismatches {len(self.index_mismatches)}, read-only changes "
            f"{len(self.read_only_changes)}, lost entries {len(self.lost_entries)}"
        )


def corpus() -> list[Path]:
    """The pi files the mutator starts from (every session file of the conformance data)."""
    root = conformance_root()
    if root is None:
        return []
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def reference_index(data: bytes) -> list[tuple[int, str, str | None, bytes]] | None:
    """``(line, id, parentId, raw)`` of every entry line, as pi's loader reads them; ``None`` without header.

    Independent of the scanner: split on ``\\n``, skip blank lines, take the first non-blank line as the
    header, decode each line with the store's JSON decoder (orjson, then the stdlib: JavaScript's
    ``JSON.parse`` semantics), keep objects with a string ``type`` (not ``session``) and a string ``id``.
    """
    body = data[len(_BOM) :] if data.startswith(_BOM) else data
    out: list[tuple[int, str, str | None, bytes]] = []
    header_seen = False
    for n, line in enumerate(body.split(b"\n"), start=1):
        if not line.strip():
            continue
        if not header_seen:
            header_seen = True
            continue
        try:
            value = _json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, dict) or value.get("type") == "session":
            continue
        if not isinstance(value.get("type"), str) or not isinstance(value.get("id"), str):
            continue
        parent = value.get("parentId")
        raw = line[:-1] if line.endswith(b"\r") else line
        out.append((n, value["id"], parent if isinstance(parent, str) else None, raw))
    return out if header_seen else None


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _read_only_pass(path: Path, rng: random.Random) -> tuple[SessionManager, JsonlStore]:
    manager = SessionManager.open(path, read_only=True)
    manager.problems  # noqa: B018 - the cycle pass runs on first access
    roots = manager.get_tree()
    for root in roots:
        root.to_dict()
    for row in tree_rows(roots):  # what `sessiontree tree` shows: any JSON value in any field
        entry_preview(row.entry, 60)
    manager.get_entries()
    manager.get_branch()
    context = manager.build_session_context()
    convert_to_llm(context.messages)
    ids = [manager.store.id_at(i) for i in range(len(manager.store))]
    for entry_id in rng.sample(ids, min(3, len(ids))):
        manager.build_session_context(entry_id)
    check_session_file(path)
    store = manager.store
    assert isinstance(store, JsonlStore)
    return manager, store


def _write_pass(path: Path, before: list[bytes], migrated: bool) -> str | None:
    """Append through a writer and reopen; a description of what was lost, or ``None``."""
    manager = SessionManager.open(path)
    new_id = manager.append_custom_entry("fuzz", {"n": 1})
    manager.close()
    after = SessionManager.open(path, read_only=True)
    store = after.store
    raws = [store.raw_at(i) for i in range(len(store))]
    if after.get_leaf_id() != new_id or after.get_entry(new_id) is None:
        return f"the appended entry {new_id} is not the leaf after a reopen"
    if not migrated:
        missing = collections.Counter(before) - collections.Counter(raws)
        if missing:
            return f"{sum(missing.values())} entry line(s) missing after an append"
    return None


def run_case(directory: Path, data: bytes, rng: random.Random, report: Report, label: str) -> None:
    """One mutated file: read-only checks, then a write, then a repair of a copy."""
    path = directory / "s.jsonl"
    path.write_bytes(data)
    before_files = _files(directory)
    started = time.perf_counter()
    try:
        with deadline(TIME_BOUND * 4):
            _check_case(path, data, rng, report, label, before_files)
    except TimeoutError:
        report.slow_cases.append(f"{label}: did not finish within {TIME_BOUND * 4:g} s")
    elapsed = time.perf_counter() - started
    report.slowest = max(report.slowest, elapsed)
    if elapsed > TIME_BOUND:
        report.slow_cases.append(f"{label}: {elapsed:.1f} s")


def _check_case(
    path: Path, data: bytes, rng: random.Random, report: Report, label: str, before_files: dict[str, bytes]
) -> None:
    directory = path.parent
    expected = reference_index(data)
    try:
        try:
            manager, store = _read_only_pass(path, rng)
        except SessionError as exc:
            report.session_errors[type(exc).__name__ + ":" + exc.kind] += 1
            if _files(directory) != before_files:
                report.read_only_changes.append(f"{label}: files changed by a failed read-only open")
            return
        report.opened += 1
        migrated = any(p.kind == "migrated" for p in manager.problems)
        got = [
            (store.line_of(i) or 0, store.id_at(i), store.parent_at(i), store.raw_at(i))
            for i in range(len(store))
        ]
        if not migrated and got != (expected or []):
            first = next(
                (i for i, (a, b) in enumerate(zip(got, expected or [], strict=False)) if a != b), None
            )
            report.index_mismatches.append(
                f"{label}: {len(got)} entries indexed, reference {len(expected or [])}; "
                f"first difference at {first}"
            )
        if _files(directory) != before_files:
            report.read_only_changes.append(f"{label}: read-only use changed the directory")
        before = [store.raw_at(i) for i in range(len(store))]
        manager.close()
        try:
            lost = _write_pass(path, before, migrated)
        except SessionError as exc:
            report.session_errors["write:" + type(exc).__name__ + ":" + exc.kind] += 1
            lost = None
        if lost is not None:
            report.lost_entries.append(f"{label}: {lost}")
        if rng.random() < 0.3:
            copy = directory / "r.jsonl"
            copy.write_bytes(data)
            try:
                repair_session_file(copy, new_header_factory=lambda: session_header("r", "t", "/"))
                SessionManager.open(copy, read_only=True).get_entries()
            except SessionError as exc:
                report.session_errors["repair:" + type(exc).__name__ + ":" + exc.kind] += 1
    except (TimeoutError, KeyboardInterrupt):
        raise
    except Exception:  # the fuzzer's job is to catch what escapes
        report.other_exceptions.append(f"{label}: {traceback.format_exc(limit=-3)}")


def run(seed: int, cases: int, *, files: list[Path] | None = None, keep: Path | None = None) -> Report:
    """``cases`` mutated files from ``seed``; failing inputs are copied to ``keep`` when given."""
    rng = random.Random(seed)
    sources = files if files is not None else corpus()
    report = Report(seed)
    if not sources:
        return report
    small = [p for p in sources if p.stat().st_size < 200_000]
    blobs: dict[Path, bytes] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sessiontree-fuzz-") as tmp:
        for n in range(cases):
            source = rng.choice(sources if rng.random() < 0.02 else small)
            data = blobs.setdefault(source, source.read_bytes())
            mutated, names = mutate(rng, data)
            report.mutations.update(names)
            directory = Path(tmp) / f"c{n}"
            directory.mkdir()
            failures = len(report.failures)
            run_case(directory, mutated, random.Random(rng.random()), report, f"case {n} ({'+'.join(names)})")
            report.cases += 1
            if keep is not None and len(report.failures) > failures:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / f"case-{n}.jsonl").write_bytes(mutated)
            shutil.rmtree(directory, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report


def default_seed() -> int:
    """``SESSIONTREE_FUZZ_SEED`` when set, else a fresh seed (printed with the results)."""
    configured = os.environ.get("SESSIONTREE_FUZZ_SEED")
    return int(configured) if configured else int.from_bytes(os.urandom(4), "big")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy failing inputs here")
    args = parser.parse_args(argv)
    report = run(args.seed if args.seed is not None else default_seed(), args.cases, keep=args.keep)
    return print_report(report, report.summary(), "mutations", report.mutations)


if __name__ == "__main__":
    sys.exit(main())
