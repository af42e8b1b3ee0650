"""Branched copies (fork, clone, create_branched_session) across a compaction whose cut names a label.

``compact_session`` moves its cut back over a label, so ``firstKeptEntryId`` can name a label entry. The copy
drops labels from the path (and re-creates them at its end), so the compaction must name the next kept entry:
pi reads the kept messages from ``firstKeptEntryId`` alone, and a copy naming an id it does not hold would give
pi an empty kept range while sessiontree (reading ``retainedTail``) showed them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.format.pi_json import dumps_bytes, loads
from sessiontree.storage.forking import clone_session


def _session(tmp_path: Path) -> tuple[SessionManager, str]:
    sm = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    sm.append_message({"role": "user", "content": "one", "timestamp": 1})
    first = sm.append_message({"role": "user", "content": "two", "timestamp": 2})
    sm.append_label_change(first, "checkpoint")  # a label entry on the path, after "two"
    label_id = sm.get_leaf_id()
    assert label_id is not None
    sm.append_message({"role": "user", "content": "three", "timestamp": 3})
    sm.append_message({"role": "user", "content": "four", "timestamp": 4})
    sm.append_compaction("summary of one and two", label_id, 100.0)
    sm.append_message({"role": "user", "content": "five", "timestamp": 5})
    return sm, label_id


def _lines(path: str | Path) -> list[dict[str, Any]]:
    return [loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def _without_retained_tail(path: str | Path, into: Path) -> Path:
    """The copy as pi reads it: kept messages from ``firstKeptEntryId`` alone."""
    lines = [{k: v for k, v in e.items() if k != "retainedTail"} for e in _lines(path)]
    into.write_bytes(b"".join(dumps_bytes(e) + b"\n" for e in lines))
    return into


def _texts(sm: SessionManager) -> list[Any]:
    return [m.get("content", m.get("summary")) for m in sm.build_session_context().messages]


@pytest.mark.parametrize("how", ["clone", "create_branched_session"])
def test_the_copy_names_the_next_kept_entry_instead_of_the_dropped_label(tmp_path: Path, how: str) -> None:
    sm, label_id = _session(tmp_path)
    expected = _texts(sm)
    assert expected[1:] == ["three", "four", "five"]  # the summary, then the kept messages
    if how == "clone":
        path = clone_session(sm, directory=tmp_path / "copies").path
    else:
        made = sm.create_branched_session(str(sm.get_leaf_id()))
        assert made is not None
        path = made
    entries = _lines(path)
    ids = {e.get("id") for e in entries}
    assert label_id not in ids
    (compaction,) = [e for e in entries if e.get("type") == "compaction"]
    assert compaction["firstKeptEntryId"] in ids
    three = next(e for e in entries if e.get("type") == "message" and e["message"]["content"] == "three")
    assert compaction["firstKeptEntryId"] == three["id"]
    with SessionManager.open(path, read_only=True) as copy:
        assert _texts(copy) == expected
    pi_view = _without_retained_tail(path, tmp_path / "as-pi-reads-it.jsonl")
    with SessionManager.open(pi_view, read_only=True) as copy:
        assert _texts(copy) == expected


def test_a_compaction_that_names_a_kept_entry_is_copied_verbatim(tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    sm.append_message({"role": "user", "content": "one", "timestamp": 1})
    kept = sm.append_message({"role": "user", "content": "two", "timestamp": 2})
    sm.append_label_change(kept, "checkpoint")
    sm.append_message({"role": "user", "content": "three", "timestamp": 3})
    compaction_id = sm.append_compaction("summary", kept, 10.0)
    source = Path(str(sm.get_session_file())).read_bytes().splitlines()
    made = sm.create_branched_session(compaction_id)
    assert made is not None
    copied = Path(made).read_bytes().splitlines()
    (line,) = [raw for raw in source if b'"type":"compaction"' in raw]
    assert line in copied  # byte for byte: nothing to rewrite
