"""The context cache: a re-opened file's context at the same path comes back whole, exactly as built.

Each test lowers ``index_cache.MIN_BYTES`` so small real files are cached, and compares with the same file
opened with the caches turned off (``SESSIONTREE_INDEX_CACHE=0``), where every context is built from JSON.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.format import pi_json
from sessiontree.storage import context_cache, index_cache
from sessiontree.storage.jsonl import JsonlStore

_T = "2025-01-01T00:00:00.000Z"


@pytest.fixture(autouse=True)
def _cache_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    monkeypatch.delenv(index_cache.ENV, raising=False)


def _entry(kind: str, entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": _T, **fields}


def _message(entry_id: str, parent: str | None, role: str, text: str, **extra: Any) -> dict[str, Any]:
    return _entry(
        "message", entry_id, parent, message={"role": role, "content": text, "timestamp": 1, **extra}
    )


def _session(path: Path, *extra: dict[str, Any]) -> None:
    """A session with every kind of entry a context reads: messages before and after a compaction,
    settings, a custom message, a branch summary on a second branch, a label, odd numbers and text."""
    entries = [
        _message("u1", None, "user", "first ünï \u2028"),
        _message(
            "a1", "u1", "assistant", "answer", provider="anthropic", model="claude", usage={"x": 1.5e300}
        ),
        _entry("thinking_level_change", "t1", "a1", thinkingLevel="high"),
        _entry("model_change", "m1", "t1", provider="openai", modelId="gpt"),
        _entry("active_tools_change", "tools1", "m1", activeToolNames=["read", "bash"]),
        _message("u2", "tools1", "user", "kept by the compaction"),
        _entry("compaction", "c1", "u2", summary="so far", firstKeptEntryId="u2", tokensBefore=123),
        _entry("custom_message", "cm1", "c1", customType="note", content="custom", display=True, details={}),
        _entry("label", "l1", "cm1", targetId="u2", label="here"),
        _message("u3", "l1", "user", "after -0.0", n=-0.0, big=2**62),
        _entry("branch_summary", "b1", "u1", summary="the other branch", fromId="u1"),
        _message("u4", "b1", "user", "on the branch"),
        _message("u5", "u3", "user", "the leaf"),
        *extra,
    ]
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": _T, "cwd": "/"}
    path.write_bytes(b"".join(pi_json.dumps_bytes(e) + b"\n" for e in [header, *entries]))


def _context(path: Path, leaf: str | None = None) -> dict[str, Any]:
    manager = SessionManager.open(path, read_only=True)
    try:
        return manager.build_session_context(leaf).to_dict()
    finally:
        manager.close()


def _uncached(path: Path, monkeypatch: pytest.MonkeyPatch, leaf: str | None = None) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setenv(index_cache.ENV, "0")
        return _context(path, leaf)


def _context_files() -> list[Path]:
    directory = Path(os.environ["SESSIONTREE_CACHE_DIR"]) / "index"
    return sorted(directory.glob("*.context")) if directory.is_dir() else []


def _hits(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each lookup of the context cache found a context."""
    found: list[bool] = []
    original = context_cache.load

    def spy(*args: Any) -> Any:
        got = original(*args)
        found.append(got is not None)
        return got

    monkeypatch.setattr(context_cache, "load", spy)
    return found


