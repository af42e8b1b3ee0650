"""Many processes on one SQL store (SQLite file, PostgreSQL database): one writer per session at a time,
every acknowledged entry stored exactly once, sessions independent, no "database is locked" under load.

Counts grow with ``SESSIONTREE_SQL_CONCURRENCY`` (a multiplier, default 1).
"""

from __future__ import annotations

import itertools
import os
import re
import time
from pathlib import Path

from sessiontree import open_repo
from tests.backends.sql_workers import (
    contend,
    hold_then_write,
    join_all,
    many_sessions,
    open_fresh,
    read_log,
    set_up,
    start,
    steady_writer,
    stored,
    take_over,
    turn_tag,
    turns_of,
    user,
    wait_for,
)

SCALE = int(os.environ.get("SESSIONTREE_SQL_CONCURRENCY", "1"))
OWNER = re.compile(r"being written by [^:\s]+:(\d+):[0-9a-f]{8}")


def _seed_session(url: str) -> tuple[str, str]:
    """A session with one entry, closed (no lease left behind): its id and that entry's id."""
    with open_repo(url) as repo:
        manager = repo.create("/work/project")
        first = manager.append_message(user("seed"))
        manager.close()
        return manager.get_session_id(), first


def test_eight_processes_set_up_an_empty_database_at_once(sql_url: str, tmp_path: Path) -> None:
    """Migrations raced by eight processes: each migration applied once, every process sees the schema."""
    from sessiontree.storage.sql.schema import MIGRATIONS, SCHEMA_VERSION

    logs = [str(tmp_path / f"w{i}.log") for i in range(8)]
    start_at = time.time() + 0.5
    join_all([start(set_up, sql_url, log, start_at) for log in logs], timeout=60)
    records = [r for log in logs for r in read_log(log)]
    assert [r["version"] for r in records] == [SCHEMA_VERSION] * 8
    applied = sorted(a for r in records for a in r["applied"])
    assert applied == [f"{m.version}: {m.description}" for m in MIGRATIONS]  # each once, by someone


def test_processes_opening_new_sqlite_files_together_all_wait_for_each_other(tmp_path: Path) -> None:
    """Turning a new file to WAL mode takes a lock SQLite's busy timeout does not wait for: four processes
    opening the same new file at once each open it, forty files in a row (before, about one open in ten
    failed with "database is locked")."""
    urls = [f"sqlite:///{tmp_path}/fresh-{k}.db" for k in range(40)]
    logs = [str(tmp_path / f"w{i}.log") for i in range(4)]
    start_at = time.time() + 0.5
    join_all([start(open_fresh, urls, log, start_at, 0.05) for log in logs], timeout=120)
    records = [r for log in logs for r in read_log(log)]
    assert [r for r in records if r["ev"] != "opened"] == []
    assert sorted(r["url"] for r in records) == sorted(urls * 4)


def test_eight_processes_contend_for_one_session(sql_url: str, tmp_path: Path) -> None:
    sid, seed = _seed_session(sql_url)
    bursts, per_burst = 3 * SCALE, 5
    logs = [str(tmp_path / f"w{i}.log") for i in range(8)]
    start_at = time.time() + 0.5
    workers = [start(contend, sql_url, sid, log, bursts, per_burst, start_at) for log in logs]
    join_all(workers, timeout=120 * SCALE)
    records = [r for log in logs for r in read_log(log)]
    pids = {p.pid for p in workers}

    acks = [r for r in records if r["ev"] == "ack"]
    assert len(acks) == 8 * bursts * per_burst
    holds = sorted((r["began"], r["ended"], r["pid"]) for r in records if r["ev"] == "hold")
    assert len(holds) == 8 * bursts
    for (_, ended, holder), (began, _, successor) in itertools.pairwise(holds):
        assert began >= ended, f"{successor} wrote while {holder} held the lease"
    refused = [r for r in records if r["ev"] == "refused"]
    assert refused, "no writer was ever refused: the processes did not contend"
    assert {r["kind"] for r in refused} == {"locked"}
    for r in refused:
        match = OWNER.search(r["msg"])
        assert match is not None, r["msg"]
        assert int(match.group(1)) in pids - {r["pid"]}, r["msg"]

    session = stored(sql_url, sid)  # one chain: a writer that took over continued from the latest entry
    by_id = session.by_id()
    assert session.ids[0] == seed and len(session.entries) == 1 + len(acks)
    for ack in acks:
        assert by_id[ack["id"]]["message"]["content"] == f"user {ack['tag']}"
    # each hold's entries are contiguous: nobody wrote in between
    position = {entry_id: i for i, entry_id in enumerate(session.ids)}
    holds_entries: dict[str, list[int]] = {}
    for ack in acks:
        holds_entries.setdefault(ack["tag"].rsplit(".", 1)[0], []).append(position[ack["id"]])
    for hold, spots in holds_entries.items():
        assert spots == list(range(spots[0], spots[0] + per_burst)), hold


