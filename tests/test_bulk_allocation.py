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
