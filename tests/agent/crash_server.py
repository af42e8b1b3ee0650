"""Fork server for the crash test (``python -m tests.agent.crash_server``): imports everything once, then for
each case read from stdin forks a child that runs a scripted multi-turn coding run and is SIGKILLed at a
random point, and a second child that re-opens the session, checks it and resumes the run.

One JSON object per line in and out. The server itself never runs an event loop (children do), so forking
stays safe; every child leaves with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio._backends._asyncio

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, ScriptedModel, ScriptedRequest, coding_tools, reply, tool_call
from sessiontree.agent.resume import INTERRUPTED_TEXT
from sessiontree.agent.scripted import Reply
from tests.agent.wire_checks import request_problems

PROMPT = "Set the project up: look around, write the result, enable debug, check the notes."


def _turns() -> list[Reply]:
    # Every tool result is the same however often earlier turns ran: the comparison after a resume is exact.
    # Small chunks give many events (kill points) per reply.
    options: dict[str, Any] = {"chunk": 6, "usage": (50, 10, 0, 0)}
    return [
        reply("Let me look around.", tool_call("read", {"path": "notes.txt"}, id="t0_read"),
              tool_call("ls", {"path": "docs"}, id="t0_ls"), **options),
        reply("Writing the result.", tool_call("write", {"path": "out/result.txt", "content": "v1\n"}, id="t1_write"),
              tool_call("bash", {"command": "echo built"}, id="t1_bash"), **options),
        reply(tool_call("edit", {"path": "config.ini", "edits": [{"oldText": "debug=false", "newText": "debug=true"}]},
                        id="t2_edit"), **options),
        reply("One last look.", tool_call("read", {"path": "notes.txt"}, id="t3_read"), **options),
        reply("All done: the result is written and debug is on.", **options),
    ]  # fmt: skip


def step(request: ScriptedRequest) -> Reply:
    """The reply for the turn the request is at (its count of assistant replies)."""
    turns = _turns()
    done = sum(1 for m in request.messages if m["role"] == "assistant")
    return turns[min(done, len(turns) - 1)]


def prepare(work: Path) -> None:
    (work / "docs").mkdir(parents=True, exist_ok=True)
    (work / "docs" / "guide.md").write_text("# Guide\n")
    (work / "notes.txt").write_text("remember: debug must be on\n")
    (work / "config.ini").write_text("[app]\ndebug=false\n")


def harness(manager: SessionManager, work: Path) -> AgentHarness:
    return AgentHarness(manager, ScriptedModel([step] * 40, id="crash-model"), tools=coding_tools(work))


def session_file(work: Path) -> str | None:
    files = glob.glob(str(work / "sessions" / "*.jsonl"))
    return files[0] if files else None


def normalized(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without what differs between runs by nature (timestamps, usage and its cost)."""
    out = []
    for message in messages:
        kept = {k: v for k, v in message.items() if k not in ("timestamp", "usage")}
        out.append(kept)
    return out


async def _run(work: Path, acks: int, kill_at: int | None) -> None:
    manager = SessionManager.create(str(work), work / "sessions", durability="batch")
    h = harness(manager, work)
    count = 0
    sent = 0

    def listener(event: dict[str, Any]) -> None:
        nonlocal count, sent
        count += 1
        if event["type"] == "save_point":  # durable now: acknowledge every entry written so far
            ids = [e["id"] for e in manager.get_entries()]
            os.write(acks, (json.dumps(ids[sent:]) + "\n").encode())
            sent = len(ids)
        if kill_at is not None and count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    h.subscribe(listener)
    await h.prompt(PROMPT)
    os.write(acks, (json.dumps({"events": count}) + "\n").encode())


async def _check(work: Path, acked: list[str]) -> dict[str, Any]:
    report: dict[str, Any] = {"problems": []}
    problems: list[str] = report["problems"]
    path = session_file(work)
    if path is None:
        if acked:
            problems.append("acknowledged entries but no session file")
        manager = SessionManager.create(str(work), work / "sessions", durability="batch")
    else:
        manager = SessionManager.open(path, durability="batch")
        report["load_problems"] = [p.kind for p in manager.problems]
    ids = {e["id"] for e in manager.get_entries()}
    missing = [i for i in acked if i not in ids]
    if missing:
        problems.append(f"acknowledged entries missing: {missing}")
    tools = [t.spec() for t in coding_tools(work)]
    for api, found in request_problems(manager.build_session_context().messages, tools).items():
        problems.extend(f"{api} before resume: {p}" for p in found)
    h = harness(manager, work)
    prompted = any(e["type"] == "message" and e["message"]["role"] == "user" for e in manager.get_entries())
    report["resumed"] = bool(prompted and await h.resume() is not None)
    if not prompted:
        await h.prompt(PROMPT)  # the prompt itself was never saved: the caller sends it again
    messages = manager.build_session_context().messages
    for api, found in request_problems(messages, tools).items():
        problems.extend(f"{api} after resume: {p}" for p in found)
    report["messages"] = normalized(messages)
    report["notes"] = sum(
        1 for m in messages
        if m["role"] == "toolResult" and m["content"][0].get("text") == INTERRUPTED_TEXT.format(name=m["toolName"])
    )  # fmt: skip
    manager.close()
    return report


def _fork(work: Callable[[int], None]) -> tuple[int, int]:
    """Fork a child running ``work(write_fd)``; returns (pid, read_fd)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        code = 0
        try:
            work(write_fd)
        except BaseException as exc:  # report, never return into the server's loop
            os.write(write_fd, (json.dumps({"error": repr(exc)}) + "\n").encode())
            code = 1
        os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def _read_all(fd: int) -> list[Any]:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    lines = b"".join(chunks).decode().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    work = Path(case["dir"])
    prepare(work)
    kill_at = case.get("event")
    started = time.monotonic()
    pid, fd = _fork(lambda w: anyio.run(_run, work, w, kill_at))
    if case.get("delay") is not None:
        time.sleep(case["delay"])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    records = _read_all(fd)
    _, status = os.waitpid(pid, 0)
    run_seconds = time.monotonic() - started
    acked = [i for r in records if isinstance(r, list) for i in r]
    errors = [r["error"] for r in records if isinstance(r, dict) and "error" in r]
    finished = next((r["events"] for r in records if isinstance(r, dict) and "events" in r), None)
    pid, fd = _fork(lambda w: os.write(w, json.dumps(anyio.run(_check, work, acked)).encode() + b"\n"))
    checked = _read_all(fd)
    os.waitpid(pid, 0)
    report = checked[0] if checked else {"problems": ["checker died"]}
    if "error" in report:
        report = {"problems": [f"checker: {report['error']}"]}
    report["problems"] = errors + report["problems"]
    report.update(killed=os.WIFSIGNALED(status), acked=len(acked), events=finished, run_seconds=run_seconds)
    return report


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        sys.stdout.write(json.dumps(run_case(case)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
