"""v1/v2 -> v3 migration: pi's byte-exact output with injected ids, backups, read-only opens, edge rules."""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.format import pi_json as _json
from sessiontree.storage import JsonlStore, migrate_entries, needs_migration, session_version
from tests.conftest import conformance_root, list_cases, require_conformance


def _migration_cases() -> list[str]:
    root = conformance_root()
    if root is None:
        return ["<conformance data missing>"]
    cases = [f"cases/{name}" for name in list_cases("cases") if name.startswith("migrate-")]
    return cases + [f"pi-fixtures/{name}" for name in list_cases("pi-fixtures")]


def _input_of(case: Path) -> Path:
    name = json.loads((case / "files.json").read_text())["initialInput"]
    for candidate in (case / name, case.parent / name):
        if candidate.is_file():
            return candidate
    raise AssertionError(f"no input file for {case}")


def _non_blank(data: bytes) -> list[bytes]:
    return [line.rstrip(b"\r") for line in data.split(b"\n") if line.strip()]


def _injected(ids: list[str]) -> tuple[Callable[[Container[str]], str], list[Container[str]]]:
    seen: list[Container[str]] = []
    it: Iterator[str] = iter(ids)

    def factory(existing: Container[str]) -> str:
        seen.append(existing)
        return next(it)

    return factory, seen


@pytest.mark.parametrize("name", _migration_cases())
def test_migration_matches_pi_bytes(name: str, copy_input: Any) -> None:
    case = require_conformance() / name
    source = _input_of(case)
    original = source.read_bytes()
    path = copy_input(source, "opened.jsonl")
    expected = _non_blank((case / "session.jsonl").read_bytes())
    input_objects = []
    for raw in _non_blank(original):
        try:
            value = _json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            input_objects.append(value)
    migrating = needs_migration(input_objects[0])
    count = len(input_objects)  # header + migrated entries: pi's file starts with exactly these lines
    factory, calls = _injected([_json.loads(raw)["id"] for raw in expected[1:count]])
    store = JsonlStore.open(path, id_factory=factory)
    after = path.read_bytes()
    if migrating:
        assert after == b"".join(raw + b"\n" for raw in expected[:count])
        backups = sorted(p for p in path.parent.iterdir() if ".bak" in p.name)
        assert [p.name for p in backups] == [f"opened.jsonl.v{int(session_version(input_objects[0]))}.bak"]
        assert backups[0].read_bytes() == original
        assert any(p.kind == "migrated" for p in store.problems)
        assert store.is_locked  # the rewrite was done under the writer lock, which is kept
        if input_objects[0].get("version") is None:
            assert len(calls) == count - 1
    else:
        assert after == original and calls == []
        assert not any(".bak" in p.name for p in path.parent.iterdir())
        assert not any(p.kind == "migrated" for p in store.problems)
    assert [store.raw_at(i) for i in range(len(store))] == expected[1:count]
    store.close()


@pytest.mark.parametrize("name", _migration_cases())
def test_read_only_open_migrates_in_memory_only(name: str, copy_input: Any) -> None:
    case = require_conformance() / name
    path = copy_input(_input_of(case), "opened.jsonl")
    before = path.read_bytes()
    store = JsonlStore.open(path, read_only=True)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["opened.jsonl"]
    expected = _non_blank((case / "session.jsonl").read_bytes())
    assert store.header is not None and store.header.get("version") == 3
    assert len(store) <= len(expected) - 1
    assert [store.type_at(i) for i in range(len(store))] == [
        _json.loads(raw)["type"] for raw in expected[1 : len(store) + 1]
    ]


def test_appending_after_a_migration_and_the_backup_stays(copy_input: Any) -> None:
    case = require_conformance() / "cases" / "migrate-v1-basic"
    path = copy_input(case / "input.jsonl", "opened.jsonl")
    store = JsonlStore.open(path)
    last = store.id_at(len(store) - 1)
    store.append({"type": "label", "id": "lab1", "parentId": last, "timestamp": "t", "targetId": last})
    store.close()
    again = JsonlStore.open(path)
    assert again.problems == [] and again.id_at(len(again) - 1) == "lab1"
    assert (path.parent / "opened.jsonl.v1.bak").read_bytes() == (case / "input.jsonl").read_bytes()


# -- migrate_entries rules ----------------------------------------------------------------------------------
def _ids(*values: str) -> Callable[[Container[str]], str]:
    return _injected(list(values))[0]


def test_v1_chain_ids_appended_at_the_end_and_header_version() -> None:
    header = {"type": "session", "id": "s", "timestamp": "t", "cwd": "/", "provider": "p"}
    entries = [
        header,
        {"type": "message", "timestamp": "t1", "message": {"role": "user"}},
        {"type": "x", "v": 1},
    ]
    result = migrate_entries(entries, id_factory=_ids("i1", "i2"))
    assert result.changed and result.from_version == 1
    assert [list(e) for e in result.entries] == [
        ["type", "id", "timestamp", "cwd", "provider", "version"],
        ["type", "timestamp", "message", "id", "parentId"],
        ["type", "v", "id", "parentId"],
    ]
    assert result.entries[0]["version"] == 3
    assert [e.get("parentId", "-") for e in result.entries] == ["-", None, "i1"]
    assert "version" not in header and "id" not in entries[1]  # inputs untouched


