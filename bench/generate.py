"""Deterministic generator of large, realistic pi v3 session files for the benchmarks.

A seeded ``random.Random`` drives coding turns (user → assistant with thinking and read/write/edit/bash tool
calls → tool results → final reply, with usage and cost), settings changes, labels, session names, branches
(some with branch summaries) and a compaction every few thousand entries on the main path. Lines are written
with ``sessiontree.format.pi_json.dumps``, so the bytes are what pi would write. Files are cached under
``bench/.data`` keyed by size, seed, variant and generator version. It never touches real sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from sessiontree.format.ids import iso_from_ms
from sessiontree.format.pi_json import dumps
from sessiontree.tree.context import session_entry_to_context_messages

__all__ = [
    "DATA_DIR",
    "GENERATOR_VERSION",
    "VARIANTS",
    "GeneratedSession",
    "MessageFactory",
    "ensure_session",
    "generate_session",
    "iter_entries",
    "realistic_messages",
]

GENERATOR_VERSION = 2
"""Bump when the output changes, so cached files are regenerated."""

VARIANTS = ("pi", "rt", "nc")
"""``pi``: compactions as pi writes them (``firstKeptEntryId`` only); ``rt``: compactions that also store
``retainedTail``, as sessiontree writes them; ``nc``: no compactions at all (the worst case for context
building and for preparing a compaction)."""

DATA_DIR = Path(__file__).resolve().parent / ".data"

Entry = dict[str, Any]
Message = dict[str, Any]

_START_MS = 1_751_954_400_000  # 2025-07-08T06:00:00.000Z
_CWD = "/home/dev/work/pi-mono"

# (api, provider, model, $ per million tokens: input, output, cache read, cache write)
_MODELS: tuple[tuple[str, str, str, float, float, float, float], ...] = (
    ("anthropic-messages", "anthropic", "claude-sonnet-4-5", 3.0, 15.0, 0.3, 3.75),
    ("anthropic-messages", "anthropic", "claude-opus-4-5", 5.0, 25.0, 0.5, 6.25),
    ("openai-responses", "openai", "gpt-5.1-codex", 1.25, 10.0, 0.125, 0.0),
    ("google-generative-ai", "google", "gemini-2.5-pro", 1.25, 10.0, 0.31, 0.0),
)
_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
_LABELS = (
    "checkpoint",
    "before refactor",
    "green tests ✅",
    "v2 start",
    "bisect here",
    "重构之前",
    "good state",
)
_SESSION_NAMES = ("Port the selectors", "Fix flaky session tests", "Compaction work 🧹", "调试 compaction")

_WORD_TEXT = (
    "the session tree entry parent leaf branch compaction summary context message tool call result file "
    "function test error fix update read write edit path line config model token usage cost thinking label "
    "index cache offset parser writer reader stream request response provider retry timeout buffer lock "
    "append open close build render selector theme component state handler event queue async await promise "
    "type interface class method return value string number array object key field option default check "
    "this that with from into when then after before because so and or not only also still now just "
    "should would could will can must need want try use make keep move add remove rename split merge "
    "failing passing flaky slow fast large small empty missing broken stale valid invalid unknown "
    "we it they you I let us see look find show run start stop wait handle ignore skip"
)
_WORDS = tuple(_WORD_TEXT.split())
_NON_ASCII = ("修复", "会话", "ünïcödé", "naïve", "🎉", "✅", "→", "日本語", "한국어", "…", "—", "±")
_DIRS = (
    "packages/coding-agent/src/core",
    "packages/coding-agent/src/modes/interactive/components",
    "packages/coding-agent/src/core/compaction",
    "packages/ai/src/providers",
    "packages/agent/src/harness",
    "packages/tui/src/components",
    "packages/coding-agent/test",
    "packages/web-ui/src/tools",
    "docs",
    "scripts",
)
_STEMS = (
    "session-manager",
    "compaction",
    "branch-summarization",
    "messages",
    "agent-session",
    "theme",
    "oauth-selector",
    "user-message-selector",
    "tree-selector",
    "footer",
    "editor",
    "anthropic",
    "openai-responses",
    "google",
    "utils",
    "settings-manager",
    "model-registry",
    "bash-executor",
    "jsonl-storage",
    "index",
)
_EXTS = (".ts", ".ts", ".ts", ".tsx", ".md", ".json", ".test.ts")
_COMMANDS = (
    "npm run check",
    "npm test -- --run session-manager",
    "git status",
    "git diff --stat",
    "ls -la packages/coding-agent/src",
    "rg -n 'getTree' packages",
    "npx tsc --noEmit -p packages/coding-agent",
    "node scripts/bench.mjs --entries 50000",
    "cat package.json | head -40",
    "git log --oneline -15",
)
_CODE = (
    'import {{ {w} }} from "./{w2}";',
    "export function {w}{W2}({w3}: {T}): {T2} {{",
    "  const {w} = {w2}.{w3}({w4});",
    "  if (!{w}) return undefined;",
    "  for (const {w} of this.{w2}s) {{",
    "    this.{w}.set({w2}.id, {w3});",
    "  }}",
    "}}",
    "  // {s}",
    "  return {{ {w}, {w2}: {w3}.length }};",
    "  await this.{w}({w2}, {{ {w3}: true }});",
    "  throw new Error(`{s}`);",
    "",
    "export interface {T} {{",
    "  {w}: {T2};",
    "  {w2}?: string;",
)
_TYPES = (
    "string",
    "number",
    "SessionEntry",
    "TreeNode",
    "Message",
    "boolean",
    "Model",
    "ToolCall",
    "unknown",
)


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


_B62 = string.ascii_letters + string.digits


class MessageFactory:
    """Builds realistic pi messages (user, assistant, toolResult, bashExecution) from one seeded stream."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.model = _MODELS[0]
        self.files = [f"{d}/{s}{e}" for d in _DIRS for s in _STEMS for e in _EXTS[:3]]
        self.files += [f"{d}/{s}{e}" for d in _DIRS[:4] for s in _STEMS for e in _EXTS[3:]]

    # -- text ------------------------------------------------------------------------------------------
    def words(self, n: int) -> str:
        rng = self.rng
        out = rng.choices(_WORDS, k=max(1, n))
        if rng.random() < 0.15:
            out[rng.randrange(len(out))] = rng.choice(_NON_ASCII)
        return " ".join(out)

    def prose(self, chars: int) -> str:
        """Sentences of roughly ``chars`` characters, with an occasional path or code span."""
        rng = self.rng
        parts: list[str] = []
        total = 0
        while total < chars:
            sentence = self.words(rng.randint(5, 16))
            if rng.random() < 0.2:
                sentence += f" in `{rng.choice(self.files)}`"
            sentence = sentence[0].upper() + sentence[1:] + rng.choice(".....?:")
            parts.append(sentence)
            total += len(sentence) + 1
            if rng.random() < 0.12:
                parts.append("\n\n")
        return " ".join(parts).replace(" \n\n ", "\n\n")

    def code(self, lines: int, first: int = 1) -> str:
        rng = self.rng
        out: list[str] = []
        for n in range(first, first + lines):
            w = rng.choices(_WORDS, k=4)
            text = rng.choice(_CODE).format(
                w=w[0],
                w2=w[1],
                w3=w[2],
                w4=w[3],
                W2=w[1].capitalize(),
                T=rng.choice(_TYPES),
                T2=rng.choice(_TYPES),
                s=self.words(6),
            )
            out.append(f"{n}\t{text}")
        return "\n".join(out)

    def path(self) -> str:
        return self.rng.choice(self.files)

    def tool_call_id(self) -> str:
        rng = self.rng
        if self.model[1] == "anthropic":
            return "toolu_" + "".join(rng.choices(_B62, k=24))
        if self.model[1] == "openai":
            return "call_" + "".join(rng.choices(_B62, k=24)) + "|fc_" + _hex(rng, 48)
        return "".join(rng.choices(_B62, k=16))

    # -- messages --------------------------------------------------------------------------------------
    def user(self, ts: int) -> Message:
        rng = self.rng
        r = rng.random()
        chars = rng.randint(15, 200) if r < 0.88 else rng.randint(300, 1500)
        text = self.prose(chars)
        if r > 0.97:  # a pasted stack trace or log
            text += "\n\n```\n" + self.code(rng.randint(5, 30)) + "\n```"
        content: Any = text if rng.random() < 0.35 else [{"type": "text", "text": text}]
        return {"role": "user", "content": content, "timestamp": ts}

    def bash_execution(self, ts: int) -> Message:
        rng = self.rng
        msg: Message = {
            "role": "bashExecution",
            "command": rng.choice(_COMMANDS),
            "output": self.code(rng.randint(1, 25)),
            "exitCode": rng.choice((0, 0, 0, 1)),
            "cancelled": False,
            "truncated": False,
            "timestamp": ts,
        }
        if rng.random() < 0.3:
            msg["excludeFromContext"] = True
        return msg

    def tool_call(self) -> dict[str, Any]:
        rng = self.rng
        name = rng.choices(("read", "bash", "edit", "write", "grep", "ls"), weights=(40, 25, 20, 7, 5, 3))[0]
        args: dict[str, Any]
        if name == "read":
            args = {"path": self.path()}
            if rng.random() < 0.3:
                args["offset"] = rng.randint(1, 900)
                args["limit"] = rng.choice((50, 100, 200))
        elif name == "bash":
            args = {"command": rng.choice(_COMMANDS)}
            if rng.random() < 0.3:
                args["timeout"] = rng.choice((30, 60, 120))
        elif name == "edit":
            edits = [
                {"oldText": self.code(rng.randint(1, 3)), "newText": self.code(rng.randint(1, 4))}
                for _ in range(1 if rng.random() < 0.85 else 2)
            ]
            args = {"path": self.path(), "edits": edits}
        elif name == "write":
            args = {"path": self.path(), "content": self.code(rng.randint(3, 12))}
        elif name == "grep":
            args = {"pattern": rng.choice(_WORDS), "path": rng.choice(_DIRS)}
        else:
            args = {"path": rng.choice(_DIRS)}
        return {"type": "toolCall", "id": self.tool_call_id(), "name": name, "arguments": args}

    def assistant(self, ts: int, *, tool_calls: int, thinking: bool) -> Message:
        rng = self.rng
        api, provider, model, p_in, p_out, p_read, p_write = self.model
        content: list[dict[str, Any]] = []
        if thinking:
            block: dict[str, Any] = {"type": "thinking", "thinking": self.prose(rng.randint(20, 150))}
            if provider == "anthropic":
                block["thinkingSignature"] = _hex(rng, rng.choice((40, 64, 96)))
            content.append(block)
        if not tool_calls or rng.random() < 0.5:
            content.append({"type": "text", "text": self.prose(rng.randint(20, 100 if tool_calls else 260))})
        calls = [self.tool_call() for _ in range(tool_calls)]
        content.extend(calls)
        inp, out = rng.randint(3, 40_000), rng.randint(20, 3_500)
        c_read = rng.choice((0, rng.randint(1_000, 120_000)))
        c_write = rng.choice((0, 0, rng.randint(100, 15_000)))
        cost = {  # pi's arithmetic: (price per million / 1e6) * tokens, so zero counts give 0.0
            "input": (p_in / 1_000_000) * inp,
            "output": (p_out / 1_000_000) * out,
            "cacheRead": (p_read / 1_000_000) * c_read,
            "cacheWrite": (p_write / 1_000_000) * c_write,
        }
        cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
        msg: Message = {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
        }
        if provider != "anthropic" and rng.random() < 0.7:
            msg["responseId"] = "resp_" + _hex(rng, 24)
        msg["usage"] = {
            "input": inp,
            "output": out,
            "cacheRead": c_read,
            "cacheWrite": c_write,
            "totalTokens": inp + out + c_read + c_write,
            "cost": cost,
        }
        msg["stopReason"] = "toolUse" if tool_calls else "stop"
        msg["timestamp"] = ts
        if not tool_calls and rng.random() < 0.005:
            msg["stopReason"] = rng.choice(("error", "aborted"))
            msg["errorMessage"] = (
                "Request was aborted" if msg["stopReason"] == "aborted" else "overloaded_error"
            )
        return msg

    def tool_result(self, call: dict[str, Any], ts: int) -> Message:
        rng = self.rng
        name = call["name"]
        args = call["arguments"]
        details: dict[str, Any] | None = None
        is_error = rng.random() < 0.04
        if is_error:
            text = rng.choice(
                ("ENOENT: no such file or directory", "Command exited with code 1", "Timed out")
            )
            text += "\n" + self.prose(rng.randint(20, 200))
        elif name == "read":
            r = rng.random()
            lines = rng.randint(2, 10) if r < 0.8 else rng.randint(10, 40)
            text = self.code(lines, args.get("offset", 1))
        elif name == "bash":
            text = self.code(rng.randint(0, 10)) if rng.random() < 0.9 else self.code(rng.randint(15, 45))
            if rng.random() < 0.05:
                details = {
                    "truncation": {"truncated": True, "totalLines": rng.randint(2_000, 9_000)},
                    "fullOutputPath": f"/tmp/pi-bash-{_hex(rng, 8)}.log",
                }
        elif name == "edit":
            text = f"Successfully replaced text in {args['path']}."
            edit = args["edits"][0]
            details = {
                "diff": "- "
                + edit["oldText"].replace("\n", "\n- ")
                + "\n+ "
                + edit["newText"].replace("\n", "\n+ "),
                "firstChangedLine": rng.randint(1, 800),
            }
        elif name == "write":
            text = f"Successfully wrote {len(args['content'])} bytes to {args['path']}"
        else:
            text = "\n".join(self.path() for _ in range(rng.randint(1, 6)))
        msg: Message = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": name,
            "content": [{"type": "text", "text": text}],
        }
        if details is not None:
            msg["details"] = details
        msg["isError"] = is_error
        msg["timestamp"] = ts
        return msg


