"""The chat's footer: model and thinking level, tokens and cost so far, context used of the window.

Figures come from ``sessiontree.session.stats`` and the context estimate of ``cli.context_size``; this
module only formats. Follows every stored message and every change of the leaf or the model, not every
keystroke; ``line(width)`` fits it to the terminal, keeping the context figure to the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sessiontree.format.safe_text import cell_width, cut_to_width, one_line

if TYPE_CHECKING:
    from sessiontree.session.stats import UsageTotals

    from ...agent import AgentHarness

__all__ = ["Footer", "tokens"]

_SEP = " · "
_MODEL_MIN = 12  # cells the model name is cut down to before other parts go


def tokens(count: float) -> str:
    """``950``, ``12.3k``, ``1.2M`` (pi's footer style)."""
    if count < 1000:
        return str(int(count))
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


@dataclass(frozen=True, slots=True)
class _Parts:
    model: str
    thinking: str
    usage: str
    cost: str
    context: str
    share: str
    name: str


class Footer:
    """One line: ``provider/model · thinking · ↑input ↓output · $cost · ctx used/window (p%) · name``.

    The token totals are counted over every entry once per session (reading a large session's entries takes
    seconds) and then kept up to date from each stored message; the context is estimated again after every
    change of the leaf and followed message by message in between.
    """

    def __init__(self) -> None:
        self._parts: _Parts | None = None
        self._totals: UsageTotals | None = None
        self._counted: str | None = None  # the session the totals are of
        self._context = 0

    @property
    def text(self) -> str:
        """The whole footer, however wide."""
        return self.line(10_000)

    def refresh(self, harness: AgentHarness) -> None:
        """Recompute from the harness's session (its context, and its totals when it is another session)."""
        from sessiontree.session.stats import UsageTotals

        from ..context_size import context_tokens

        manager = harness.session
        key = f"{manager.get_session_id()}|{manager.get_session_file()}"
        if self._totals is None or key != self._counted:
            self._totals, self._counted = UsageTotals().add(manager.get_entries()), key
        self._context = context_tokens(manager.build_session_context().messages)
        self._compose(harness)

    def add_message(self, harness: AgentHarness, message: dict[str, Any]) -> None:
        """A message was stored on the branch: count it and grow the context by it."""
        from ...llm.tokens import calculate_context_tokens, estimate_tokens

        if self._totals is None:
            self.refresh(harness)
            return
        self._totals.add([{"type": "message", "message": message}])
        usage = message.get("usage")
        answered = message.get("role") == "assistant" and message.get("stopReason") not in (
            "aborted",
            "error",
        )
        if answered and isinstance(usage, dict) and calculate_context_tokens(usage):
            self._context = calculate_context_tokens(usage)  # the reply counted the whole context
        else:
            self._context += estimate_tokens(message)
        self._compose(harness)

    def _compose(self, harness: AgentHarness) -> None:
        assert self._totals is not None
        totals, used = self._totals, self._context
        model = harness.model
        window = model.context_window
        level = harness.thinking_level
        self._parts = _Parts(
            model=one_line(f"{model.provider}/{model.id}", 60),
            thinking=f"thinking {level}" if level != "off" and model.reasoning else "",
            usage=f"↑{tokens(totals.input + totals.cache_read)} ↓{tokens(totals.output)}",
            cost=f"${totals.cost:.4f}",
            context=f"ctx {tokens(used)}/{tokens(window)}",
            share=f" ({100 * used / window:.1f}%)" if window else "",
            name=one_line(harness.session.get_session_name() or "", 30),
        )

    def line(self, width: int) -> str:
        """The footer in at most ``width`` cells: the session name goes first, then the model name is cut,
        then the cost, the token counts, the thinking level and the percentage go; the context figure
        stays (cut only when nothing else is left)."""
        p = self._parts
        if p is None:
            return ""
        fields = {"thinking": p.thinking, "usage": p.usage, "cost": p.cost, "share": p.share, "name": p.name}

        def join(model: str) -> str:
            parts = [model, fields["thinking"], fields["usage"], fields["cost"]]
            parts += [p.context + fields["share"], fields["name"]]
            return _SEP.join(f for f in parts if f)

        def fitted(least: int) -> str:
            room = width - cell_width(join("")) - len(_SEP)
            return join(cut_to_width(p.model, max(least, room)) if room >= 4 or least else "")

        text = join(p.model)
        if cell_width(text) <= width:
            return text
        fields["name"] = ""
        for drop in ("cost", "usage", "thinking", "share"):
            text = fitted(_MODEL_MIN)
            if cell_width(text) <= width:
                return text
            fields[drop] = ""
        text = fitted(0)
        return text if cell_width(text) <= width else cut_to_width(p.context, width)
