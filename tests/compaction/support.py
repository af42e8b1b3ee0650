"""Test support for the compaction suite: pi's session files read as pi reads them, fixture files, paths
built by hand, and a scripted in-process summarizer with ``run`` to await it from a test."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from sessiontree.format.pi_json import loads
from tests.conftest import require_conformance

Entry = dict[str, Any]


def read_session_entries(path: Path) -> list[Entry]:
    """pi's ``getEntries()``: parsed lines in file order, header and unparseable lines left out."""
    entries: list[Entry] = []
    text = path.read_bytes().decode("utf-8", "surrogateescape").strip()
    first = True
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except ValueError:
            continue
        if first:
            first = False
            if isinstance(value, dict) and value.get("type") == "session":
                continue
        if isinstance(value, dict) and value.get("type") != "session":
            entries.append(value)
    return entries


@dataclass
class SessionIndex:
    """An id index over entries (the last duplicate wins, as in pi) with pi's parent walks."""

    entries: list[Entry]
    by_id: dict[str, Entry] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {}
        for entry in self.entries:
            if isinstance(entry.get("id"), str):
                self.by_id[entry["id"]] = entry

    def get_entry(self, entry_id: str) -> Entry | None:
        return self.by_id.get(entry_id)

    def get_branch(self, leaf_id: str | None) -> list[Entry]:
        """Root-first path to ``leaf_id`` (pi's ``getBranch`` after ``branch(leaf_id)``)."""
        path: list[Entry] = []
        seen: set[str] = set()
        current = self.by_id.get(leaf_id) if leaf_id is not None else None
        while current is not None and current["id"] not in seen:
            seen.add(current["id"])
            path.append(current)
            parent = current.get("parentId")
            current = self.by_id.get(parent) if isinstance(parent, str) else None
        path.reverse()
        return path


def compaction_root() -> Path:
    return require_conformance() / "compaction"


def load_json(path: Path) -> Any:
    return loads(path.read_bytes())


def case_index(case: str) -> dict[str, Any] | None:
    index = load_json(compaction_root() / "index.json")
    for item in index["cases"]:
        if item["case"] == case:
            return item  # type: ignore[no-any-return]
    return None


def compaction_case_names() -> list[str]:
    """Case names of the compaction fixtures (a placeholder when the data is absent)."""
    from tests.conftest import conformance_root

    root = conformance_root()
    if root is None or not (root / "compaction" / "index.json").is_file():
        return ["<conformance data missing>"]
    index = loads((root / "compaction" / "index.json").read_bytes())
    return [c["case"] for c in index["cases"]]


def session_for_case(case: str) -> SessionIndex | None:
    item = case_index(case)
    if item is None or "skipped" in item:
        return None
    return SessionIndex(read_session_entries(require_conformance() / item["source"]))


# ---------------------------------------------------------------------------------------------------------
# Building paths by hand (pi's tests build entry lists the same way)