def _decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record every entry the JSONL store decodes from JSON."""
    decoded: list[int] = []
    original = JsonlStore._decode_raw

    def spy(self: JsonlStore, i: int, raw: Any) -> Any:
        decoded.append(i)
        return original(self, i, raw)

    monkeypatch.setattr(JsonlStore, "_decode_raw", spy)
    return decoded


def test_a_reopened_file_gets_its_context_back_whole_and_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    expected = _uncached(path, monkeypatch)
    assert _context_files() == []
    assert _context(path) == expected  # built from JSON, kept at close
    assert len(_context_files()) == 1
    hits, decoded = _hits(monkeypatch), _decodes(monkeypatch)
    manager = SessionManager.open(path, read_only=True)
    decoded.clear()  # the labels are read at open
    got = manager.build_session_context()
    assert hits == [True] and decoded == []
    assert got.to_dict() == expected
    assert [m["role"] for m in got.messages] == ["compactionSummary", "user", "custom", "user", "user"]
    assert (got.thinking_level, got.model, got.active_tool_names) == (
        "high",
        {"provider": "openai", "modelId": "gpt"},
        ["read", "bash"],
    )
    manager.close()


def test_the_context_cache_keeps_what_the_file_says_not_what_a_caller_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    manager = SessionManager.open(path, read_only=True)
    context = manager.build_session_context()
    for message in context.messages:
        message["content"] = "changed by a caller"  # callers must not, but the cache must not keep it
    context.messages.pop()
    manager.close()
    assert len(_context_files()) == 1
    hits = _hits(monkeypatch)
    assert _context(path) == _uncached(path, monkeypatch)
    assert hits == [True]


def test_another_leaf_is_built_as_always_and_kept_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    _context(path)
    hits = _hits(monkeypatch)
    assert _context(path, "u4") == _uncached(path, monkeypatch, "u4")  # the other branch
    assert _context(path, "u4") == _uncached(path, monkeypatch, "u4")
    assert _context(path) == _uncached(path, monkeypatch)
    assert hits == [False, True, False]


def test_an_appended_file_builds_the_context_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    _context(path)
    with path.open("ab") as f:
        f.write(pi_json.dumps_bytes(_message("u6", "u5", "user", "appended")) + b"\n")
    hits = _hits(monkeypatch)
    got = _context(path, "u5")  # the same path, but the file is not the one the context was kept for
    assert got == _uncached(path, monkeypatch, "u5")
    assert _context(path) == _uncached(path, monkeypatch)
    assert _context(path)["messages"][-1]["content"] == "appended"
    assert hits == [False, False, True]


def test_a_file_changed_in_place_builds_the_context_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    _context(path)
    data = path.read_bytes().replace(b"the leaf", b"THE LEAF")
    with path.open("r+b") as f:  # in place, the same size
        f.write(data)
    got = _context(path)
    assert got["messages"][-1]["content"] == "THE LEAF"
    assert got == _uncached(path, monkeypatch)


def test_a_writer_keeps_the_context_of_what_it_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    manager = SessionManager.open(path)
    manager.build_session_context()
    manager.append_message({"role": "user", "content": "written here", "timestamp": 2})
    manager.build_session_context()
    manager.close()
    hits = _hits(monkeypatch)
    got = _context(path)
    assert hits == [True]
    assert got["messages"][-1]["content"] == "written here"
    assert got == _uncached(path, monkeypatch)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: data[:3],
        lambda data: b"",
        lambda data: b"\xff\xff\xff\x7f" + data[4:],
        lambda data: data[:4] + b"\xc1" + data[5:],
        lambda data: data[:-1] + b"\xc1",
        lambda data: data + b"\x00",
        lambda data: data[:-20] + os.urandom(20),
    ],
)
def test_a_damaged_context_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    _context(path)
    [kept] = _context_files()
    kept.write_bytes(damage(kept.read_bytes()))
    assert _context(path) == _uncached(path, monkeypatch)


def test_a_context_msgpack_cannot_hold_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _session(path, _message("u6", "u5", "user", "lone \ud800 surrogate"))
    assert _context(path) == _uncached(path, monkeypatch)
    assert _context_files() == []
    assert _context(path) == _uncached(path, monkeypatch)


def test_the_context_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    _uncached(path, monkeypatch)
    _uncached(path, monkeypatch)
    assert _context_files() == []


def test_a_context_larger_than_max_bytes_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    monkeypatch.setattr(context_cache, "MAX_BYTES", 300)  # the context's lines hold more than this
    decoded = _decodes(monkeypatch)
    manager = SessionManager.open(path, read_only=True)
    expected = manager.build_session_context().to_dict()
    built = len(decoded)
    manager.close()
    assert _context_files() == []
    assert len(decoded) - built <= 2  # at close: the compaction, to find how much the context holds
    monkeypatch.setattr(context_cache, "MAX_BYTES", 1 << 24)
    assert _context(path) == expected == _uncached(path, monkeypatch)


def test_a_failure_while_keeping_the_context_still_releases_the_writer_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    manager = SessionManager.open(path)
    manager.append_message({"role": "user", "content": "before", "timestamp": 2})  # takes the writer lock
    manager.build_session_context()
    assert manager.store.is_locked

    def broken(*args: Any) -> None:
        raise RuntimeError("a bug while keeping the context")

    monkeypatch.setattr(context_cache, "save", broken)
    with pytest.raises(RuntimeError):
        manager.close()
    assert not manager.store.is_locked
    monkeypatch.undo()
    other = SessionManager.open(path)  # the lock is free: another writer appends
    other.append_message({"role": "user", "content": "after", "timestamp": 3})
    other.close()
    assert _context(path)["messages"][-1]["content"] == "after"
