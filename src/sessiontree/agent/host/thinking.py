"""Thinking levels as pi offers them per model: ``off`` alone for a model without reasoning, else ``off``
through ``high`` (``xhigh`` where the model's ``compat.thinkingLevelMap`` maps it), and pi's clamping of a
requested level to the nearest one the model has (upwards first, then downwards).
"""

from __future__ import annotations

from ...errors import SessionError
from ...llm.types import Model, ThinkingLevel

__all__ = ["THINKING_LEVELS", "check_thinking_level", "clamp_thinking_level", "supported_thinking_levels"]

THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


def check_thinking_level(level: str) -> ThinkingLevel:
    """``level`` when it is one of pi's levels, else ``invalid_argument`` listing them."""
    if level not in THINKING_LEVELS:
        raise SessionError(
            f"Unknown thinking level {level!r}: use one of {', '.join(THINKING_LEVELS)}",
            kind="invalid_argument",
        )
    return level  # type: ignore[return-value]


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """pi's ``getSupportedThinkingLevels``: the levels ``model`` can be asked for."""
    if not model.reasoning:
        return ["off"]
    mapped = model.compat.get("thinkingLevelMap")
    mapping = mapped if isinstance(mapped, dict) else {}
    levels: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level == "xhigh" and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """pi's ``clampThinkingLevel``: ``level`` if the model has it, else the next higher one it has, else the
    next lower one."""
    available = supported_thinking_levels(model)
    if level in available:
        return level
    start = THINKING_LEVELS.index(level) if level in THINKING_LEVELS else 0
    for candidate in (*THINKING_LEVELS[start:], *reversed(THINKING_LEVELS[:start])):
        if candidate in available:
            return candidate
    return available[0] if available else "off"