class PathBuilder:
    """Appends entries with ids ``e1, e2, …``, each the child of the previous one, with 1 s apart timestamps."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._n = 0

    def _base(self, kind: str) -> Entry:
        self._n += 1
        parent = self.entries[-1]["id"] if self.entries else None
        return {
            "type": kind,
            "id": f"e{self._n}",
            "parentId": parent,
            "timestamp": f"2025-01-01T00:00:{self._n % 60:02d}.000Z",
        }

    def add(self, kind: str, **fields: Any) -> Entry:
        entry = {**self._base(kind), **fields}
        self.entries.append(entry)
        return entry

    def message(self, message: dict[str, Any]) -> Entry:
        return self.add("message", message=message)

    def user(self, text: str) -> Entry:
        return self.message(user_msg(text))

    def assistant(self, text: str = "", calls: list[dict[str, Any]] | None = None, **extra: Any) -> Entry:
        return self.message(assistant_msg(text, calls, **extra))

    def tool_result(self, call_id: str, name: str, text: str, is_error: bool = False) -> Entry:
        return self.message(tool_result_msg(call_id, name, text, is_error))

    def compaction(self, summary: str, first_kept: str, tokens_before: int = 1000, **extra: Any) -> Entry:
        return self.add(
            "compaction", summary=summary, firstKeptEntryId=first_kept, tokensBefore=tokens_before, **extra
        )


def conversation(turns: int, size: int = 400) -> PathBuilder:
    """``turns`` user/assistant exchanges of about ``size`` characters each."""
    b = PathBuilder()
    for i in range(turns):
        b.user(f"question {i} " + "q" * size)
        b.assistant(f"answer {i} " + "a" * size)
    return b


def user_msg(text: str, timestamp: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def usage(total: int = 0) -> dict[str, Any]:
    return {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total}


def assistant_msg(
    text: str = "",
    calls: list[dict[str, Any]] | None = None,
    *,
    stop_reason: str | None = None,
    total_tokens: int = 0,
    error_message: str | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for call in calls or []:
        content.append({"type": "toolCall", **call})
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": usage(total_tokens),
        "stopReason": stop_reason or ("toolUse" if calls else "stop"),
        "timestamp": 2,
    }
    if error_message is not None:
        message["errorMessage"] = error_message
    return message


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def tool_result_msg(call_id: str, name: str, text: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "timestamp": 3,
    }


# ---------------------------------------------------------------------------------------------------------
# A scripted in-process model behind the summarizer seam


def run(coro_fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(lambda: coro_fn(*args, **kwargs))


Reply = str | dict[str, Any]


class ScriptedSummarizer:
    """Answers summary requests from a script and records them.

    ``replies`` maps a request kind (``history``, ``turn_prefix``, ``branch``) to a list of replies used in
    order, or is one list for any kind. A reply is the summary text, or a dict of assistant-message fields
    (e.g. ``{"stopReason": "error", "errorMessage": "boom"}``).
    """

    def __init__(
        self,
        replies: dict[str, list[Reply]] | list[Reply] | None = None,
        *,
        max_output_tokens: int = 0,
        supports_reasoning: bool = False,
        context_window: int | None = None,
    ) -> None:
        self.replies = replies if replies is not None else []
        self.name = "scripted"
        self.max_output_tokens = max_output_tokens
        self.supports_reasoning = supports_reasoning
        self.context_window = context_window
        self.requests: list[Any] = []

    def _next(self, kind: str) -> Reply:
        if isinstance(self.replies, dict):
            queue = self.replies.get(kind, [])
        else:
            queue = self.replies
        return queue.pop(0) if queue else f"{kind} summary {len(self.requests)}"

    async def summarize(self, request: Any) -> dict[str, Any]:
        self.requests.append(request)
        reply = self._next(request.kind)
        message = assistant_msg()
        message.update({"provider": "scripted", "model": "scripted-model"})
        if isinstance(reply, str):
            message["content"] = [{"type": "text", "text": reply}]
        else:
            message.update(reply)
        return message

    def by_kind(self, kind: str) -> list[Any]:
        return [r for r in self.requests if r.kind == kind]


# ---------------------------------------------------------------------------------------------------------
# A realistic coding session (goal, reads, edits, a failing test run, a fix)

REALISTIC_GOAL = "Add retry with exponential backoff to the HTTP client in src/net/client.py"
REALISTIC_MODIFIED = ["src/net/client.py", "src/net/retry.py", "tests/test_retry.py"]
REALISTIC_LAST_ERROR = "AssertionError: expected 3 attempts, got 4"


def realistic_messages() -> list[dict[str, Any]]:
    """Two turns of tool use with a read, edits, a new file, a test failure and a follow-up request."""
    return [
        user_msg(REALISTIC_GOAL + ". Keep the public API unchanged and do not add dependencies."),
        assistant_msg("I'll read the client first.", [call("t1", "read", path="src/net/client.py")]),
        tool_result_msg("t1", "read", "class Client:\n    def get(self, url): ..."),
        assistant_msg(
            "The retry logic belongs in a separate module because the client is already large.",
            [call("t2", "write", path="src/net/retry.py", content="def backoff(n): ...")],
        ),
        tool_result_msg("t2", "write", "Wrote 1 file"),
        assistant_msg("", [call("t3", "edit", path="src/net/client.py", oldText="a", newText="b")]),
        tool_result_msg("t3", "edit", "Successfully replaced text in src/net/client.py"),
        assistant_msg("", [call("t4", "read", path="src/net/config.py")]),
        tool_result_msg("t4", "read", "ENOENT: no such file or directory, open 'src/net/config.py'", True),
        assistant_msg("", [call("t5", "write", path="tests/test_retry.py", content="def test(): ...")]),
        tool_result_msg("t5", "write", "Wrote 1 file"),
        assistant_msg("", [call("t6", "bash", command="pytest tests/test_retry.py")]),
        tool_result_msg("t6", "bash", "F\n" + REALISTIC_LAST_ERROR + "\n1 failed", True),
        user_msg("The test counts the first call as an attempt; make max_attempts include it."),
        assistant_msg(
            "Understood, I'll change the loop bound.", [call("t7", "read", path="src/net/retry.py")]
        ),
        tool_result_msg("t7", "read", "def backoff(n): ..."),
    ]
