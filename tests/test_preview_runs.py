"""``decode_run_for_preview``: many neighbouring lines decoded by one call give what each line decoded by
itself gives (``decode_for_preview``), whatever the lines hold, so ``tree --active`` prints the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.format.pi_json import dumps_bytes
from sessiontree.storage.jsonl import JsonlStore
from sessiontree.tree import views
from sessiontree.tree.views import decode_for_preview, decode_run_for_preview, entry_preview
from tests.test_views import _MESSAGE_SHAPES, ODD_VALUES

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}


def _entry(n: int, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "message",
        "id": f"e{n}",
        "parentId": f"e{n - 1}" if n else None,
        "timestamp": "2025-01-01T00:00:00.000Z",
    }
    entry.update(fields)
    return entry


def _lines() -> list[bytes]:
    """Pi's messages with odd ones among them: every odd shape a preview record may refuse, messages whose
    keys are not in pi's order, entries of other types, deep nesting, CRLF endings, blank and bad lines."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "plain text", "timestamp": 1},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}],
        },
        {"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "a\nb"}]},
        *_MESSAGE_SHAPES,
        *({"role": value, "content": value} for value in ODD_VALUES),
        *({"role": "user", "content": value} for value in ODD_VALUES),
    ]
    out: list[bytes] = [dumps_bytes(HEADER)]
    n = 0

    def plain() -> bytes:
        nonlocal n
        n += 1
        return dumps_bytes(_entry(n - 1, message={"role": "user", "content": f"m{n - 1}", "timestamp": 1}))

    for k, message in enumerate(messages):
        # a run that an odd message may send down the line-by-line path
        out += [plain(), plain(), dumps_bytes(_entry(n, message=message))]
        n += 1
        if k % 11 == 3:  # a repeated "type": the last one counts
            out.append(dumps_bytes(_entry(n, message=message))[:-1] + b',"type":"custom"}')
            n += 1
        out.append(dumps_bytes(_entry(n, type="model_change", provider="p", modelId="m")))
        n += 1
        # a run of lines the records take, but for a message whose keys are not in pi's order (a dict, as
        # decode_for_preview makes it)
        out.append(plain())
        reordered = {"id": f"e{n}", "type": "message", "parentId": f"e{n - 1}", "message": {"role": "user"}}
        out += [json.dumps(reordered).encode(), plain()]
        n += 1
        if k % 13 == 4:
            out[-1] += b"\r"
        if k % 17 == 5:
            out.append(b"")
        if k % 19 == 6:
            out.append(b"{not json")
        out.append(plain())
    deep = _entry(n, message={"role": "user", "content": [{"type": "text", "text": "x", "deep": []}]})
    line = dumps_bytes(deep).replace(b'"deep":[]', b'"deep":' + b"[" * 3000 + b"]" * 3000)
    out.append(line)
    out.extend(dumps_bytes(_entry(n + 1 + i, message={"role": "user", "content": "t"})) for i in range(3))
    return out


class _Counting:
    """The preview decoder, counting the lines its ``decode_lines`` calls gave."""

    def __init__(self, decoder: Any) -> None:
        self.decoder, self.lines = decoder, 0

    def decode(self, data: Any) -> Any:
        return self.decoder.decode(data)

    def decode_lines(self, data: Any) -> Any:
        got = self.decoder.decode_lines(data)
        self.lines += len(got)
        return got


@pytest.mark.parametrize("step", [1, 2])
def test_runs_decode_as_each_line_alone(tmp_path: Path, step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _Counting(views._preview_decoder)
    monkeypatch.setattr(views, "_preview_decoder", counting)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(_lines()) + b"\n")
    store = JsonlStore.open(path, read_only=True)
    try:
        positions = list(range(0, len(store), step))
        types = store.types_at(positions)
        got: list[Any] = []
        done = 0
        for block, spans in store.line_runs_at(positions):
            got += decode_run_for_preview(block, spans, types[done : done + len(spans)])
            done += len(spans)
        alone = [decode_for_preview(store.raw_at(i)) for i in positions]
        assert len(got) == len(alone) > 150 // step
        for i, a, b in zip(positions, got, alone, strict=True):
            assert type(a) is type(b) and a == b, store.id_at(i)
            for width in (8, 40, 100):
                assert entry_preview(a, line_width=width) == entry_preview(b, line_width=width)
        assert sum(isinstance(v, dict) for v in got) > 20 // step  # the general path was taken too
        assert sum(not isinstance(v, dict) for v in got) > 100 // step
        if step == 1:  # runs were decoded by one call each
            assert counting.lines > 60
    finally:
        store.close()


