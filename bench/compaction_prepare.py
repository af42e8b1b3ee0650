"""``prepare_compaction`` timed on a linear synthetic session file (``python bench/compaction_prepare.py``).

Writes a throw-away JSONL session in a temporary directory and times the preparation on it; never touches
real sessions and does not call any summarizer. ``bench/run.py`` measures the same on generated sessions.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from sessiontree import SessionManager
from sessiontree.compaction import DEFAULT_COMPACTION_SETTINGS, prepare_compaction
from sessiontree.format.ids import iso_from_ms
from sessiontree.format.pi_json import dumps

__all__ = ["bench_prepare_compaction", "write_synthetic_session"]


def _entry(i: int, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"{i:08x}",
        "parentId": parent,
        "timestamp": iso_from_ms(1_700_000_000_000 + i * 1000),
        "message": message,
    }


def write_synthetic_session(path: Path, entries: int) -> None:
    """A linear coding session of ``entries`` entries: user, assistant tool call, tool result, assistant reply."""
    usage = {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1100}
    identity = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    lines = [dumps({"type": "session", "version": 3, "id": "bench", "timestamp": iso_from_ms(0), "cwd": "/"})]
    parent: str | None = None
    for i in range(entries):
        ts = 1_700_000_000_000 + i * 1000
        kind = i % 4
        if kind == 0:
            message: dict[str, Any] = {
                "role": "user",
                "content": [{"type": "text", "text": f"step {i}: fix it"}],
            }
        elif kind == 1:
            call = {"type": "toolCall", "id": f"c{i}", "name": "edit" if i % 8 == 1 else "read",
                    "arguments": {"path": f"src/module_{i % 500}.py"}}  # fmt: skip
            message = {
                "role": "assistant",
                "content": [call],
                **identity,
                "usage": usage,
                "stopReason": "toolUse",
            }
        elif kind == 2:
            message = {"role": "toolResult", "toolCallId": f"c{i - 1}", "toolName": "read",
                       "content": [{"type": "text", "text": "line\n" * 40}], "isError": False}  # fmt: skip
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": "Done. " * 20}], **identity,
                       "usage": usage, "stopReason": "stop"}  # fmt: skip
        message["timestamp"] = ts
        entry = _entry(i, parent, message)
        parent = entry["id"]
        lines.append(dumps(entry))
    path.write_text("\n".join(lines) + "\n", "utf-8")


def bench_prepare_compaction(entries: int = 100_000, *, repeat: int = 3) -> dict[str, Any]:
    """Time ``prepare_compaction`` on the leaf path of an ``entries``-entry session (best of ``repeat``).

    Returns ``{"entries", "open_s", "prepare_s", "messages_to_summarize", "turn_prefix", "retained_tail"}``; each prepare
    run opens the file afresh so decoding is counted, and ``open_s`` is reported separately.
    """
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "bench.jsonl"
        write_synthetic_session(file, entries)
        best_open = best_prepare = float("inf")
        prep = None
        for _ in range(repeat):
            start = time.perf_counter()
            manager = SessionManager.open(file, read_only=True)
            path = manager.get_path_view()
            opened = time.perf_counter()
            prep = prepare_compaction(path, DEFAULT_COMPACTION_SETTINGS)
            done = time.perf_counter()
            manager.close()
            best_open = min(best_open, opened - start)
            best_prepare = min(best_prepare, done - opened)
        assert prep is not None
        return {
            "entries": entries,
            "open_s": round(best_open, 4),
            "prepare_s": round(best_prepare, 4),
            "messages_to_summarize": len(prep.messages_to_summarize),
            "turn_prefix": len(prep.turn_prefix_messages),
            "retained_tail": len(prep.retained_tail),
        }


if __name__ == "__main__":
    print(bench_prepare_compaction())
