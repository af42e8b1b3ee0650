"""Helpers for the pi conformance suite: reading case outputs, tree flattening, replaying ops.json."""

from __future__ import annotations

import json
import shutil
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiontree import SessionManager
from sessiontree.format.ids import parse_iso_ms
from sessiontree.format.pi_json import UNDEFINED, loads


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def case_paths(root: Path, subdir: str) -> list[Path]:
    return sorted(p for p in (root / subdir).iterdir() if p.is_dir())


def written_files(case: Path) -> list[dict[str, Any]]:
    """files.json entries of files pi actually wrote."""
    return [f for f in read_json(case / "files.json")["files"] if f["exists"]]


def current_file(case: Path) -> dict[str, Any] | None:
    for f in read_json(case / "files.json")["files"]:
        if f["current"]:
            return f  # type: ignore[no-any-return]
    return None


def rebuild_context(table: list[Any], row: dict[str, Any]) -> dict[str, Any]:
    return {
        "messages": [table[i] for i in row["messages"]],
        "thinkingLevel": row["thinkingLevel"],
        "model": row["model"],
    }


def flatten_tree(roots: list[Any]) -> dict[str, Any]:
    """Our get_tree() in the shape of tree.json: roots and a pre-order DFS of nodes."""
    nodes: list[dict[str, Any]] = []
    stack: list[tuple[Any, int]] = [(r, 0) for r in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        entry = node.entry
        nodes.append(
            {
                "id": entry.get("id"),
                "type": entry.get("type"),
                "parentId": entry.get("parentId"),
                "depth": depth,
                "label": node.label,
                "labelTimestamp": node.label_timestamp,
                "children": [c.entry.get("id") for c in node.children],
            }
        )
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return {"roots": [r.entry.get("id") for r in roots], "nodes": nodes}


def unique_id_tree(expected: dict[str, Any]) -> dict[str, Any]:
    """pi's tree.json with each id listed once, under the parent of its last copy (sessiontree's tree).

    pi hangs a duplicated id's single node under the parent of every copy, so its printed tree holds the
    node (and everything below it) once per copy and grows as 2^depth; sessiontree places each id once, where
    its last copy says (a deliberate difference; files without duplicate ids are unaffected).
    """
    by_id = {n["id"]: n for n in expected["nodes"]}

    def placed(child: str, parent: str | None) -> bool:
        own = by_id[child]["parentId"]
        if parent is None:
            return own is None or own == child or own not in by_id
        return own == parent

    children = {i: [c for c in n["children"] if placed(c, i)] for i, n in by_id.items()}
    roots = list(dict.fromkeys(r for r in expected["roots"] if placed(r, None)))
    nodes: list[dict[str, Any]] = []
    stack = [(r, 0) for r in reversed(roots)]
    while stack:
        node_id, depth = stack.pop()
        nodes.append({**by_id[node_id], "depth": depth, "children": children[node_id]})
        stack.extend((c, depth + 1) for c in reversed(children[node_id]))
    return {"roots": roots, "nodes": nodes}


def labels_of(manager: SessionManager) -> list[dict[str, Any]]:
    """labels.json's ``labels``: every entry with a label, in entry order, with its timestamp."""
    out = []
    seen: set[str] = set()
    for entry in manager.get_entries():
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or entry_id in seen:
            continue
        seen.add(entry_id)
        label = manager.get_label(entry_id)
        if label is not None:
            out.append(
                {
                    "targetId": entry_id,
                    "label": label,
                    "labelTimestamp": manager.get_label_timestamp(entry_id),
                }
            )
    return out


def strip_branch_summary_from_ids(context: dict[str, Any]) -> dict[str, Any]:
    """sessiontree records the abandoned leaf as fromId (SPEC A2); compare the rest of such messages."""
    messages = [
        {k: v for k, v in m.items() if k != "fromId"} if m.get("role") == "branchSummary" else m
        for m in context["messages"]
    ]
    return {**context, "messages": messages}


class Script(Container[str]):
    """Injected ids and clock for a replay: the test queues what pi recorded before each op."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.now = 0
        self.session_ids: list[str] = []
        self.extra = 0

    def __contains__(self, item: object) -> bool:  # pragma: no cover - Container protocol only
        return False

    def id_factory(self, existing: Container[str]) -> str:
        if not self.ids:
            # Only where sessiontree deliberately keeps more than pi (labels of a chain pi orphaned).
            self.extra += 1
            return f"extra{self.extra:03d}"
        return self.ids.pop(0)

    def clock(self) -> int:
        return self.now

    def session_id_factory(self) -> str:
        assert self.session_ids, "the replay asked for more session ids than pi generated"
        return self.session_ids.pop(0)

    def options(self) -> dict[str, Any]:
        return {
            "clock": self.clock,
            "id_factory": self.id_factory,
            "session_id_factory": self.session_id_factory,
        }


def ms(iso: str) -> int:
    value = parse_iso_ms(iso)
    assert value is not None, iso
    return int(value)


def basename_timestamp(basename: str) -> str:
    """``2025-08-11T02-48-41-709Z_<id>.jsonl`` -> ``2025-08-11T02:48:41.709Z``."""
    stamp = basename.split("_", 1)[0]
    date, time = stamp.split("T")
    hh, mm, ss, mmm = time.rstrip("Z").split("-")
    return f"{date}T{hh}:{mm}:{ss}.{mmm}Z"


def op_inputs(case: Path) -> list[dict[str, Any]]:
    """The ops as given to pi: ops.input.json (exact literals) when present, else ops.json."""
    raw = case / "ops.input.json"
    if raw.exists():
        return loads(raw.read_bytes())["ops"]  # type: ignore[no-any-return]
    return read_json(case / "ops.json")["ops"]  # type: ignore[no-any-return]


def _arg(op: dict[str, Any], key: str) -> Any:
    return op.get(key, UNDEFINED)


@dataclass
class Replay:
    case: Path
    session_dir: Path
    manager: SessionManager
    fixture_of: dict[str, str] = field(default_factory=dict)  # our path -> fixture name
    leaf_before: list[str | None] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)  # what we observed per op
    reparented: bool = False
    written_compactions: set[str] = field(default_factory=set)
    fork_sources: dict[str, str] = field(default_factory=dict)  # new fixture -> fixture it was forked from


def resolve_ref(ref: Any, recorded: list[dict[str, Any]]) -> Any:
    if isinstance(ref, int) and not isinstance(ref, bool):
        return recorded[ref]["result"].get("id")
    return ref


def replay(case: Path, tmp: Path) -> Replay:
    """Replay ops.json through sessiontree with pi's recorded ids and timestamps injected."""
    data = read_json(case / "ops.json")
    meta, initial, recorded = data["meta"], data["initial"], data["ops"]
    inputs = op_inputs(case)
    session_dir = tmp / "sessions" / meta["name"]
    session_dir.mkdir(parents=True)
    script = Script()
    script.session_ids.append(initial["sessionId"])
    if meta.get("initialFile"):
        pi_header = (
            loads(next(file_lines(case / "session.jsonl"))) if (case / "session.jsonl").exists() else {}
        )
        script.now = ms(pi_header.get("timestamp") or meta["clockStart"])
        source = case / "input.jsonl"
        if not source.exists():
            source = (case / meta["initialFile"]).resolve()
        target = session_dir / initial["sessionFile"]
        shutil.copyfile(source, target)
        pi_file = case / "session.jsonl"
        if pi_file.exists():  # migrated ids are random in pi: inject the ones pi's rewrite recorded
            for line in list(file_lines(pi_file))[1:]:
                try:
                    entry = loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                    script.ids.append(entry["id"])
        manager = SessionManager.open(target, **script.options())
        script.ids.clear()
        script.session_ids.clear()
    else:
        script.now = ms(basename_timestamp(initial["sessionFile"]))
        manager = SessionManager.create(meta["cwd"], session_dir, **script.options())
    run = Replay(case, session_dir, manager)
    run.fixture_of[str(Path(manager.get_session_file() or "").name)] = "session.jsonl"
    for op, rec in zip(inputs, recorded, strict=True):
        result = rec["result"]
        run.leaf_before.append(run.manager.get_leaf_id())
        if "id" in result and result.get("id") is not None:
            script.ids.append(result["id"])
        if "timestamp" in result and result.get("timestamp"):
            script.now = ms(result["timestamp"])
        observed: dict[str, Any] = {}
        try:
            _apply(run, op, recorded, result, script)
        except Exception as exc:  # the comparison below decides whether an error was expected
            observed["error"] = exc
        script.ids.clear()
        observed.update(
            {
                "leafAfter": run.manager.get_leaf_id(),
                "sessionIdAfter": run.manager.get_session_id(),
                "sessionNameAfter": run.manager.get_session_name(),
                "currentFile": run.fixture_of.get(Path(run.manager.get_session_file() or "").name),
            }
        )
        run.results.append(observed)
    return run


def _apply(
    run: Replay, op: dict[str, Any], recorded: list[dict[str, Any]], result: dict[str, Any], script: Script
) -> None:
    m = run.manager
    kind = op["op"]
    if kind == "appendMessage":
        m.append_message(op["message"])
    elif kind == "appendModelChange":
        m.append_model_change(op["provider"], op["modelId"])
    elif kind == "appendThinkingLevelChange":
        m.append_thinking_level_change(op["thinkingLevel"])
    elif kind == "appendCustomEntry":
        m.append_custom_entry(op["customType"], _arg(op, "data"))
    elif kind == "appendCustomMessageEntry":
        m.append_custom_message_entry(op["customType"], op["content"], op["display"], _arg(op, "details"))
    elif kind == "appendLabelChange":
        m.append_label_change(resolve_ref(op.get("target"), recorded), op.get("label"))
    elif kind == "appendSessionInfo":
        m.append_session_info(op["name"])
    elif kind == "appendCompaction":
        run.written_compactions.add(result.get("id"))
        m.append_compaction(
            op["summary"],
            resolve_ref(op.get("firstKept"), recorded),
            op["tokensBefore"],
            _arg(op, "details"),
            _arg(op, "fromHook"),
        )
    elif kind == "branch":
        m.branch(resolve_ref(op.get("target"), recorded))
    elif kind == "resetLeaf":
        m.reset_leaf()
    elif kind == "branchWithSummary":
        m.branch_with_summary(
            resolve_ref(op.get("target"), recorded), op["summary"], _arg(op, "details"), _arg(op, "fromHook")
        )
    elif kind == "createBranchedSession":
        if "newSessionId" in result:
            script.session_ids.append(result["newSessionId"])
            script.now = ms(result["headerTimestamp"])
            script.ids.extend(result.get("labelEntryIds") or [])
        current = run.fixture_of.get(Path(m.get_session_file() or "").name, "")
        before = set(run.session_dir.iterdir())
        path = m.create_branched_session(resolve_ref(op.get("target"), recorded))
        if path is not None:
            run.fixture_of[Path(path).name] = result["newFile"]
            run.fork_sources[result["newFile"]] = current
        new = set(run.session_dir.iterdir()) - before
        assert len(new) <= 1, new
    elif kind == "reopen":
        path = m.get_session_file()
        assert path is not None
        m.close()
        run.manager = SessionManager.open(path, **script.options())
    else:  # pragma: no cover - a new op kind in the fixtures must fail loudly
        raise AssertionError(f"unknown op {kind}")


def file_lines(path: Path) -> Iterator[bytes]:
    for line in path.read_bytes().split(b"\n"):
        if line.strip():
            yield line.rstrip(b"\r")