def test_first_kept_entry_index_rules() -> None:
    header = {"type": "session", "id": "s"}

    def comp(index: Any) -> dict[str, Any]:
        return {"type": "compaction", "summary": "s", "firstKeptEntryIndex": index, "tokensBefore": 1}

    entries = [
        header,
        {"type": "message"},
        comp(0),
        comp(99),
        comp(5),
        comp(1),
        comp(2.0),
        comp(1.5),
        comp("1"),
        comp(-1),
        comp(6),
    ]
    out = migrate_entries(entries, id_factory=_ids(*(f"n{i}" for i in range(1, 11)))).entries
    kept = [e.get("firstKeptEntryId", "absent") for e in out[2:]]
    # header / out of range / forward (no id yet) / index 1 / index 2.0 (= 2, the first compaction, id n2) /
    # non-integer / a string (not a number: left as is) / negative / index 6 (an earlier entry, id n6)
    assert kept == ["absent", "absent", "absent", "n1", "n2", "absent", "absent", "absent", "n6"]
    assert ["firstKeptEntryIndex" in e for e in out[2:]] == [False] * 6 + [True, False, False]


def test_unversioned_tree_is_flattened_with_ids_overwritten_in_place() -> None:
    header = {"type": "session", "id": "s"}
    a = {"type": "message", "id": "b1", "parentId": None, "timestamp": "t"}
    b = {"type": "message", "id": "b2", "parentId": "b1", "timestamp": "t"}
    c = {"type": "message", "id": "b3", "parentId": "b1", "timestamp": "t"}
    comp = {"type": "compaction", "id": "b4", "parentId": "b3", "firstKeptEntryIndex": 3, "tokensBefore": 1}
    fwd = {"type": "compaction", "id": "b5", "parentId": "b4", "firstKeptEntryIndex": 6}
    last = {"type": "message", "id": "b6", "parentId": "b5"}
    out = migrate_entries(
        [header, a, b, c, comp, fwd, last], id_factory=_ids("x1", "x2", "x3", "x4", "x5", "x6")
    )
    assert [(e["id"], e["parentId"]) for e in out.entries[1:]] == [
        ("x1", None),
        ("x2", "x1"),
        ("x3", "x2"),
        ("x4", "x3"),
        ("x5", "x4"),
        ("x6", "x5"),
    ]
    assert list(out.entries[4]) == ["type", "id", "parentId", "tokensBefore", "firstKeptEntryId"]
    assert out.entries[4]["firstKeptEntryId"] == "x3"
    assert out.entries[5]["firstKeptEntryId"] == "b6"  # forward target still has its old id, as in pi


def test_v2_to_v3_renames_hook_messages_only() -> None:
    header = {"type": "session", "version": 2, "id": "s"}
    hook = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "message": {"role": "hookMessage", "content": "x"},
    }
    other = {"type": "custom_message", "id": "b", "parentId": "a", "role": "hookMessage"}
    out = migrate_entries([header, hook, other], id_factory=_ids())
    assert out.entries[0] == {"type": "session", "version": 3, "id": "s"}
    assert out.entries[1]["message"] == {"role": "custom", "content": "x"}
    assert out.entries[2] == other
    assert hook["message"]["role"] == "hookMessage"


@pytest.mark.parametrize(
    ("version", "migrates"),
    [(None, True), (1, True), (2, True), (3, False), (4, False), ("3", False), ("x", True)],
)
def test_version_rules(version: Any, migrates: bool) -> None:
    header = (
        {"type": "session", "id": "s"}
        if version is None
        else {"type": "session", "version": version, "id": "s"}
    )
    assert needs_migration(header) is migrates
    assert migrate_entries([header], id_factory=_ids()).changed is migrates


def test_extra_session_objects_are_versioned_not_given_ids() -> None:
    header = {"type": "session", "id": "s"}
    out = migrate_entries(
        [header, {"type": "message"}, {"type": "session", "id": "s2"}, {"type": "message"}],
        id_factory=_ids("a", "b"),
    )
    assert out.entries[2] == {"type": "session", "id": "s2", "version": 3}
    assert out.entries[3]["parentId"] == "a"


def test_id_factory_sees_the_ids_already_assigned() -> None:
    seen: list[set[str]] = []

    def factory(existing: Container[str]) -> str:
        assert isinstance(existing, set)
        seen.append(set(existing))
        return f"id{len(seen)}"

    migrate_entries([{"type": "session", "id": "s"}, {"type": "a"}, {"type": "b"}], id_factory=factory)
    assert seen == [set(), {"id1"}]


def test_migration_drops_malformed_lines_but_the_backup_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    original = b'{"type":"session","id":"s","timestamp":"t","cwd":"/"}\r\n\r\n{"type":"message","n":1}\r\n{oops\r\n5\r\n'
    path.write_bytes(original)
    store = JsonlStore.open(path, id_factory=_ids("m1"))
    assert path.read_bytes() == (
        b'{"type":"session","id":"s","timestamp":"t","cwd":"/","version":3}\n'
        b'{"type":"message","n":1,"id":"m1","parentId":null}\n'
    )
    assert (tmp_path / "old.jsonl.v1.bak").read_bytes() == original
    assert [p.line for p in store.problems if p.kind == "bad_line"] == [4, 5]
    store.close()


def test_an_existing_different_backup_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    original = b'{"type":"session","version":2,"id":"s"}\n{"type":"message","id":"a","parentId":null}\n'
    path.write_bytes(original)
    (tmp_path / "old.jsonl.v2.bak").write_bytes(b"something else")
    JsonlStore.open(path).close()
    assert (tmp_path / "old.jsonl.v2.bak").read_bytes() == b"something else"
    assert (tmp_path / "old.jsonl.v2.bak-1").read_bytes() == original
