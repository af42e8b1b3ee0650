"""Test support for the compaction suite: pi's session files read as pi reads them, fixture files, and a
scripted in-process summarizer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import require_conformance
from sessiontree._json import loads

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
    from conftest import conformance_root

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
