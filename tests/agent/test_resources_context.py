"""Context files on real folders: one per folder in candidate order, the agent dir first, then every
ancestor outermost first; bad files are reported and skipped, never fatal."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.agent.resources import load_context_files

from .resources_support import project, unreadable, write


def test_agent_dir_first_then_ancestors_outermost_first(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    write(
        root,
        {
            "agent/CLAUDE.md": "agent\n",
            "a/AGENTS.md": "a\n",
            "a/CLAUDE.md": "not read\n",
            "a/b/c/AGENTS.override.md": "override\n",
            "a/b/c/AGENTS.md": "not read either\n",
        },
    )
    files, problems = load_context_files(str(root / "a/b/c"), str(root / "agent"))
    assert [(f.path, f.content) for f in files] == [
        (str(root / "agent/CLAUDE.md"), "agent\n"),
        (str(root / "a/AGENTS.md"), "a\n"),
        (str(root / "a/b/c/AGENTS.override.md"), "override\n"),
    ]
    assert problems == []


def test_contents_are_bom_stripped_and_otherwise_untouched(tmp_path: Path) -> None:
    res = project(tmp_path, {"proj/AGENTS.md": "\ufeff  spaced\r\nline\n\n"})
    assert [f.content for f in res.context_files] == ["  spaced\r\nline\n\n"]
    assert '<project_instructions path="' in res.system_prompt()
    assert "  spaced\r\nline\n\n\n</project_instructions>" in res.system_prompt()


def test_no_context_files_leaves_them_out(tmp_path: Path) -> None:
    res = project(tmp_path, {"proj/AGENTS.md": "x\n"}, no_context_files=True)
    assert res.context_files == []
    assert [s.name for s in res.sections()] == ["preamble", "tools", "rules", "cwd"]


def test_an_unreadable_candidate_is_reported_and_the_next_one_used(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    bad = unreadable(root / "proj/AGENTS.md")
    write(root, {"proj/CLAUDE.md": "fallback\n"})
    res = project(tmp_path, {})
    assert [f.content for f in res.context_files] == ["fallback\n"]
    [warning] = [d for d in res.diagnostics if d.path == str(bad)]
    assert warning.kind == "warning" and "cannot be read" in warning.message


def test_a_folder_named_agents_md_is_not_a_context_file(tmp_path: Path) -> None:
    res = project(tmp_path, {"proj/AGENTS.md/inner.txt": "x", "proj/CLAUDE.md": "the file\n"})
    assert [f.content for f in res.context_files] == ["the file\n"]


def test_a_huge_file_is_skipped_with_a_warning_naming_it(tmp_path: Path) -> None:
    res = project(tmp_path, {"proj/AGENTS.md": "x" * 5000, "proj/CLAUDE.md": "small\n"}, max_file_bytes=4096)
    assert [f.content for f in res.context_files] == ["small\n"]
    [warning] = res.diagnostics
    assert warning.path.endswith("proj/AGENTS.md") and "5000 bytes" in warning.message
    assert "proj/AGENTS.md: 5000 bytes" in str(warning)


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    res = project(tmp_path, {"proj/AGENTS.md": b"ok \xff\xfe end\n"})
    assert [f.content for f in res.context_files] == ["ok \ufffd\ufffd end\n"]


def test_a_path_is_used_once_when_cwd_is_inside_the_agent_dir(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    write(root, {"agent/AGENTS.md": "agent\n", "agent/sub/AGENTS.md": "sub\n"})
    files, _ = load_context_files(str(root / "agent/sub"), str(root / "agent"))
    assert [f.content for f in files] == ["agent\n", "sub\n"]


def test_a_nested_linked_worktree_replaces_the_main_checkouts_file(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    write(
        root,
        {
            "main/.git/HEAD": "ref: refs/heads/main\n",
            "main/.git/worktrees/wt/HEAD": "ref: refs/heads/wt\n",
            "main/.git/worktrees/wt/commondir": "../..\n",
            "main/AGENTS.md": "main checkout\n",
            "main/trees/wt/.git": "gitdir: ../../.git/worktrees/wt\n",
            "main/trees/wt/AGENTS.md": "worktree copy\n",
            "main/trees/AGENTS.md": "between\n",
        },
    )
    files, _ = load_context_files(str(root / "main/trees/wt"), str(root / "agent"))
    assert [f.content for f in files] == ["between\n", "worktree copy\n"]
    # The main checkout itself keeps its file.
    files, _ = load_context_files(str(root / "main"), str(root / "agent"))
    assert [f.content for f in files] == ["main checkout\n"]
