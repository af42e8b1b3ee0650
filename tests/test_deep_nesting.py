"""Values nested a thousand deep (valid JSON, and JavaScript writes them) are shown abbreviated, never a
``RecursionError``: previews, the tree, the context listing, the exports, and the body sent to a provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sessiontree.cli import app
from sessiontree.format.safe_text import short_repr
from sessiontree.llm.providers._common import clean_strings

DEPTH = 1000
DEEP_LIST = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a":' * DEPTH + "1" + "}" * DEPTH


def _deep_session(tmp_path: Path) -> Path:
    header = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'
    lines = [
        header,
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        f'"message":{{"role":{DEEP_LIST},"content":"x","timestamp":1}}}}',
        '{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"x",'
        f'"arguments":{DEEP_OBJECT}}}],"timestamp":1}}}}',
        '{"type":"message","id":"a3","parentId":"a2","timestamp":"2025-01-01T00:00:03.000Z",'
        f'"message":{{"role":"user","content":{DEEP_LIST},"timestamp":1}}}}',
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "args",
    [["tree"], ["tree", "--active"], ["context"], ["stats"], ["check"], ["export", "-f", "md"], ["export"]],
)
def test_every_command_shows_deep_values_abbreviated(tmp_path: Path, args: list[str]) -> None:
    path = _deep_session(tmp_path)
    extra = ["-o", str(tmp_path / "out")] if args[0] == "export" else []
    result = CliRunner().invoke(app, [*args, str(path), *extra])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    if args[0] in ("tree", "context"):
        assert "[[[[" in result.output and "…" in result.output  # abbreviated, not hidden
        assert "x(a={'a': {'a':" in result.output


def test_short_repr_is_repr_for_shallow_values_and_bounded_for_deep_ones() -> None:
    value = {"a": [1, "x", {"b": None, "c": 2.5}], "d": True}
    assert short_repr(value) == repr(value)
    deep: list[object] = []
    node = deep
    for _ in range(5000):
        child: list[object] = []
        node.append(child)
        node = child
    text = short_repr(deep, 200)
    assert text.startswith("[[[[") and "[…]" in text and len(text) <= 200
    assert short_repr(list(range(1_000_000)), 30) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9…"


def test_provider_bodies_clean_deep_values_without_recursion() -> None:
    deep: dict[str, object] = {"text": "ok \ud800"}
    for _ in range(5000):
        deep = {"a": [deep]}
    cleaned = clean_strings(deep)
    node = cleaned
    for _ in range(5000):
        node = node["a"][0]
    assert node == {"text": "ok "}


def test_a_deep_value_in_a_large_session_opens_and_closes_with_the_caches(tmp_path: Path) -> None:
    """A session of 1 MiB or more keeps its decoded entries in the body cache at close; an entry nested too
    deep for msgpack is left out of it, not an error out of close()."""
    from sessiontree import SessionManager

    header = '{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'
    lines = [header]
    parent = "null"
    for n in range(300):
        text = "x" * 4000
        lines.append(
            f'{{"type":"message","id":"m{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z",'
            f'"message":{{"role":"user","content":"{text}","timestamp":1}}}}'
        )
        parent = f'"m{n}"'
    lines.append(
        f'{{"type":"message","id":"deep","parentId":{parent},"timestamp":"2025-01-01T00:00:02.000Z",'
        f'"message":{{"role":"user","content":[{{"type":"text","text":"t","extra":{DEEP_OBJECT}}}],"timestamp":1}}}}'
    )
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 1 << 20
    for _ in range(2):  # the second open reads through the caches the first one wrote
        manager = SessionManager.open(path, read_only=True)
        assert len(manager.build_session_context().messages) == 301
        manager.close()