def test_thirty_two_sessions_by_four_processes(sql_url: str, tmp_path: Path) -> None:
    rounds = 12 * SCALE
    logs = [str(tmp_path / f"w{i}.log") for i in range(4)]
    start_at = time.time() + 0.5
    # an empty database: the four processes also race to apply the migrations
    workers = [start(many_sessions, sql_url, i, 8, rounds, log, start_at) for i, log in enumerate(logs)]
    join_all(workers, timeout=120 * SCALE)
    acks: dict[str, list[dict[str, object]]] = {}
    for log in logs:
        for record in read_log(log):
            acks.setdefault(record["sid"], []).append(record)
    assert len(acks) == 32

    with open_repo(sql_url) as repo:
        listed = {info.id: info for info in repo.list()}
    assert set(listed) == set(acks)
    for sid, records in acks.items():
        session = stored(sql_url, sid)
        assert session.ids == [i for r in records for i in r["ids"]]  # type: ignore[attr-defined]
        turns = [e for r in records if r.get("turn") for e in session.entries if e["id"] in r["ids"]]  # type: ignore[operator]
        assert [tag for tag, _ in turns_of(turns)] == [r["tag"] for r in records if r.get("turn")]
        assert all(turn_tag(e).startswith(f"{sid}/") for e in session.entries)  # nothing of another session
        assert listed[sid].message_count == len(session.entries)


def test_two_processes_on_one_database_never_see_lock_errors(sql_url: str, tmp_path: Path) -> None:
    """Different sessions in one store from two processes at full speed: the busy timeout absorbs every
    wait (SQLite), no call fails."""
    appends = 150 * SCALE
    logs = [str(tmp_path / f"w{i}.log") for i in range(2)]
    with open_repo(sql_url) as repo:
        repo.setup()
    start_at = time.time() + 0.5
    workers = [start(steady_writer, sql_url, i, appends, log, start_at) for i, log in enumerate(logs)]
    join_all(workers, timeout=120 * SCALE)  # a "database is locked" error would crash a worker
    for log in logs:
        records = read_log(log)
        assert len(records) == appends
        session = stored(sql_url, records[0]["sid"])
        assert session.ids == [i for r in records for i in r["ids"]]


def test_two_processes_on_one_session_take_turns_by_lease(sql_url: str, tmp_path: Path) -> None:
    """A holds the lease; B is refused with A named, takes over when A closes, and branches from the
    leaf it had read (the default ``stale_leaf``), saying so."""
    sid, seed = _seed_session(sql_url)
    a_log, b_log, go = str(tmp_path / "a.log"), str(tmp_path / "b.log"), str(tmp_path / "go")
    a = start(hold_then_write, sql_url, sid, a_log, go, ("append",))
    wait_for(a_log, lambda rs: any(r["ev"] == "ready" for r in rs))
    b = start(take_over, sql_url, sid, b_log, 3)
    wait_for(b_log, lambda rs: any(r["ev"] == "refused" for r in rs))
    Path(go).touch()
    join_all([a, b], timeout=60)

    a_records, b_records = read_log(a_log), read_log(b_log)
    refusals = [r for r in b_records if r["ev"] == "refused"]
    assert all(r["kind"] == "locked" for r in refusals)
    assert all(int(OWNER.search(r["msg"]).group(1)) == a.pid for r in refusals)  # type: ignore[union-attr]
    a_ids = [r["id"] for r in a_records if r["ev"] == "ack"] + [
        i for r in a_records if r["ev"] == "written" for i in r["ids"]
    ]
    b_acks = [r for r in b_records if r["ev"] == "ack"]
    opened = next(r for r in b_records if r["ev"] == "opened")
    assert opened["leaf"] == a_ids[0]  # B read the session after A's first entry, before its second
    assert b_acks[0]["problems"] == ["stale_leaf"]

    session = stored(sql_url, sid, chain=False)
    assert session.ids == [seed, *a_ids, *(r["id"] for r in b_acks)]
    parents = [e["parentId"] for e in session.entries]
    assert parents[3] == a_ids[0]  # B branched from the leaf it had, not from A's last entry
    assert parents[4:] == [b_acks[0]["id"], b_acks[1]["id"]]
