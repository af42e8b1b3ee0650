"""What the fuzzers (``fuzz_store``, ``fuzz_sql``) count and how they print it."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class FuzzReport:
    """Counts of one fuzz run: a subclass adds its own failure lists and names them in ``FAILURES``."""

    seed: int
    cases: int = 0
    opened: int = 0
    session_errors: collections.Counter[str] = field(default_factory=collections.Counter)
    other_exceptions: list[str] = field(default_factory=list)
    slow_cases: list[str] = field(default_factory=list)
    seconds: float = 0.0
    slowest: float = 0.0

    FAILURES: ClassVar[tuple[str, ...]] = ("other_exceptions", "slow_cases")
    """The lists that must stay empty, in the order they are reported."""

    @property
    def failures(self) -> list[str]:
        return [failure for name in self.FAILURES for failure in getattr(self, name)]

    def errors_by_kind(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self.session_errors.items())) or "none"

    def timing(self) -> str:
        return f"seed {self.seed}, {self.cases} cases in {self.seconds:.1f} s (slowest {self.slowest:.2f} s)"


def print_report(report: FuzzReport, summary: str, what: str, counts: collections.Counter[str]) -> int:
    """Print the summary, what was applied how often and the first failures; the exit code."""
    print(summary)
    print(f"{what}:", dict(sorted(counts.items())))
    for failure in report.failures[:20]:
        print("FAIL", failure)
    return 1 if report.failures else 0