def realistic_messages(count: int, seed: int = 7) -> list[Message]:
    """``count`` messages in turn order (user, assistant tool calls, tool results, replies) for append tests."""
    rng = random.Random(seed)
    factory = MessageFactory(rng)
    ts = _START_MS
    out: list[Message] = []
    while len(out) < count:
        ts += 30_000
        out.append(factory.user(ts))
        for step in range(rng.randint(1, 5)):
            calls = 0 if step == 0 and rng.random() < 0.2 else rng.choice((1, 1, 1, 2, 3))
            ts += 5_000
            reply = factory.assistant(ts, tool_calls=calls, thinking=rng.random() < 0.4)
            out.append(reply)
            for block in reply["content"]:
                if block["type"] == "toolCall":
                    ts += 700
                    out.append(factory.tool_result(block, ts))
            if not calls:
                break
    return out[:count]


@dataclass
class _PathItem:
    entry_id: str
    kind: str  # entry type, or "turn" for a user message that starts a turn
    entry: Entry | None  # kept for recent items only (retained tails)


@dataclass
class _Stats:
    types: Counter[str] = field(default_factory=Counter)
    roles: Counter[str] = field(default_factory=Counter)
    branches: int = 0
    branch_summaries: int = 0
    compactions: int = 0


class _SessionBuilder:
    """Walks a session forward: the current path, branching, compactions. Yields entries in file order."""

    def __init__(self, seed: int, variant: str, limit: int) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
        self.rng = random.Random(seed)
        self.limit = limit
        self.factory = MessageFactory(self.rng)
        self.retained_tail = variant == "rt"
        self.compactions = variant != "nc"
        self.ids: set[str] = set()
        self.ms = _START_MS
        self.path: list[_PathItem] = []
        self.last_compaction = -1  # index on ``path``
        self.stats = _Stats()

    def new_id(self) -> str:
        while True:
            candidate = _hex(self.rng, 8)
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def tick(self, low_ms: int, high_ms: int) -> int:
        self.ms += self.rng.randint(low_ms, high_ms)
        return self.ms

    def header(self) -> Entry:
        rng = self.rng
        sid = (
            f"{_START_MS:012x}"[:8]
            + "-"
            + f"{_START_MS:012x}"[8:]
            + "-7"
            + _hex(rng, 3)
            + "-a"
            + _hex(rng, 3)
        )
        return {
            "type": "session",
            "version": 3,
            "id": sid + "-" + _hex(rng, 12),
            "timestamp": iso_from_ms(_START_MS),
            "cwd": _CWD,
        }

    def entry(self, kind: str, fields: dict[str, Any], *, turn: bool = False) -> Entry:
        parent = self.path[-1].entry_id if self.path else None
        entry_id = self.new_id()
        if kind == "custom":  # the coding agent writes the id fields last for this type
            entry: Entry = {"type": kind, **fields, "id": entry_id, "parentId": parent}
            entry["timestamp"] = iso_from_ms(self.ms)
        else:
            entry = {
                "type": kind,
                "id": entry_id,
                "parentId": parent,
                "timestamp": iso_from_ms(self.ms),
                **fields,
            }
        self.path.append(_PathItem(entry_id, "turn" if turn else kind, entry))
        if len(self.path) > 600:
            self.path[-601].entry = None
        self.stats.types[kind] += 1
        if kind == "message":
            self.stats.roles[fields["message"]["role"]] += 1
        return entry

    def message(self, msg: Message, *, turn: bool = False) -> Entry:
        return self.entry("message", {"message": msg}, turn=turn)

    # -- the session -----------------------------------------------------------------------------------
    def entries(self) -> Iterator[Entry]:
        """Entries forever, in file order; the caller stops when it has enough."""
        rng = self.rng
        factory = self.factory
        yield self.entry("model_change", {"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
        yield self.entry("thinking_level_change", {"thinkingLevel": "medium"})
        written = 2
        next_compaction = rng.randint(1_500, 4_000)
        turns = 0
        while True:
            # between turns: settings, labels, names, extension entries, branches, compactions
            if turns == 3 or rng.random() < 0.0015:
                yield self.entry("session_info", {"name": rng.choice(_SESSION_NAMES)})
            if rng.random() < 0.02:
                factory.model = rng.choice(_MODELS)
                yield self.entry("model_change", {"provider": factory.model[1], "modelId": factory.model[2]})
            if rng.random() < 0.025:
                yield self.entry("thinking_level_change", {"thinkingLevel": rng.choice(_THINKING_LEVELS)})
            if rng.random() < 0.04 and self.path:
                target = self.path[max(0, len(self.path) - rng.randint(1, 40))].entry_id
                fields: dict[str, Any] = {"targetId": target}
                if rng.random() < 0.9:
                    fields["label"] = rng.choice(_LABELS)
                yield self.entry("label", fields)
            if rng.random() < 0.01:
                yield self.entry("custom", {"customType": "todo-state", "data": {"open": rng.randint(0, 9)}})
            if rng.random() < 0.004:
                yield self.entry(
                    "custom_message",
                    {
                        "customType": "reminder",
                        "content": self.factory.prose(rng.randint(40, 300)),
                        "display": True,
                    },
                )
            if turns > 4 and rng.random() < 0.03:
                yield from self.branch()
            written = sum(self.stats.types.values())
            if (
                self.compactions
                and written >= next_compaction
                and len(self.path) - self.last_compaction > 80
                and self.limit - written >= 100  # a file never ends in a compaction
            ):
                yield self.compaction()
                next_compaction = written + rng.randint(1_500, 3_500)
            yield from self.turn()
            turns += 1

    def turn(self) -> Iterator[Entry]:
        rng = self.rng
        factory = self.factory
        if rng.random() < 0.03:
            yield self.message(factory.bash_execution(self.tick(5_000, 120_000)), turn=True)
            return
        yield self.message(factory.user(self.tick(10_000, 600_000)), turn=True)
        for step in range(rng.choices((1, 2, 3, 4, 5, 6, 8), weights=(10, 14, 18, 18, 14, 10, 6))[0]):
            calls = 0 if step == 0 and rng.random() < 0.15 else rng.choices((1, 2, 3), weights=(80, 15, 5))[0]
            reply = factory.assistant(self.tick(2_000, 60_000), tool_calls=calls, thinking=rng.random() < 0.3)
            yield self.message(reply)
            for block in reply["content"]:
                if block["type"] == "toolCall":
                    yield self.message(factory.tool_result(block, self.tick(10, 5_000)))
            if not calls:
                return
        final = factory.assistant(self.tick(2_000, 60_000), tool_calls=0, thinking=rng.random() < 0.3)
        yield self.message(final)

    def turn_starts(self, after: int) -> list[int]:
        return [i for i in range(after + 1, len(self.path)) if self.path[i].kind == "turn"]

    def branch(self) -> Iterator[Entry]:
        """Go back to the parent of a recent user message (after the last compaction) and continue there."""
        rng = self.rng
        lookback = max(self.last_compaction, len(self.path) - 120)
        starts = self.turn_starts(lookback)
        if len(starts) < 2:
            return
        start = rng.choice(starts[-10:])
        abandoned = self.path[-1].entry_id
        del self.path[start:]
        self.stats.branches += 1
        if rng.random() < 0.5:
            self.tick(20_000, 90_000)
            readable = [self.factory.path() for _ in range(rng.randint(1, 4))]
            yield self.entry(
                "branch_summary",
                {
                    "fromId": abandoned,
                    "summary": self.summary_text(rng.randint(300, 1_200), branch=True),
                    "details": {"readFiles": readable, "modifiedFiles": readable[: rng.randint(0, 2)]},
                    "fromHook": False,
                },
            )
            self.stats.branch_summaries += 1

    def summary_text(self, chars: int, *, branch: bool) -> str:
        prose = self.factory.prose
        rng = self.rng
        if branch:
            heads = ("## Goal", "## Progress", "## Key Learnings", "## Why Abandoned")
        else:
            heads = (
                "## Goal",
                "## Constraints & Preferences",
                "## Progress",
                "## Key Decisions",
                "## Next Steps",
            )
        part = max(40, chars // len(heads))
        body = [f"{h}\n{prose(rng.randint(part // 2, part))}" for h in heads]
        return "\n\n".join(body)

    def compaction(self) -> Entry:
        rng = self.rng
        starts = self.turn_starts(self.last_compaction)
        # the kept region begins at a user message a few dozen entries back
        candidates = [i for i in starts if len(self.path) - i <= 60] or starts[-1:]
        first_kept = candidates[0]
        self.tick(30_000, 120_000)
        read = sorted({self.factory.path() for _ in range(rng.randint(3, 15))})
        modified = sorted({self.factory.path() for _ in range(rng.randint(1, 8))})
        fields: dict[str, Any] = {
            "summary": self.summary_text(rng.randint(1_200, 3_500), branch=False),
            "firstKeptEntryId": self.path[first_kept].entry_id,
            "tokensBefore": rng.randint(140_000, 195_000),
        }
        if self.retained_tail:
            tail: list[Message] = []
            for item in self.path[first_kept:]:
                if item.entry is not None and item.entry["type"] != "compaction":
                    tail.extend(session_entry_to_context_messages(item.entry))
            fields["retainedTail"] = tail
        fields["details"] = {"readFiles": read, "modifiedFiles": modified}
        fields["fromHook"] = False
        entry = self.entry("compaction", fields)
        self.last_compaction = len(self.path) - 1
        self.stats.compactions += 1
        return entry


def iter_entries(entries: int, seed: int = 1, *, variant: str = "pi") -> Iterator[Entry]:
    """The header, then exactly ``entries`` entries of a generated session (never ending in a compaction)."""
    builder = _SessionBuilder(seed, variant, entries)
    yield builder.header()
    yield from islice(builder.entries(), entries)


@dataclass
class GeneratedSession:
    """A generated file and what is in it."""

    path: Path
    entries: int
    seed: int
    variant: str
    bytes: int
    main_path_length: int
    types: dict[str, int]
    roles: dict[str, int]
    branches: int
    branch_summaries: int
    compactions: int

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["path"] = str(self.path)
        return out


def generate_session(path: Path, entries: int, seed: int = 1, *, variant: str = "pi") -> GeneratedSession:
    """Write a session of exactly ``entries`` entries (plus the header) to ``path``, atomically."""
    builder = _SessionBuilder(seed, variant, entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    size = 0
    produced = 0
    with open(tmp, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as out:
        line = dumps(builder.header()) + "\n"
        out.write(line)
        size += len(line.encode("utf-8"))
        for entry in islice(builder.entries(), entries):
            line = dumps(entry) + "\n"
            out.write(line)
            size += len(line.encode("utf-8"))
            produced += 1
    os.replace(tmp, path)
    stats = builder.stats
    return GeneratedSession(
        path=path,
        entries=produced,
        seed=seed,
        variant=variant,
        bytes=size,
        main_path_length=len(builder.path),
        types=dict(sorted(stats.types.items())),
        roles=dict(sorted(stats.roles.items())),
        branches=stats.branches,
        branch_summaries=stats.branch_summaries,
        compactions=stats.compactions,
    )


def cache_name(entries: int, seed: int, variant: str) -> str:
    """The cache file name for a size, seed and variant."""
    return f"session-{entries}-s{seed}-{variant}-g{GENERATOR_VERSION}.jsonl"


def ensure_session(
    entries: int, seed: int = 1, *, variant: str = "pi", data_dir: Path = DATA_DIR
) -> GeneratedSession:
    """The cached session for these parameters, generated first when missing."""
    path = data_dir / cache_name(entries, seed, variant)
    meta = path.with_name(path.name + ".meta.json")
    if path.is_file() and meta.is_file():
        try:
            data = json.loads(meta.read_text("utf-8"))
            if data.get("bytes") == path.stat().st_size:
                data["path"] = path
                return GeneratedSession(**data)
        except (ValueError, TypeError):  # an unreadable or outdated description: generate again
            pass
    info = generate_session(path, entries, seed, variant=variant)
    meta.write_text(json.dumps(info.to_dict(), indent=1) + "\n", "utf-8")
    return info


def main(argv: list[str] | None = None) -> int:
    """Command line: generate (or find in the cache) one session and print its statistics as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000, help="number of entries after the header")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--variant",
        choices=VARIANTS,
        default="pi",
        help="pi: compactions as pi writes them; rt: compactions also store retainedTail; nc: no compactions",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="cache directory (default bench/.data)"
    )
    parser.add_argument("--out", type=Path, help="write here instead of the cache (always regenerates)")
    args = parser.parse_args(argv)
    if args.out is not None:
        info = generate_session(args.out, args.entries, args.seed, variant=args.variant)
    else:
        info = ensure_session(args.entries, args.seed, variant=args.variant, data_dir=args.data_dir)
    json.dump(info.to_dict(), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
