"""pi's harness ``Session`` and storage tests (packages/agent/test/harness/session.test.ts, storage.test.ts),
ported to ``SessionManager`` with ``persist_leaf=True`` (the harness writes ``leaf`` entries).

As pi runs session.test.ts twice, every session test runs on in-memory storage and on a JSONL file.
Harness → sessiontree names: ``moveTo(id)`` = ``branch(id)``, ``moveTo(null)`` = ``reset_leaf()``,
``moveTo(id, {summary})`` = ``branch_with_summary(id, summary)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import CorruptSessionError, SessionManager, SessionNotFoundError
from sessiontree.format.pi_json import loads
from sessiontree.storage import MemoryStore
from sessiontree.storage.session_dirs import read_header

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-4.1",
        "stopReason": "stop",
        "timestamp": 2,
    }


class Storage:
    """One session's storage, memory or JSONL, that can be opened again by a second manager."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.managers: list[SessionManager] = []

    def first(self) -> SessionManager:
        if self.kind == "memory":
            manager = SessionManager.in_memory("/w", persist_leaf=True)
        else:
            manager = SessionManager.create("/w", self.tmp_path / "sessions", persist_leaf=True)
        self.managers.append(manager)
        return manager

    def again(self, manager: SessionManager) -> SessionManager:
        """A second manager over the same storage (after the first released it)."""
        if self.kind == "memory":
            second = SessionManager(
                manager.store, cwd="/w", session_dir=None, persist=False, persist_leaf=True
            )
        else:
            path = manager.get_session_file()
            assert path is not None
            manager.close()
            second = SessionManager.open(path, persist_leaf=True)
        self.managers.append(second)
        return second


