"""``copy`` between any two stores: every pi file that loads without problems goes JSONL -> SQLite ->
PostgreSQL -> JSONL and comes back byte for byte; damaged files are refused unless lossy; the CLI's store
commands (``copy``, ``search``, ``db``, ``--store`` on every command) work on database stores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree import SessionError, SessionManager
from sessiontree.cli import app
from sessiontree.session.copying import LOSSY_KINDS, copy_session
from sessiontree.storage import JsonlStore
from tests.backends.conftest import Backend
from tests.conftest import require_conformance


def _pi_files() -> list[Path]:
    root = require_conformance()
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def _loads_cleanly(path: Path) -> bool:
    try:
        store = JsonlStore.open(path, read_only=True)
    except SessionError:  # a damaged header: not a session to copy
        return False
    with store:
        return store.header is not None and not any(p.kind in LOSSY_KINDS for p in store.problems)


def test_every_clean_pi_file_goes_through_sqlite_and_postgres_and_back_byte_for_byte(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite = f"sqlite:///{tmp_path}/copy.db"
    files = [p for p in _pi_files() if _loads_cleanly(p)]
    assert len(files) > 150
    seen: set[bytes] = set()
    for n, source in enumerate(files):
        data = source.read_bytes()
        if data in seen:  # the same file in two cases: it would collide on its session id
            continue
        seen.add(data)
        header = json.loads(data.split(b"\n", 1)[0])
        first = copy_session(str(source), sqlite)
        assert first.exact and first.session_id == header["id"]
        second = copy_session(f"{sqlite}#{first.session_id}", postgres_url)
        assert second.exact
        back = tmp_path / f"back-{n}.jsonl"
        third = copy_session(f"{postgres_url}#{second.session_id}", str(back))
        assert third.exact and back.read_bytes() == data, source
        for url in (sqlite, postgres_url):  # free the id for a later file with the same header
            from sessiontree.session.store_access import shared_repo

            shared_repo(url).delete(first.session_id)


def test_a_damaged_file_is_refused_unless_lossy(tmp_path: Path) -> None:
    case = require_conformance() / "cases" / "edge-open-malformed-crlf" / "input.jsonl"
    store = f"sqlite:///{tmp_path}/lossy.db"
    with pytest.raises(SessionError, match="line 4: not valid JSON") as info:
        copy_session(str(case), store)
    assert info.value.kind == "lossy"
    result = copy_session(str(case), store, lossy=True)
    assert not result.exact
    reference = SessionManager.open(case, read_only=True)
    copied = SessionManager.open(result.session_id, store=store, read_only=True)
    assert copied.build_session_context().to_dict() == reference.build_session_context().to_dict()
    assert any("line 4" in p.message for p in copied.problems)  # what was lost stays on record


def test_copy_into_a_store_and_out_again_from_the_command_line(tmp_path: Path) -> None:
    source = require_conformance() / "cases" / "case-012" / "session.jsonl"
    store = f"sqlite:///{tmp_path}/cli.db"
    runner = CliRunner()
    assert runner.invoke(app, ["db", "migrate", "--store", store]).exit_code == 0
    result = runner.invoke(app, ["copy", str(source), store, "--json"])
    assert result.exit_code == 0, result.output
    (copied,) = json.loads(result.output)
    sid = copied["sessionId"]
    assert copied["exact"] and copied["destination"].endswith(f"#{sid}")
    out = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["copy", f"{store}#{sid}", str(out)]).exit_code == 0
    assert out.read_bytes() == source.read_bytes()
    assert runner.invoke(app, ["copy", f"{store}#{sid}", str(out)]).exit_code == 1  # never overwrites
    # --store on the other commands: the session by id prefix
    tree = runner.invoke(app, ["tree", sid[:8], "--store", store, "--json"])
    assert tree.exit_code == 0, tree.output
    reference = runner.invoke(app, ["tree", str(source), "--json"])
    assert json.loads(tree.output) == json.loads(reference.output)
    context = runner.invoke(app, ["context", sid[:8], "--json"], env={"SESSIONTREE_STORE": store})
    assert json.loads(context.output) == json.loads(
        runner.invoke(app, ["context", str(source), "--json"]).output
    )
    named = runner.invoke(app, ["name", sid[:8], "renamed in the store", "--store", store])
    assert named.exit_code == 0, named.output
    assert SessionManager.open(sid, store=store, read_only=True).get_session_name() == "renamed in the store"
    missing = runner.invoke(app, ["tree", "nosuchsession", "--store", store])
    assert missing.exit_code == 1 and "not found" in missing.output
    # list: this project's sessions (none here), saying which project it looked for; --all lists them all
    here = runner.invoke(app, ["list", "--store", store, "--cwd", str(tmp_path)])
    assert here.exit_code == 0 and f"for {tmp_path.resolve()} (--all lists every project's)" in here.output
    everything = runner.invoke(app, ["list", "--store", store, "--all", "--json"])
    assert [s["id"] for s in json.loads(everything.output)] == [sid]


def test_search_finds_message_text_and_names_in_every_store(backend: Backend) -> None:
    manager = backend.create()
    manager.append_message(
        {"role": "user", "content": "the flux capacitor needs 1.21 gigawatts", "timestamp": 1}
    )
    reply = manager.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Plutonium is hard to find"}],
            "provider": "p",
            "model": "m",
            "timestamp": 2,
        }
    )
    named = manager.append_session_info("Back to the future")
    hits = backend.repo.search("plutonium")
    assert [(h.session_id, h.entry_id) for h in hits] == [(manager.get_session_id(), reply)]
    assert "Plutonium" in hits[0].snippet
    assert [h.entry_id for h in backend.repo.search("future back")] == [named]
    assert backend.repo.search("nothing like this") == []
    assert backend.repo.search("capacitor", cwd="/elsewhere") == []
    assert len(backend.repo.search("capacitor", cwd="/work/project")) == 1


def test_search_from_the_command_line(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/search.db"
    manager = SessionManager.create(str(tmp_path), store=store)
    entry = manager.append_message({"role": "user", "content": "Where is the [red] button?", "timestamp": 1})
    result = CliRunner().invoke(app, ["search", "red button", "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [
        {
            "sessionId": manager.get_session_id(),
            "entryId": entry,
            "snippet": "Where is the [red] button?",
            "location": f"sqlite:///{tmp_path}/search.db#{manager.get_session_id()}",
        }
    ]
    plain = CliRunner().invoke(app, ["search", "button", "--store", store])
    assert entry in plain.output and "[red]" in plain.output