def test_a_run_given_odd_spans_of_one_block() -> None:
    """One block, lines separated by CRLF and blank lines, a run ending in a message of an odd shape."""
    good = dumps_bytes(_entry(1, message={"role": "user", "content": "hi"}))
    odd = dumps_bytes(_entry(2, message={"role": "someone", "content": 5}))
    block = good + b"\r\n\n" + good + b"\n" + odd
    spans = [(0, len(good)), (len(good) + 3, 2 * len(good) + 3), (2 * len(good) + 4, len(block))]
    got = decode_run_for_preview(block, spans, ["message"] * 3)
    assert got == [decode_for_preview(block[a:b]) for a, b in spans]
    assert isinstance(got[2], dict) and not isinstance(got[0], dict)
    assert decode_run_for_preview(b"", [], []) == []


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"limit": 7},
        {"limit": 0},
        {"depth": 0},
        {"depth": 1, "limit": 40},
        {"width": 30},
    ],
)
def test_tree_lines_read_in_batches_print_what_one_read_per_row_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """``sessiontree tree`` decodes the previews of a batch of rows in file order (``_prefetched``): the lines
    are those of one read per row, over branches, odd lines and a batch smaller than the tree; with the
    batches, no row of the file store reads its line alone."""
    from sessiontree import SessionManager
    from sessiontree.cli import _tree_view
    from sessiontree.cli._common import Styler

    path = tmp_path / "s.jsonl"
    lines = _lines()
    for k in range(5, len(lines), 9):  # branches: now and then a parent further back
        if lines[k].startswith(b'{"type":"message","id":"e') and lines[k].endswith(b"}"):
            entry = json.loads(lines[k])
            entry["parentId"] = f"e{max(0, int(entry['id'][1:]) - 4)}"
            lines[k] = dumps_bytes(entry)
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(_tree_view, "_PREVIEW_BATCH", 16)
    manager = SessionManager.open(path, read_only=True)
    try:
        tree_options = _tree_view.TreeOptions(**options)
        style = Styler(False)
        store = manager.index.store
        alone = 0
        real_raw_at = store.raw_at

        def counted(i: int) -> bytes:
            nonlocal alone
            alone += 1
            return real_raw_at(i)

        monkeypatch.setattr(store, "raw_at", counted)
        batched = list(_tree_view.tree_lines(manager, tree_options, style))
        assert alone == 0
        real_prefetched = _tree_view._prefetched

        def one_by_one(*args: Any) -> Any:
            for row, folded, _ in real_prefetched(*args):
                yield row, folded, {}

        monkeypatch.setattr(_tree_view, "_prefetched", one_by_one)
        assert batched == list(_tree_view.tree_lines(manager, tree_options, style))
        assert alone > 0 or options.get("limit") == 0
        assert len(batched) > (options.get("limit") or 0)
        if not options:
            assert any("├─" in line for line in batched)  # a tree with branches
    finally:
        manager.close()


def test_a_batch_of_tree_rows_holds_their_previews_not_their_entries(tmp_path: Path) -> None:
    """A batch of rows keeps each entry only while its preview is made: 300 tool results of 100 KB (30 MB of
    lines, one batch) are drawn within a few megabytes of Python memory."""
    import tracemalloc

    from sessiontree import SessionManager
    from sessiontree.cli import _tree_view
    from sessiontree.cli._common import Styler

    big = "x" * 100_000
    out = [dumps_bytes(HEADER)]
    for n in range(300):
        message = {
            "role": "toolResult",
            "toolName": "read",
            "content": [{"type": "text", "text": f"{n} {big}"}],
        }
        out.append(dumps_bytes(_entry(n, message=message)))
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    manager = SessionManager.open(path, read_only=True)
    try:
        tracemalloc.start()
        try:
            lines = list(_tree_view.tree_lines(manager, _tree_view.TreeOptions(), Styler(False)))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        manager.close()
    assert len(lines) > 300 and "read: 299 xxx" in lines[299]
    assert peak < 8_000_000, peak
