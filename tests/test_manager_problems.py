"""``manager.problems`` for damaged files (SPEC A3, B§2.9, §2.10, §16): bad middle lines, torn tails,
duplicate ids, dangling parents and parent cycles are reported with their line numbers, and none of them
crash or hang the manager.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sessiontree import SessionManager
from sessiontree.format.pi_json import loads

T = TypeVar("T")

HEADER = '{"type":"session","version":3,"id":"sess-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}\n'


def line(entry_id: str, parent: str | None, text: str = "x", second: int = 1) -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:{second:02d}.000Z",'
        f'"message":{{"role":"user","content":"{text}","timestamp":1}}}}\n'
    )


def write(tmp_path: Path, content: str, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(content)
    return path


def kinds(manager: SessionManager) -> list[tuple[str, int | None]]:
    return [(p.kind, p.line) for p in manager.problems]


def finishes(call: Callable[[], T], seconds: float = 60.0) -> T:
    """Run ``call`` in a thread and fail (instead of hanging the suite) if it never returns."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # re-raised in the test thread
            errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail("the call never returned (a parent cycle was walked forever)")
    if errors:
        raise errors[0]
    return result[0]


def test_a_healthy_file_has_no_problems(tmp_path: Path) -> None:
    m = SessionManager.open(write(tmp_path, HEADER + line("a", None) + line("b", "a")), read_only=True)
    assert m.problems == []


def test_bad_middle_line_is_reported_with_its_line_number_and_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", None) + "{not json\n" + line("b", "a") + line("c", "b"))
    m = SessionManager.open(path, read_only=True)
    assert kinds(m) == [("bad_line", 3)]
    problem = m.problems[0]
    assert str(path) in problem.message and "line 3" in problem.message
    assert problem.to_dict() == {"kind": "bad_line", "line": 3, "message": problem.message}
    # the lines after it keep their parents: the chain is whole
    assert [e["id"] for e in m.get_branch()] == ["a", "b", "c"]
    assert len(m.build_session_context().messages) == 3


def test_torn_tail_is_reported_then_kept_aside_at_the_first_write(tmp_path: Path) -> None:
    torn = line("c", "b")[:-30]
    path = write(tmp_path, HEADER + line("a", None) + line("b", "a") + torn)
    m = SessionManager.open(path)
    assert kinds(m) == [("torn_tail", 4)]
    assert m.get_leaf_id() == "b"
    assert path.read_text().endswith(torn)  # nothing is changed before the first write
    new = m.append_message({"role": "user", "content": "after the tear", "timestamp": 2})
    assert ("torn_tail_moved", 4) in kinds(m)
    aside = tmp_path / "s.jsonl.torn-1"
    assert aside.read_text() == torn
    objects = [loads(raw) for raw in path.read_bytes().split(b"\n") if raw]
    assert [o["id"] for o in objects] == ["sess-1", "a", "b", new]
    assert objects[-1]["parentId"] == "b"
    m.close()
    again = SessionManager.open(path, read_only=True)
    assert again.problems == []
    assert [e["id"] for e in again.get_branch()] == ["a", "b", new]


def test_a_last_line_without_newline_is_complete_and_kept(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", None) + line("b", "a").rstrip("\n"))
    m = SessionManager.open(path)
    assert [p.kind for p in m.problems] == ["missing_newline"]
    new = m.append_message({"role": "user", "content": "next", "timestamp": 2})
    m.close()
    again = SessionManager.open(path, read_only=True)
    assert [e["id"] for e in again.get_entries()] == ["a", "b", new]
    assert again.problems == []


def test_duplicate_id_is_reported_and_the_last_occurrence_wins(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", None, "first") + line("b", "a") + line("a", None, "second"))
    m = SessionManager.open(path, read_only=True)
    assert kinds(m) == [("duplicate_id", 4)]
    assert m.problems[0].entry_id == "a"
    assert m.get_entry("a")["message"]["content"] == "second"  # type: ignore[index]
    assert len(m.get_entries()) == 3


def test_new_ids_never_reuse_an_id_in_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", None) + line("b", "a"))
    candidates = ["a", "b", "c"]

    def first_free(used: Any) -> str:
        return next(c for c in candidates if c not in used)

    m = SessionManager.open(path, id_factory=first_free)
    assert m.append_message({"role": "user", "content": "n", "timestamp": 1}) == "c"
    m.close()


def test_dangling_parent_is_reported_and_the_entry_becomes_a_root(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", None) + line("b", "gone") + line("c", "b"))
    m = SessionManager.open(path, read_only=True)
    assert kinds(m) == [("dangling_parent", 3)]
    assert m.problems[0].entry_id == "b"
    assert [n.id for n in m.get_tree()] == ["a", "b"]
    assert [e["id"] for e in m.get_branch()] == ["b", "c"]
    assert len(m.build_session_context().messages) == 2


def test_a_parent_id_that_is_not_a_string_is_reported(tmp_path: Path) -> None:
    bad = line("b", None).replace('"parentId":null', '"parentId":42')
    m = SessionManager.open(write(tmp_path, HEADER + line("a", None) + bad), read_only=True)
    assert kinds(m) == [("bad_parent", 3)]
    assert [n.id for n in m.get_tree()] == ["a", "b"]


def test_a_second_header_in_the_middle_is_reported(tmp_path: Path) -> None:
    m = SessionManager.open(
        write(tmp_path, HEADER + line("a", None) + HEADER + line("b", "a")), read_only=True
    )
    assert kinds(m) == [("extra_header", 3)]
    assert m.get_session_id() == "sess-1"
    assert [e["id"] for e in m.get_branch()] == ["a", "b"]


def test_self_parented_entry_does_not_hang_and_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("r", None) + line("s", "s", "self") + line("k", "s"))
    m = SessionManager.open(path, read_only=True)
    assert finishes(lambda: [(p.kind, p.entry_id) for p in m.problems]) == [("cycle", "s")]
    assert finishes(lambda: [e["id"] for e in m.get_branch()]) == ["s", "k"]
    assert finishes(lambda: len(m.build_session_context().messages)) == 2
    roots = finishes(m.get_tree)
    assert [n.id for n in roots] == ["r", "s"]  # pi's getTree treats parentId == id as a root
    assert [c.id for c in roots[1].children] == ["k"]


def test_two_cycle_does_not_hang_and_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("r", None) + line("a", "b") + line("b", "a") + line("z", "r"))
    m = SessionManager.open(path, read_only=True)
    assert finishes(lambda: [(p.kind, p.line) for p in m.problems]) == [("cycle", 3)]
    assert finishes(lambda: [e["id"] for e in m.get_branch("b")]) == ["a", "b"]
    assert finishes(lambda: len(m.build_session_context("a").messages)) == 2
    roots = finishes(m.get_tree)
    ids = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        ids.add(node.id)
        stack.extend(node.children)
    assert ids == {"r", "a", "b", "z"}  # every entry is still listed


def test_appending_under_a_cycle_does_not_hang(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", "b") + line("b", "a"))
    m = SessionManager.open(path)
    new = finishes(lambda: m.append_message({"role": "user", "content": "n", "timestamp": 1}))
    assert finishes(lambda: [e["id"] for e in m.get_branch()]) == ["a", "b", new]
    m.close()


def test_one_cycle_is_reported_once_whichever_entry_the_walk_starts_from(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + line("a", "b") + line("b", "a"))
    m = SessionManager.open(path, read_only=True)
    m.get_branch("b")
    m.get_tree()
    assert [p.kind for p in m.problems] == ["cycle"]
