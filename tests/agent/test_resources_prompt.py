"""The system prompt: pi's section order and rules logic with our wording, SYSTEM.md / APPEND_SYSTEM.md
precedence, explicit TEXT-or-FILE prompts, and the tools' one-liners."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sessiontree.agent.resources import (
    BUILTIN_TOOL_PROMPTS,
    PREAMBLE,
    ToolPrompt,
    build_sections,
    render,
    tool_prompts,
)
from sessiontree.agent.tools import coding_tools

from .resources_support import project, unreadable


def _names(res: object) -> list[str]:
    return [s.name for s in res.sections()]  # type: ignore[attr-defined]


def test_the_default_prompt_has_pis_sections_in_order(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "proj/AGENTS.md": "ctx\n",
            "home/.pi/agent/APPEND_SYSTEM.md": "addendum\n",
            "home/.pi/agent/skills/s/SKILL.md": "---\ndescription: d\n---\n",
        },
        docs="docs here",
    )
    assert _names(res) == [
        "preamble",
        "tools",
        "rules",
        "docs",
        "addendum",
        "project_context",
        "skills",
        "cwd",
    ]
    text = res.system_prompt()
    assert text.startswith(PREAMBLE + "\n\n<tools>\n- read: ")
    assert "<addendum>\naddendum\n\n</addendum>" in text
    assert text.endswith(f"<cwd>\n{res.cwd}\n</cwd>")
    assert "Current date" not in text and "<date>" not in text


def test_tool_list_and_rules_follow_the_selected_tools(tmp_path: Path) -> None:
    res = project(tmp_path, {}, tools=["read", "bash", "edit", "write"])
    tools, rules = res.sections()[1].body, res.sections()[2].body
    assert tools.split("\n\n")[0] == "\n".join(
        f"- {n}: {BUILTIN_TOOL_PROMPTS[n][0]}" for n in ("read", "bash", "edit", "write")
    )
    bullets = rules.split("\n")
    assert len(bullets) == 7  # fallback, read, edit x2, write, two fixed
    assert bullets[0].startswith("- Use bash to list")
    assert bullets[1:5] == [f"- {g}" for n in ("read", "edit", "write") for g in BUILTIN_TOOL_PROMPTS[n][1]]
    with_search = project(tmp_path / "b", {}, tools=["bash", "grep"]).sections()[2].body
    assert "Use bash to list" not in with_search  # grep/find/ls selected: no shell fallback


@pytest.mark.parametrize(
    ("names", "fallback"),
    [
        (["bash"], "Use bash to"),
        (["powershell"], "Use PowerShell to"),
        (["bash", "powershell"], "Use bash or"),
    ],
)
def test_the_shell_fallback_has_three_wordings(names: list[str], fallback: str) -> None:
    sections = build_sections(cwd="/w", tools=[ToolPrompt(n) for n in names])
    assert sections[2].body.split("\n")[0].startswith(f"- {fallback}")
    assert sections[1].body.startswith("(none)\n\n")  # no tool has a one-liner


def test_agent_tools_bring_their_own_one_liners_and_guidelines(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    res = project(tmp_path, {}, tools=tools)
    assert [t.name for t in res.tools] == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert all(t.snippet for t in res.tools)
    prompts = tool_prompts([*tools, "custom", "read"])
    assert [p.name for p in prompts][-1] == "custom" and prompts[-1].snippet == ""


def test_snippets_fold_onto_one_line_and_guidelines_are_deduplicated() -> None:
    tool = ToolPrompt.of("t", "  two\nlines \r\n here ", [" a ", "a", "", "b"])
    assert tool == ToolPrompt("t", "two lines here", ("a", "b"))
    text = render(build_sections(cwd="C:\\w\\x", tools=[tool], guidelines=["b", "extra"]))
    assert "- t: two lines here" in text
    assert text.count("- b\n") == 1 and "- extra\n" in text
    assert "<cwd>\nC:/w/x\n</cwd>" in text


def test_extra_sections_come_after_cwd_or_replace_theirs_in_place() -> None:
    sections = build_sections(cwd="/w", tools=[], extra_sections={"mcp_servers": "m", "cwd": "/elsewhere"})
    assert [(s.name, s.body) for s in sections][-2:] == [("cwd", "/elsewhere"), ("mcp_servers", "m")]
    with pytest.raises(ValueError, match="section name"):
        build_sections(cwd="/w", tools=[], extra_sections={"Bad Name": "x"})
    with pytest.raises(ValueError, match="section name"):
        build_sections(cwd="/w", tools=[], extra_sections={"preamble": "x"})


def test_project_system_md_needs_trust_and_the_agent_dirs_is_the_fallback(tmp_path: Path) -> None:
    files = {
        "proj/.pi/SYSTEM.md": "project prompt\n",
        "home/.pi/agent/SYSTEM.md": "user prompt\n",
        "proj/.pi/APPEND_SYSTEM.md": "project add\n",
        "home/.pi/agent/APPEND_SYSTEM.md": "user add\n",
    }
    trusted = project(tmp_path / "a", files, approve=True)
    assert (trusted.custom_prompt, trusted.append_prompts) == ("project prompt\n", ["project add\n"])
    assert _names(trusted) == ["preamble", "addendum", "cwd"]  # a custom prompt replaces tools/rules/docs
    untrusted = project(tmp_path / "b", files)
    assert (untrusted.custom_prompt, untrusted.append_prompts) == ("user prompt\n", ["user add\n"])
    assert untrusted.custom_prompt_source is not None and untrusted.custom_prompt_source.endswith(
        "agent/SYSTEM.md"
    )


def test_explicit_prompts_are_text_or_a_file_relative_to_cwd(tmp_path: Path) -> None:
    files = {
        "proj/prompt.md": "\ufefffrom file",
        "proj/add.md": "add file",
        "home/.pi/agent/APPEND_SYSTEM.md": "no",
    }
    res = project(tmp_path, files, system_prompt="prompt.md", append_system_prompt=["add.md", "literal", ""])
    assert res.custom_prompt == "from file"
    assert res.append_prompts == ["add file", "literal"]
    assert res.append_sources == [os.path.join(res.cwd, "add.md")]
    assert res.sections()[1].body == "add file\n\nliteral"
    literal = project(tmp_path / "b", {}, system_prompt="Just this text.", append_system_prompt="one")
    assert (literal.custom_prompt, literal.custom_prompt_source, literal.append_prompts) == (
        "Just this text.",
        None,
        ["one"],
    )


def test_an_empty_append_list_replaces_discovery_and_an_empty_prompt_means_the_default(
    tmp_path: Path,
) -> None:
    res = project(
        tmp_path,
        {"home/.pi/agent/APPEND_SYSTEM.md": "not used", "home/.pi/agent/SYSTEM.md": ""},
        append_system_prompt=[],
    )
    assert res.append_prompts == [] and res.custom_prompt is None
    assert _names(res) == ["preamble", "tools", "rules", "cwd"]


def test_a_prompt_file_that_cannot_be_read_is_reported(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    bad = unreadable(root / "proj/bad.md")
    unreadable(root / "home/.pi/agent/APPEND_SYSTEM.md")
    res = project(tmp_path, {}, system_prompt=str(bad))
    assert res.custom_prompt == str(bad)  # pi's rule: an unreadable --system-prompt file is used as text
    paths = sorted(d.path or "" for d in res.diagnostics)
    assert paths == sorted([str(bad), str(root / "home/.pi/agent/APPEND_SYSTEM.md")])
    assert res.append_prompts == []


def test_text_that_cannot_be_a_path_is_text(tmp_path: Path) -> None:
    weird = "a\x00b" + "x" * 5000
    assert project(tmp_path, {}, system_prompt=weird).custom_prompt == weird


def test_to_dict_lists_what_was_loaded(tmp_path: Path) -> None:
    res = project(
        tmp_path,
        {
            "proj/AGENTS.md": "ctx\n",
            "home/.pi/agent/skills/s/SKILL.md": "---\ndescription: d\n---\n",
            "home/.pi/agent/skills/t/SKILL.md": "---\nname: t\n---\n",
            "home/.pi/agent/prompts/p.md": "P $1\n",
        },
    )
    data = json.loads(json.dumps(res.to_dict()))
    assert data["contextFiles"] == [{"path": os.path.join(res.cwd, "AGENTS.md"), "content": "ctx\n"}]
    assert [s["name"] for s in data["skills"]] == ["s"] and data["skills"][0]["sourceInfo"][
        "source"
    ] == "auto"
    assert [t["name"] for t in data["promptTemplates"]] == ["p"]
    assert data["trust"] == {
        "trusted": True,
        "reason": "nothing_to_trust",
        "needsTrust": False,
        "skipped": [],
    }
    assert data["tools"] == ["read", "bash", "edit", "write"]
    assert [d["type"] for d in data["diagnostics"]] == ["warning"] and res.warnings == res.diagnostics
