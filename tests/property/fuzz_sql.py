"""The mutation fuzzer of the SQL stores: pi files copied into a SQLite or PostgreSQL store, their rows then
damaged with the plain driver (``tests/backends/damage.py``: lines, key and pointer columns, the session row,
the schema, deep nesting, big rows), and every read done. The promise checked on every case:

- every read ends within a bound and gives a result or a documented ``SessionError``, never another exception;
- read-only use changes no row;
- a read that meets damage reads the session as its file reads (the stored header and lines, byte for byte)
  and reports the same problems on the same lines;
- whatever makes the reads differ from the file's is reported by ``check`` (``SqlRepo.check``).

Used by ``tests/backends/test_sql_fuzz.py`` (a quick run, and a longer campaign marked ``slow``), and runnable
for long runs: ``.venv/bin/python -m tests.property.fuzz_sql --cases 2000 [--seed N] [--postgres URL]``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiontree import SessionError, SessionManager, open_repo
from sessiontree.format.pi_json import dumps
from sessiontree.llm import convert_to_llm
from sessiontree.session.copying import read_source
from tests.backends.damage import DAMAGES, Plain, as_file, damages_for, huge_line, shape
from tests.deadline import deadline
from tests.property.fuzz_report import FuzzReport, print_report
from tests.property.fuzz_store import corpus, default_seed

TIME_BOUND = 10.0  # seconds the reads and the check of one case may take
BIG_BOUND = 30.0  # the same with a line of tens of megabytes (each read decodes it)
SQL_ONLY = frozenset({"bad_row", "missing_rows", "bad_session_row"})
TABLES = ("st_schema", "st_sessions", "st_entries", "st_writer_leases")


@dataclass
class Report(FuzzReport):
    """Counts of one run (every failure list must stay empty)."""

    read_from_lines: int = 0
    differed_and_checked: int = 0
    damages: collections.Counter[str] = field(default_factory=collections.Counter)
    read_only_changes: list[str] = field(default_factory=list)
    unlike_the_file: list[str] = field(default_factory=list)
    unreported: list[str] = field(default_factory=list)

    FAILURES = (*FuzzReport.FAILURES, "read_only_changes", "unlike_the_file", "unreported")

    def summary(self) -> str:
        return (
            f"SQL fuzz: {self.timing()},"
            f" {self.opened} opened, {self.read_from_lines} read from their lines, {self.differed_and_checked} "
            f"read unlike their file and reported by check; SessionError by kind: {self.errors_by_kind()}; "
            f"other exceptions {len(self.other_exceptions)}, over the {TIME_BOUND:g} s bound "
            f"{len(self.slow_cases)}, read-only changes {len(self.read_only_changes)}, unlike the file after "
            f"meeting damage {len(self.unlike_the_file)}, unreported by check {len(self.unreported)}"
        )


def _canon(shape: dict[str, Any]) -> dict[str, str]:
    """Each read's result as JSON text (values nested 1,000 deep compare without recursing)."""
    return {k: dumps(v) for k, v in shape.items()}


def _comparable(problems: list[Any]) -> list[tuple[str, int | None]]:
    """Problems of the lines as (kind, line): a file's torn last line is a SQL store's bad line."""
    out = []
    for p in problems:
        if p.is_note or p.kind in SQL_ONLY:
            continue
        out.append(("bad_line" if p.kind == "torn_tail" else p.kind, p.line))
    return sorted(out, key=repr)


def _reads(
    url: str, sid: str, rng: random.Random
) -> tuple[SessionManager, dict[str, Any], dict[str, Any], list[Any]]:
    """Every read of the session: what the first reads gave, what they give after all the others (which
    may have met damage the first did not), and what ``check`` reports."""
    repo = open_repo(url)
    try:
        manager = repo.open(sid, read_only=True)
        first = shape(manager)
        convert_to_llm(first["messages"])
        entries = manager.get_entries()
        for entry in rng.sample(entries, min(4, len(entries))):
            manager.get_children(str(entry.get("id")))
            manager.build_session_context(str(entry.get("id")))
            manager.get_branch(str(entry.get("id")))
        manager.get_labels()
        repo.list()
        repo.search("the")
        _, lines = repo.export(sid)
        for _ in lines:
            pass
        checked = repo.check(sid)  # type: ignore[attr-defined]
        return manager, first, shape(manager), checked
    finally:
        repo.close()


def _file_reads(plain: Plain, sid: str, directory: Path) -> tuple[dict[str, Any], list[Any]] | None:
    try:
        manager = SessionManager.open(as_file(plain, sid, directory / "as-file.jsonl"), read_only=True)
    except SessionError:
        return None
    try:
        return shape(manager), manager.problems
    finally:
        manager.close()


def _damage(plain: Plain, sid: str, rng: random.Random, names: list[str], big: int) -> list[str]:
    done = []
    for name in names:
        try:
            if name == "big_line" and big:
                seqs = plain.seqs(sid)
                if seqs:
                    seq = rng.choice(seqs)
                    plain.set_line(sid, seq, huge_line(big)(plain.line(sid, seq), rng))
                changed = bool(seqs)
            else:
                changed = DAMAGES[name](plain, sid, rng)
        except Exception:  # the plain driver refused it (a constraint): that damage cannot be done
            continue
        if changed:
            done.append(name)
    return done


