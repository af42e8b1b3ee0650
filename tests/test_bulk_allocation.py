"""``bulk_allocation``: no collection passes inside, the new objects filed as old, the program's gc state kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The collector's state is the whole process's: a thread left running by an earlier test in the same worker
# (a server, a cache writer) allocates, collects or calls ``bulk_allocation`` itself, so every check of that
# state runs in a fresh interpreter of its own.
_PRELUDE = """
import gc
from sessiontree._bulk import bulk_allocation

def young_ids():
    return {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}

def chain_session(n):  # a session file of n user messages, each the child of the one before
    import json, tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "s.jsonl"
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z",
                         "cwd": "/"})]
    for i in range(n):
        message = {"role": "user", "content": [{"type": "text", "text": f"m{i}"}], "timestamp": i}
        lines.append(json.dumps({"type": "message", "id": f"n{i}", "parentId": f"n{i - 1}" if i else None,
                                 "timestamp": "2025-01-01T00:00:00.000Z", "message": message}))
    path.write_text("\\n".join(lines) + "\\n")
    return path
"""


def _run(body: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(body) + "\nprint('ok')\n"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_objects_built_inside_are_filed_as_old_and_the_collector_is_back_on() -> None:
    _run("""
        gc.enable()
        with bulk_allocation():
            assert not gc.isenabled()
            built = [{"content": [{"type": "text"}], "n": [k]} for k in range(5_000)]
        assert gc.isenabled()
        young = young_ids()
        assert not any(id(d) in young or id(d["content"]) in young for d in built)
        assert built[-1]["n"] == [4_999]
    """)


def test_objects_a_program_froze_stay_frozen_and_the_new_ones_stay_young() -> None:
    _run("""
        gc.enable()
        frozen = [[k] for k in range(100)]
        gc.freeze()
        count = gc.get_freeze_count()
        with bulk_allocation():
            built = [[k] for k in range(1_000)]
        assert gc.get_freeze_count() == count >= len(frozen)
        assert gc.isenabled()
        young = young_ids()
        assert any(id(b) in young for b in built)  # filed as usual: a collection pass will see them
    """)


def test_a_collector_turned_off_by_the_program_stays_off() -> None:
    _run("""
        gc.disable()
        with bulk_allocation():
            pass
        assert not gc.isenabled()
    """)


def test_a_lazily_exported_name_imports_its_module_without_collection_passes() -> None:
    script = (
        "import gc, sys\n"
        "import sessiontree, sessiontree._bulk\n"
        "gc.collect()\n"
        "passes = []\n"
        "gc.callbacks.append(lambda phase, info: passes.append(info['generation']) if phase == 'start' else None)\n"
        "from sessiontree import SessionManager\n"
        "assert 'sessiontree.session.manager' in sys.modules and gc.isenabled()\n"
        "print(len(passes))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_a_tree_is_filed_with_the_old_objects_not_left_for_a_young_collection() -> None:
    """``get_tree`` builds its nodes with the collector paused and files them as old objects: none is left in
    the young generations, whose next collection would walk every node (about 20 ms at 100k entries)."""
    _run("""
        from sessiontree.storage import MemoryStore
        from sessiontree.tree.tree_index import TreeIndex

        header = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
        entries = [
            {"type": "x", "id": f"n{i}", "parentId": f"n{i - 1}" if i else None,
             "timestamp": "2025-01-01T00:00:00.000Z"}
            for i in range(3_000)
        ]
        gc.enable()
        nodes, stack = [], TreeIndex(MemoryStore(header, entries)).get_tree()
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(node.children)
        assert len(nodes) == 3_000 and gc.isenabled()
        young = young_ids()
        assert not any(id(n) in young or id(n.children) in young for n in nodes)
    """)


def test_entries_and_branches_read_whole_are_filed_with_the_old_objects() -> None:
    """``get_entries`` and ``get_branch`` decode every entry with the collector paused and file them as old
    objects (its passes over a heap growing by every entry took two thirds of the time of reading 100,000)."""
    _run("""
        from sessiontree import SessionManager

        path = chain_session(2_000)
        gc.enable()
        for read in (SessionManager.get_entries, SessionManager.get_branch):
            manager = SessionManager.open(path, read_only=True)
            entries = read(manager)
            assert len(entries) == 2_000 and entries[-1]["id"] == "n1999" and gc.isenabled()
            young = young_ids()
            assert not any(id(x) in young or id(x["message"]) in young for x in entries), read
            manager.close()
    """)


def test_the_agents_sdk_sessions_items_are_filed_with_the_old_objects() -> None:
    """``TreeSession.get_items`` makes the whole history's items with the collector paused and files them as
    old objects (a 10k-item history on SQLite: 70-88 against 43-54 ms a call)."""
    _run("""
        import asyncio, tempfile
        from sessiontree import SessionManager
        from sessiontree.integrations.openai_agents import TreeSession

        session = TreeSession(SessionManager.create(tempfile.mkdtemp(), session_dir=tempfile.mkdtemp()))
        turn = [
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "answer"}]},
        ]
        asyncio.run(session.add_items([dict(item) for _ in range(500) for item in turn]))
        gc.enable()
        items = asyncio.run(session.get_items())
        assert len(items) == 1_000 and gc.isenabled()
        young = young_ids()
        assert not any(id(item) in young for item in items)
    """)


def test_the_tree_as_json_is_filed_with_the_old_objects() -> None:
    """``tree --json`` builds a node per row with every entry decoded, with the collector paused."""
    _run("""
        from sessiontree import SessionManager
        from sessiontree.cli._tree_view import TreeOptions, tree_json

        path = chain_session(1_000)
        gc.enable()
        out = tree_json(SessionManager.open(path, read_only=True), TreeOptions(active=False, width=80))
        assert len(out["nodes"]) == 1_000 and gc.isenabled()
        young = young_ids()
        assert not any(id(node) in young for node in out["nodes"])
    """)


def test_an_export_runs_no_collection_pass() -> None:
    """An export (the branch's entries and the page's parts) is made with the collector paused."""
    _run("""
        from sessiontree import SessionManager
        from sessiontree.export import export_session

        gc.enable()
        for fmt in ("html", "md"):
            manager = SessionManager.open(chain_session(1_000), read_only=True)
            passes = []
            gc.callbacks.append(lambda phase, info: passes.append(info) if phase == "start" else None)
            page = export_session(manager, fmt)
            gc.callbacks.pop()
            assert b"m999" in page and not passes, (fmt, passes[:3])
            assert gc.isenabled()
    """)