@pytest.fixture(params=["memory", "jsonl"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    s = Storage(request.param, tmp_path)
    yield s
    for manager in s.managers:
        manager.close()


def roles(manager: SessionManager) -> list[str]:
    return [m["role"] for m in manager.build_session_context().messages]


# -- session.test.ts --------------------------------------------------------------------------------------
def test_appends_messages_and_builds_context_in_order(storage: Storage) -> None:
    session = storage.first()
    session.append_message(user("hello"))
    session.append_message(assistant("hi"))
    assert roles(session) == ["user", "assistant"]


def test_tracks_model_and_thinking_level_changes(storage: Storage) -> None:
    session = storage.first()
    session.append_model_change("openai", "gpt-4.1")
    session.append_thinking_level_change("high")
    session.append_message(user("hello"))
    ctx = session.build_session_context()
    assert ctx.model == {"provider": "openai", "modelId": "gpt-4.1"}
    assert ctx.thinking_level == "high"


def test_supports_branching_by_moving_the_leaf_and_appending_a_new_branch(storage: Storage) -> None:
    session = storage.first()
    user1 = session.append_message(user("one"))
    old_assistant = session.append_message(assistant("first answer"))
    session.branch(user1)
    new_assistant = session.append_message(assistant("second answer"))
    branch = [e["id"] for e in session.get_branch()]
    assert user1 in branch and new_assistant in branch and old_assistant not in branch
    assert roles(session) == ["user", "assistant"]
    assert session.build_session_context().messages[1]["content"][0]["text"] == "second answer"


def test_supports_moving_the_leaf_to_root(storage: Storage) -> None:
    session = storage.first()
    session.append_message(user("one"))
    session.reset_leaf()
    assert session.get_leaf_id() is None
    assert session.build_session_context().messages == []


def test_reconstructs_compaction_summaries_in_context(storage: Storage) -> None:
    session = storage.first()
    session.append_message(user("one"))
    session.append_message(assistant("a1"))
    user2 = session.append_message(user("two"))
    session.append_message(assistant("a2"))
    session.append_compaction("summary", user2, 1234)
    session.append_message(user("three"))
    messages = session.build_session_context().messages
    assert len(messages) == 4
    assert messages[0] == {
        "role": "compactionSummary",
        "summary": "summary",
        "tokensBefore": 1234,
        "timestamp": messages[0]["timestamp"],
    }
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "user"]


def test_supports_moving_with_branch_summary_entries_in_context(storage: Storage) -> None:
    session = storage.first()
    user1 = session.append_message(user("one"))
    abandoned = session.append_message(assistant("a1"))
    summary_id = session.branch_with_summary(user1, "branch summary")
    assert isinstance(summary_id, str)
    entry = session.get_entry(summary_id)
    assert entry is not None
    assert (entry["type"], entry["parentId"]) == ("branch_summary", user1)
    # SPEC A2: fromId is the abandoned leaf; the harness writes the target (user1) there.
    assert entry["fromId"] == abandoned
    context = session.build_session_context().messages
    assert context[1]["role"] == "branchSummary"
    assert context[1]["summary"] == "branch summary"


def test_supports_custom_message_entries_in_context(storage: Storage) -> None:
    session = storage.first()
    session.append_custom_message_entry("note", "hello", True, {"a": 1})
    messages = session.build_session_context().messages
    assert len(messages) == 1
    assert {k: messages[0][k] for k in ("role", "customType", "content", "display", "details")} == {
        "role": "custom",
        "customType": "note",
        "content": "hello",
        "display": True,
        "details": {"a": 1},
    }


def test_supports_labels_and_session_info_entries_without_affecting_context(storage: Storage) -> None:
    session = storage.first()
    user1 = session.append_message(user("one"))
    label_id = session.append_label_change(user1, "bookmark")
    info_id = session.append_session_info("name")
    assert session.get_entry(label_id)["type"] == "label"  # type: ignore[index]
    assert session.get_entry(info_id)["type"] == "session_info"  # type: ignore[index]
    assert session.get_label(user1) == "bookmark"
    assert session.get_session_name() == "name"
    assert len(session.build_session_context().messages) == 1


def test_rejects_labels_for_missing_entries(storage: Storage) -> None:
    session = storage.first()
    with pytest.raises(SessionNotFoundError, match=r"^Entry missing not found$"):
        session.append_label_change("missing", "x")


def test_persists_leaf_changes_and_appended_entries_via_storage(storage: Storage) -> None:
    session = storage.first()
    user1 = session.append_message(user("one"))
    session.append_message(assistant("a1"))
    session.branch(user1)
    session.append_message(assistant("a2"))
    session.append_label_change(user1, "start")
    session.append_session_info("named")
    session.branch(user1)
    expected = session.build_session_context().to_dict()
    second = storage.again(session)
    assert second.get_leaf_id() == user1
    assert second.build_session_context().to_dict() == expected
    assert second.get_label(user1) == "start"
    assert second.get_session_name() == "named"
    if storage.kind == "jsonl":
        path = second.get_session_file()
        assert path is not None
        objects = [loads(x) for x in Path(path).read_bytes().split(b"\n") if x]
        assert objects[0]["type"] == "session" and objects[0]["version"] == 3
        assert any(o["type"] == "leaf" for o in objects)
        assert all(isinstance(o["id"], str) for o in objects[1:])


# -- storage.test.ts: in-memory storage -------------------------------------------------------------------
def _entry(entry_id: str, parent: str | None, kind: str = "message", **fields: Any) -> dict[str, Any]:
    base = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z"}
    if kind == "message":
        base["message"] = user(entry_id)
    return {**base, **fields}


def test_in_memory_storage_copies_initial_entries_and_persists_leaf_changes() -> None:
    initial = [_entry("root", None), _entry("child", "root")]
    store = MemoryStore(HEADER, initial)
    initial.append(_entry("late", "child"))
    initial[0]["id"] = "mutated"
    m = SessionManager(store, cwd="/w", session_dir=None, persist=False, persist_leaf=True)
    assert [e["id"] for e in m.get_entries()] == ["root", "child"]
    assert m.get_leaf_id() == "child"
    m.reset_leaf()
    last = m.get_entries()[-1]
    assert (last["type"], last["targetId"], last["parentId"]) == ("leaf", None, "child")
    assert SessionManager(store, cwd="/w", session_dir=None, persist=False).get_leaf_id() is None


def test_in_memory_storage_rejects_invalid_leaf_ids() -> None:
    m = SessionManager(MemoryStore(HEADER, [_entry("root", None)]), cwd="/w", session_dir=None, persist=False)
    with pytest.raises(SessionNotFoundError, match=r"^Entry missing not found$"):
        m.branch("missing")
    assert m.get_leaf_id() == "root"


def test_in_memory_storage_maintains_label_lookup() -> None:
    m = SessionManager(MemoryStore(HEADER, [_entry("root", None)]), cwd="/w", session_dir=None, persist=False)
    m.append_label_change("root", "set")
    assert m.get_label("root") == "set"
    m.append_label_change("root", None)
    assert m.get_label("root") is None


def test_in_memory_storage_walks_paths_to_root() -> None:
    m = SessionManager(
        MemoryStore(HEADER, [_entry("root", None), _entry("child", "root")]),
        cwd="/w",
        session_dir=None,
        persist=False,
    )
    assert [e["id"] for e in m.get_branch("child")] == ["root", "child"]
    m.reset_leaf()
    assert m.get_branch() == []


# -- storage.test.ts: JSONL storage -----------------------------------------------------------------------
def test_jsonl_storage_throws_for_missing_files_when_opening(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError) as info:
        SessionManager.open(tmp_path / "missing.jsonl", read_only=True)
    assert info.value.kind == "not_found"


def test_jsonl_storage_writes_the_header_with_the_first_entry(tmp_path: Path) -> None:
    m = SessionManager.create("/w", tmp_path, persist_leaf=True)
    path = m.get_session_file()
    assert path is not None
    assert (m.get_leaf_id(), m.get_entries()) == (None, [])
    # the harness writes the header on create; sessiontree writes nothing for a session without entries
    assert not Path(path).exists()
    entry_id = m.append_message(user("one"))
    objects = [loads(x) for x in Path(path).read_bytes().split(b"\n") if x]
    assert [o["type"] for o in objects] == ["session", "message"]
    assert objects[1]["id"] == entry_id
    m.close()


def test_jsonl_storage_throws_for_malformed_session_headers(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type":"message","id":"a","parentId":null}\n')
    with pytest.raises(CorruptSessionError, match="first line is not a valid session header"):
        SessionManager.open(path)


def test_jsonl_storage_skips_and_reports_malformed_entry_lines(tmp_path: Path) -> None:
    # the harness refuses the whole file (invalid_entry); sessiontree skips the line and reports it (SPEC A3)
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/w"}\n'
        '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}\n'
        "{ nope\n"
        '{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"y"}}\n'
    )
    m = SessionManager.open(path, read_only=True)
    assert [e["id"] for e in m.get_entries()] == ["a", "b"]
    assert [(p.kind, p.line) for p in m.problems] == [("bad_line", 3)]


def test_jsonl_storage_creates_and_reads_session_metadata_from_the_header(tmp_path: Path) -> None:
    m = SessionManager.create("/w", tmp_path, id="meta-1", parent_session="/parent.jsonl")
    m.append_message(user("one"))
    path = m.get_session_file()
    assert path is not None
    m.close()
    opened = SessionManager.open(path, read_only=True)
    header = opened.get_header()
    assert header is not None
    assert (
        opened.get_session_id(),
        opened.get_cwd(),
        opened.get_session_file(),
        header["parentSession"],
    ) == (
        "meta-1",
        "/w",
        path,
        "/parent.jsonl",
    )
    assert read_header(Path(path)) == header


def test_jsonl_storage_loads_existing_entries_and_reconstructs_leaf(tmp_path: Path) -> None:
    m = SessionManager.create("/w", tmp_path, persist_leaf=True)
    root = m.append_message(user("root"))
    child = m.append_message(assistant("child"))
    path = m.get_session_file()
    assert path is not None
    m.close()
    reopened = SessionManager.open(path, persist_leaf=True)
    assert reopened.get_leaf_id() == child
    reopened.branch(root)
    reopened.close()
    again = SessionManager.open(path, read_only=True)
    assert again.get_leaf_id() == root
    assert again.get_entries()[-1]["type"] == "leaf"
    assert [e["id"] for e in again.get_branch(child)] == [root, child]


def test_jsonl_storage_label_lookup_survives_a_reopen(tmp_path: Path) -> None:
    m = SessionManager.create("/w", tmp_path)
    root = m.append_message(user("root"))
    m.append_label_change(root, "set")
    path = m.get_session_file()
    assert path is not None
    m.close()
    reopened = SessionManager.open(path)
    assert reopened.get_label(root) == "set"
    reopened.append_label_change(root, None)
    reopened.close()
    assert SessionManager.open(path, read_only=True).get_label(root) is None


def test_session_metadata_is_read_from_the_first_line_only(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"only-header","timestamp":"t","cwd":"/w"}\n'
        + b"\xff\xfe not utf-8\n"
    )
    header = read_header(path)
    assert header is not None
    assert header["id"] == "only-header" and "parentSession" not in header