def run_case(
    url: str, source: Path, rng: random.Random, report: Report, label: str, directory: Path, big: int
) -> None:
    """One pi file into the store at ``url``, damaged, then read."""
    src = read_source(str(source))
    with open_repo(url) as repo:
        sid = repo.import_session(src.header_block, src.lines)
    plain = Plain(url)
    try:
        kinds = damages_for(url, whole_store=url.startswith("sqlite:"))
        names = _damage(plain, sid, rng, [rng.choice(kinds) for _ in range(rng.choice([1, 1, 2, 3]))], big)
        report.damages.update(names)
        label = f"{label} ({'+'.join(names) or 'nothing'})"
        before = {t: plain.table(t) for t in TABLES}
        try:
            bound = BIG_BOUND if big and "big_line" in names else TIME_BOUND
            with deadline(bound * 4):
                _check_case(url, sid, plain, rng, report, label, directory, bound)
        except TimeoutError:
            report.slow_cases.append(f"{label}: did not finish within {bound * 4:g} s")
        if {t: plain.table(t) for t in TABLES} != before:
            report.read_only_changes.append(f"{label}: read-only use changed the database")
    finally:
        for table, column in (
            ("st_entry_text", "session_id"),
            ("st_entries", "session_id"),
            ("st_sessions", "id"),
        ):
            with contextlib.suppress(Exception):
                plain.execute(f"DELETE FROM {table} WHERE {column} = ?", (sid,))
        plain.close()


def _check_case(
    url: str,
    sid: str,
    plain: Plain,
    rng: random.Random,
    report: Report,
    label: str,
    directory: Path,
    bound: float,
) -> None:
    try:
        started = time.perf_counter()
        try:
            manager, first, last, checked = _reads(url, sid, rng)
        except SessionError as exc:
            report.session_errors[type(exc).__name__ + ":" + exc.kind] += 1
            return
        finally:
            elapsed = time.perf_counter() - started  # the store's reads (and check), not the harness's
            report.slowest = max(report.slowest, elapsed)
            if elapsed > bound:
                report.slow_cases.append(f"{label}: {elapsed:.1f} s")
        report.opened += 1
        from_lines = bool(getattr(manager.index, "_irregular", False))  # the reads met damage (or the import)
        report.read_from_lines += from_lines
        damage = [p for p in checked if not p.is_note]
        file = _file_reads(plain, sid, directory)
        if file is None:
            if not damage:
                report.unreported.append(f"{label}: its file does not open, and check reports nothing")
            return
        expected, file_problems = _canon(file[0]), file[1]
        for when, got in (("first", _canon(first)), ("last", _canon(last))):
            differ = [k for k in got if got[k] != expected.get(k)]
            if differ and not damage:
                report.unreported.append(
                    f"{label}: {when} reads differ from its file's ({differ}), check reports nothing"
                )
            elif differ and when == "first":
                report.differed_and_checked += 1
        last_differ = [k for k in _canon(last) if _canon(last)[k] != expected.get(k)]
        if from_lines and last_differ:
            report.unlike_the_file.append(
                f"{label}: read from its lines, but unlike its file ({last_differ})"
            )
        store_problems = [*manager.index.problems, *manager.index.cycle_problems()]
        file_store = [p for p in file_problems if p.kind != "unknown_label_target"]
        if from_lines and _comparable(store_problems) != _comparable(file_store):
            report.unlike_the_file.append(
                f"{label}: problems {_comparable(store_problems)} where its file has {_comparable(file_store)}"
            )
    except (TimeoutError, KeyboardInterrupt):
        raise
    except Exception:  # the fuzzer's job is to catch what escapes
        report.other_exceptions.append(f"{label}: {traceback.format_exc(limit=-4)}")


def sqlite_stores(directory: Path) -> Iterator[str]:
    """A new SQLite store per case (store-wide damage, such as the schema's, stays in its case)."""
    n = 0
    while True:
        n += 1
        yield f"sqlite:///{directory}/case-{n}.db"


def run(
    seed: int, cases: int, stores: Callable[[Path], Iterator[str]] = sqlite_stores, big: int = 0
) -> Report:
    """``cases`` damaged sessions from ``seed``; ``big`` makes the ``big_line`` damage that many bytes."""
    rng = random.Random(seed)
    report = Report(seed)
    sources = [p for p in corpus() if p.stat().st_size < 100_000]
    usable: list[Path] = []
    for path in sources:
        with contextlib.suppress(SessionError):
            src = read_source(str(path))
            if src.exact and src.count:
                usable.append(path)
    if not usable:
        return report
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sessiontree-sqlfuzz-") as tmp:
        urls = stores(Path(tmp))
        for n in range(cases):
            directory = Path(tmp) / f"c{n}"
            directory.mkdir()
            run_case(
                next(urls),
                rng.choice(usable),
                random.Random(rng.random()),
                report,
                f"case {n}",
                directory,
                big,
            )
            report.cases += 1
    report.seconds = time.perf_counter() - started
    return report


def postgres_stores(url: str) -> Callable[[Path], Iterator[str]]:
    """Every case in one PostgreSQL database (damage to the whole store, the schema's, is left out there)."""

    def stores(directory: Path) -> Iterator[str]:
        while True:
            yield url

    return stores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--postgres", default=None, help="a PostgreSQL database URL to fuzz instead of SQLite"
    )
    parser.add_argument("--big", type=int, default=0, help="bytes of the big_line damage (e.g. 67108864)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else default_seed()
    stores = postgres_stores(args.postgres) if args.postgres else sqlite_stores
    report = run(seed, args.cases, stores, args.big)
    return print_report(report, report.summary(), "damages", report.damages)


if __name__ == "__main__":
    sys.exit(main())
