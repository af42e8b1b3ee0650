"""Prompt templates on real folders, pi's argument splitting and placeholders, and the commands listing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiontree.agent.resources import parse_command_args, substitute_args

from .resources_support import project, unreadable, write


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("a b  c", ["a", "b", "c"]),
        ('"two words" x', ["two words", "x"]),
        ("it's fine", ["it's", "fine"]),  # quotes open only at the start of an argument
        ('"" x', ["", "x"]),
        ('"say \\"hi\\"" x', ['say "hi"', "x"]),
        ('"unclosed arg', ['"unclosed', "arg"]),
        ("'single' \"double\"", ["single", "double"]),
        ("tab\tnew\nline\u3000wide", ["tab", "new", "line", "wide"]),
        ("", []),
    ],
)
def test_arguments_split_like_pi(text: str, args: list[str]) -> None:
    assert parse_command_args(text) == args


def test_placeholders() -> None:
    args = ["a", "b", "c"]
    assert substitute_args("$1-$2-$3-$4-$0|$10", args) == "a-b-c--|"
    assert substitute_args("$@|$ARGUMENTS|${@:2}|${@:2:1}|${@:0}|${@:9}", args) == "a b c|a b c|b c|b|a b c|"
    assert substitute_args("${1:-x}|${4:-x}|${@:-none}|${ARGUMENTS:-none}", args) == "a|x|a b c|a b c"
    assert substitute_args("${@:-none}|${1:-d}", []) == "none|d"
    assert substitute_args("$1 stays", ["$2 ${@}"]) == "$2 ${@} stays"  # no recursion
    assert substitute_args("$\u0661 ${\u0661:-x}", ["a"]) == "$\u0661 ${\u0661:-x}"  # ASCII digits only
    assert substitute_args("$99999999999999999999", args) == ""


def test_templates_are_found_named_and_described_like_pi(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "proj/.pi/prompts/review.md": "---\ndescription: Review\nargument-hint: <file>\n---\n\nReview $1\n\n",
            "proj/.pi/prompts/raw.md": "Raw body $@\r\nline two\r\n",
            "proj/.pi/prompts/long.md": "\n\n" + "é" * 59 + "😀 and more\n",
            "proj/.pi/prompts/sub/deep.md": "not loaded\n",
            "proj/.pi/prompts/.dot.md": "not loaded\n",
            "proj/.pi/prompts/notes.txt": "not loaded\n",
            "proj/.pi/prompts/.gitignore": "ignored.md\n",
            "proj/.pi/prompts/ignored.md": "not loaded\n",
            "home/.pi/agent/prompts/review.md": "user review\n",
            "home/.pi/agent/prompts/user.md": "---\ndescription: ''\n---\nFirst line wins\n",
        },
        approve=True,
    )
    assert [t.name for t in res.templates] == ["long", "raw", "review", "user"]
    long, raw, review, user = res.templates
    assert long.description == "é" * 59 + "..."  # 60 UTF-16 units: the emoji would be cut in half
    assert raw.content == "Raw body $@\nline two\n" and raw.description == "Raw body $@"
    assert (review.content, review.argument_hint) == ("Review $1", "<file>")
    assert user.description == "First line wins"
    [collision] = [d for d in res.diagnostics if d.kind == "collision"]
    assert collision.name == "review" and collision.path.endswith("agent/prompts/review.md")
    assert res.expand("/review src/a.py") == "Review src/a.py"
    assert res.expand("/raw x\ny") == "Raw body x y\nline two\n"
    assert res.expand(" /review x") == " /review x" and res.expand("/nope x") == "/nope x"
    listing = [c.to_dict() for c in res.commands()]
    assert listing[2] == {
        "name": "review",
        "description": "Review",
        "source": "prompt",
        "sourceInfo": {
            "path": review.file_path,
            "source": "auto",
            "scope": "project",
            "origin": "top-level",
            "baseDir": os.path.join(res.cwd, ".pi"),
        },
    }


def test_bad_template_files_are_reported_by_name(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    bad = unreadable(root / "home/.pi/agent/prompts/bad.md")
    res = project(
        tmp_path,
        {
            "home/.pi/agent/prompts/broken.md": "---\ndescription: 'open\n---\nbody\n",
            "home/.pi/agent/prompts/huge.md": "x" * 3000,
            "home/.pi/agent/prompts/ok.md": "fine\n",
        },
        max_file_bytes=2048,
    )
    assert [t.name for t in res.templates] == ["ok"]
    assert sorted(Path(d.path or "").name for d in res.diagnostics) == ["bad.md", "broken.md", "huge.md"]
    assert str(bad) in [d.path for d in res.diagnostics]


def test_explicit_prompt_paths(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    write(
        root,
        {"cli/ship.md": "Ship $1\n", "cli/.dot.md": "explicit folders take dot files\n", "one.md": "One\n"},
    )
    res = project(
        tmp_path,
        {"home/.pi/agent/prompts/ship.md": "user ship\n"},
        prompt_paths=[str(root / "cli"), str(root / "one.md"), str(root / "missing")],
    )
    assert [t.name for t in res.templates] == ["ship", ".dot", "one"]
    assert res.templates[1].source_info.to_dict()["baseDir"] == str(root / "cli")
    assert [(d.kind, d.path) for d in res.diagnostics if d.kind != "collision"] == [
        ("error", str(root / "missing"))
    ]
    only = project(tmp_path, {}, no_prompt_templates=True, prompt_paths=[str(root / "one.md")])
    assert [t.name for t in only.templates] == ["one"]
