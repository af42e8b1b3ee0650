"""Compaction and branch-summary settings (pi's defaults) and the threshold check ``should_compact``.

Plain values and arithmetic only: no session access, no model calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_BRANCH_SUMMARY_SETTINGS",
    "DEFAULT_COMPACTION_SETTINGS",
    "BranchSummarySettings",
    "CompactionSettings",
    "should_compact",
]


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """``compaction.*`` in pi's settings: automatic compaction, reply head-room, recent tokens kept verbatim."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000

    def to_dict(self) -> dict[str, Any]:
        """pi's JSON shape: ``{enabled, reserveTokens, keepRecentTokens}``."""
        return {
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionSettings:
        """Read pi's camelCase settings object; missing keys take the defaults."""
        default = cls()
        return cls(
            enabled=bool(data.get("enabled", default.enabled)),
            reserve_tokens=int(data.get("reserveTokens", default.reserve_tokens)),
            keep_recent_tokens=int(data.get("keepRecentTokens", default.keep_recent_tokens)),
        )


@dataclass(frozen=True, slots=True)
class BranchSummarySettings:
    """``branchSummary.*``: tokens reserved for prompt and reply when summarizing an abandoned branch."""

    reserve_tokens: int = 16384


DEFAULT_COMPACTION_SETTINGS = CompactionSettings()
DEFAULT_BRANCH_SUMMARY_SETTINGS = BranchSummarySettings()


def should_compact(context_tokens: float, context_window: float, settings: CompactionSettings) -> bool:
    """True when compaction is enabled and the context leaves less than ``reserve_tokens`` of the window."""
    if not settings.enabled:
        return False
    return context_tokens > context_window - settings.reserve_tokens
