"""Skills on real folders: where they are found and in which order, front matter rules, bad files reported by
name (never a crash), the prompt listing and ``/skill:name`` expansion."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.agent.resources import references_line

from .resources_support import project, unreadable, write

SKILL = "---\nname: {name}\ndescription: {description}\n---\n\nBody of {name}.\n"


def skill(name: str, description: str = "does things") -> str:
    return SKILL.format(name=name, description=description)


def test_broken_front_matter_is_a_warning_naming_the_file_and_line(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "proj/.pi/skills/broken/SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
            "proj/.pi/skills/twice/SKILL.md": "---\nname: a\nname: b\ndescription: x\n---\n",
            "proj/.pi/skills/good/SKILL.md": skill("good"),
        },
        approve=True,
    )
    assert [s.name for s in res.skills] == ["good"]
    by_path = {d.path: d for d in res.diagnostics}
    broken = by_path[str(Path(res.cwd) / ".pi/skills/broken/SKILL.md")]
    assert broken.kind == "warning" and broken.line == 4 and "invalid front matter" in broken.message
    assert str(broken).startswith(f"{broken.path}:4: ")
    twice = by_path[str(Path(res.cwd) / ".pi/skills/twice/SKILL.md")]
    assert "repeated key" in twice.message and twice.line == 3


def test_description_is_required_and_name_rules_only_warn(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "proj/.pi/skills/no-desc/SKILL.md": "---\nname: no-desc\n---\n",
            "proj/.pi/skills/Bad--Name-/SKILL.md": "---\ndescription: kept\n---\n",
            "proj/.pi/skills/long/SKILL.md": skill("long", "d" * 1100),
            "proj/.pi/skills/plain.md": "no front matter: not a skill, no warning\n",
            "proj/.pi/skills/flags/SKILL.md": "---\ndescription: x\ndisable-model-invocation: yes\n---\n",
        },
        approve=True,
    )
    assert [s.name for s in res.skills] == ["Bad--Name-", "flags", "long"]
    assert res.skills[1].disable_model_invocation is False  # YAML 1.2: "yes" is a string, as in pi
    messages = [(Path(d.path or "").parent.name, d.message) for d in res.diagnostics]
    assert [m for m in messages if m[0] == "Bad--Name-"] == [
        ("Bad--Name-", "skill name should use only lowercase letters a-z, digits and hyphens"),
        ("Bad--Name-", "skill name should not start or end with a hyphen"),
        ("Bad--Name-", "skill name should not contain two hyphens in a row"),
    ]
    assert any(m[0] == "no-desc" and "no description" in m[1] for m in messages)
    assert any(m[0] == "long" and "1024" in m[1] for m in messages)
    assert not any(m[0] == "skills" for m in messages)  # plain.md: silent


def test_unreadable_and_huge_skill_files_are_reported_not_fatal(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    bad = unreadable(root / "proj/.pi/skills/bad/SKILL.md")
    res = project(
        tmp_path,
        {
            "proj/.pi/skills/huge/SKILL.md": skill("huge") + "x" * 10_000,
            "proj/.pi/skills/ok/SKILL.md": skill("ok"),
        },
        approve=True,
        max_file_bytes=8192,
    )
    assert [s.name for s in res.skills] == ["ok"]
    by_path = {d.path: d.message for d in res.diagnostics}
    assert "cannot be read" in by_path[str(bad)]
    assert "limit" in by_path[str(root / "proj/.pi/skills/huge/SKILL.md")]


def test_discovery_order_first_name_wins_and_symlinked_copies_load_once(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    res = project(
        tmp_path,
        {
            "proj/.git/HEAD": "ref: refs/heads/main\n",
            "proj/.pi/skills/zeta/SKILL.md": skill("zeta"),
            "proj/.pi/skills/Alpha/SKILL.md": skill("alpha"),
            "proj/.pi/skills/dup/SKILL.md": skill("shared", "project copy"),
            "proj/.agents/skills/deep/er/SKILL.md": skill("deep"),
            "proj/.agents/skills/notes/guide.md": "---\ndescription: a guide\n---\n",
            "proj/.agents/skills/root.md": "---\ndescription: root files of .agents/skills are no skills\n---\n",
            ".agents/skills/above-git-root/SKILL.md": skill("above"),
            "home/.pi/agent/skills/shared/SKILL.md": skill("shared", "user copy"),
            "home/.pi/agent/skills/card.md": "---\ndescription: a root-level skill file\n---\n",
            "home/.agents/skills/mine/SKILL.md": skill("mine"),
            "proj/.pi/skills/node_modules/x/SKILL.md": skill("nm"),
            "proj/.pi/skills/.hidden/SKILL.md": skill("hidden"),
            "proj/.pi/skills/.gitignore": "skip*/\n",
            "proj/.pi/skills/skipped/SKILL.md": skill("skipped"),
        },
        approve=True,
    )
    os.symlink(root / "proj/.pi/skills/zeta", root / "home/.agents/skills/zeta-link")
    names = [s.name for s in res.skills]
    assert names == ["alpha", "shared", "zeta", "deep", "notes", "skills", "mine"]
    assert res.skills[1].description == "project copy"
    [collision] = [d for d in res.diagnostics if d.kind == "collision"]
    assert collision.name == "shared" and collision.winner == res.skills[1].file_path
    assert res.skills[4].file_path.endswith(".agents/skills/notes/guide.md")
    # A root-level file without a name is named after the skills folder, as in pi.
    assert res.skills[5].file_path.endswith("card.md") and res.skills[5].base_dir == str(
        root / "home/.pi/agent/skills"
    )
    again = project(tmp_path, {}, approve=True)  # now with the symlink: zeta is still loaded once
    assert [s.name for s in again.skills] == names
    sources = {s.name: s.source_info.to_dict() for s in again.skills}
    assert sources["deep"]["baseDir"] == str(root / "proj/.agents") and sources["deep"]["scope"] == "project"
    assert sources["mine"] == {
        "path": str(root / "home/.agents/skills/mine/SKILL.md"),
        "source": "auto",
        "scope": "user",
        "origin": "top-level",
        "baseDir": str(root / "home/.agents"),
    }


def test_a_symlink_loop_does_not_hang(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    write(root, {"home/.pi/agent/skills/a/b/SKILL.md": skill("b")})
    os.symlink(root / "home/.pi/agent/skills", root / "home/.pi/agent/skills/a/loop")
    res = project(tmp_path, {})
    assert [s.name for s in res.skills] == ["b"]


def test_the_prompt_lists_visible_skills_escaped(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "home/.pi/agent/skills/pdf/SKILL.md": skill("pdf", "Tables & <text> from 'PDFs'"),
            "home/.pi/agent/skills/quiet/SKILL.md": "---\ndescription: q\ndisable-model-invocation: true\n---\n",
        },
    )
    body = next(s.body for s in res.sections() if s.name == "skills")
    assert "<name>pdf</name>" in body and "quiet" not in body
    assert "<description>Tables &amp; &lt;text&gt; from &apos;PDFs&apos;</description>" in body
    only_quiet = project(
        tmp_path / "b",
        {"home/.pi/agent/skills/q/SKILL.md": "---\ndescription: q\ndisable-model-invocation: true\n---\n"},
    )
    assert "skills" not in [s.name for s in only_quiet.sections()]
    no_reader = project(tmp_path / "c", {"home/.pi/agent/skills/pdf/SKILL.md": skill("pdf")}, tools=["edit"])
    assert "skills" not in [s.name for s in no_reader.sections()]


def test_skill_command_expansion(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "home/.pi/agent/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: d\n---\n\n  Run it.  \n\n",
            "home/.pi/agent/skills/quiet/SKILL.md": "---\ndescription: q\ndisable-model-invocation: true\n---\nQ",
        },
    )
    pdf = res.skills[0]
    block = (
        f'<skill name="pdf" location="{pdf.file_path}">\n{references_line(pdf.base_dir)}\n\nRun it.\n</skill>'
    )
    assert res.expand("/skill:pdf") == block
    assert res.expand("/skill:pdf   page 3\n ") == f"{block}\n\npage 3"
    assert res.expand("/skill:quiet go").endswith("\n\nQ\n</skill>\n\ngo")  # hidden skills still expand
    assert res.expand("/skill:missing x") == "/skill:missing x"
    assert res.expand("/skill:pdf\nnext line") == "/skill:pdf\nnext line"  # the name runs to the first space
    assert [c.name for c in res.commands()] == ["skill:pdf", "skill:quiet"]


def test_a_skill_file_gone_bad_after_loading_leaves_the_input_and_warns(tmp_path: Path) -> None:
    res = project(tmp_path, {"home/.pi/agent/skills/pdf/SKILL.md": skill("pdf")})
    Path(res.skills[0].file_path).write_text("---\ndescription: [oops\n---\n")
    assert res.expand("/skill:pdf now") == "/skill:pdf now"
    assert (
        res.diagnostics[-1].path == res.skills[0].file_path and "not expanded" in res.diagnostics[-1].message
    )


def test_explicit_skill_paths_come_last_and_bad_ones_warn(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    write(root, {"extra/one/SKILL.md": skill("one"), "extra/notes.txt": "x", "lone.md": skill("lone")})
    res = project(
        tmp_path,
        {"home/.pi/agent/skills/user/SKILL.md": skill("user")},
        skill_paths=[str(root / "extra"), str(root / "lone.md"), str(root / "extra/notes.txt"), "missing"],
    )
    assert [s.name for s in res.skills] == ["user", "one", "lone"]
    assert res.skills[1].source_info.to_dict()["scope"] == "temporary"
    assert [(d.kind, d.message) for d in res.diagnostics] == [
        ("warning", "skill path is not a markdown file"),
        ("warning", "skill path does not exist"),
    ]
    assert project(tmp_path, {}, no_skills=True, skill_paths=[str(root / "lone.md")]).skills[0].name == "lone"
