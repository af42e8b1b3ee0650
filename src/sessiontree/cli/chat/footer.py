"""The chat's footer: model and thinking level, tokens and cost so far, context used of the window.

Figures come from ``sessiontree.session.stats`` and the model layer's token estimate; this module only formats.
Recomputed when a run settles or the session changes, not on every keystroke.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sessiontree.format.safe_text import one_line

if TYPE_CHECKING:
    from ...agent import AgentHarness

__all__ = ["Footer", "tokens"]


def tokens(count: float) -> str:
    """``950``, ``12.3k``, ``1.2M`` (pi's footer style)."""
    if count < 1000:
        return str(int(count))
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


class Footer:
    """One line: ``provider/model · thinking · ↑input ↓output · $cost · ctx used/window (p%)``."""

    def __init__(self) -> None:
        self.text = ""

    def refresh(self, harness: AgentHarness) -> None:
        """Recompute from the harness's session and model."""
        from sessiontree.session.stats import UsageTotals

        from ...llm.tokens import estimate_context_tokens

        manager = harness.session
        model = harness.model
        totals = UsageTotals().add(manager.get_entries())
        used = estimate_context_tokens(manager.build_session_context().messages).tokens
        window = model.context_window
        parts = [one_line(f"{model.provider}/{model.id}", 60)]
        if harness.thinking_level != "off":
            parts.append(f"thinking {harness.thinking_level}")
        parts.append(f"↑{tokens(totals.input + totals.cache_read)} ↓{tokens(totals.output)}")
        parts.append(f"${totals.cost:.4f}")
        share = f" ({100 * used / window:.1f}%)" if window else ""
        parts.append(f"ctx {tokens(used)}/{tokens(window)}{share}")
        name = manager.get_session_name()
        if name:
            parts.append(one_line(name, 30))
        self.text = " · ".join(parts)
