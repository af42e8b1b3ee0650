"""Our prompt resources against pi 1.6.0's own, scenario by scenario: the temp project of
tests/pi_outline/project.json is built on disk, loaded with ``load_resources``, reduced to the same outline
tests/pi_outline/record.mjs wrote from pi's code (tests/agent/data/pi_prompt_outline.json) and compared:
sections and their order, context files, prompt sources, skills, templates, commands, diagnostics and the
expansion of every input.

Deliberate differences, and only these: our ``bash`` tool has no guideline (pi's tells the model about the
``PI_*`` variables its bash exports; ours exports none); pi's ``<docs>`` text is its own (we pass ours
through ``docs=`` and compare the section's place only); we add one warning naming what an untrusted
project's trust rule skipped (pi skips silently).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessiontree.agent.resources import (
    PROJECT_CONTEXT_HEADING,
    Resources,
    load_resources,
    references_line,
    skills_section,
)

HERE = Path(__file__).parent
SPEC = json.loads((HERE.parent / "pi_outline" / "project.json").read_text("utf-8"))
OUTLINE = json.loads((HERE / "data" / "pi_prompt_outline.json").read_text("utf-8"))
RECORDED = {s["name"]: s for s in OUTLINE["scenarios"]}
DOCS = "Where sessiontree's own documentation lives:\n- README.md"


def build_project(root: Path, scenario: dict[str, Any]) -> None:
    """The temp project exactly as record.mjs builds it."""
    removed = scenario.get("remove", [])
    files = {**SPEC["files"], **scenario.get("files", {})}
    for rel, content in files.items():
        if any(rel == r or rel.startswith(f"{r}/") for r in removed):
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.replace("{root}", str(root)).encode("utf-8"))


def load(root: Path, scenario: dict[str, Any]) -> Resources:
    def fill(value: str) -> str:
        return value.replace("{root}", str(root))

    approve = scenario.get("approve")
    append = scenario.get("append_system_prompt")
    return load_resources(
        root / SPEC["cwd"],
        root / SPEC["agent_dir"],
        home=root / SPEC["home"],
        approve=approve is True,
        no_approve=approve is False,
        no_context_files=scenario.get("no_context_files", False),
        system_prompt=fill(scenario["system_prompt"]) if "system_prompt" in scenario else None,
        append_system_prompt=[fill(a) for a in append] if append is not None else None,
        tools=scenario.get("tools"),
        skill_paths=[fill(p) for p in scenario.get("skill_paths", [])],
        prompt_paths=[fill(p) for p in scenario.get("prompt_paths", [])],
        docs=DOCS,
    )


def outline(res: Resources, root: Path) -> dict[str, Any]:
    """Our resources reduced to record.mjs's outline (our fixed sentences swapped for its placeholders)."""

    def swap(text: Any) -> Any:
        return text.replace(str(root), "{root}") if isinstance(text, str) else text

    def info(source_info: Any) -> dict[str, Any]:
        d = source_info.to_dict()
        return {k: swap(d.get(k)) for k in ("path", "source", "scope", "origin", "baseDir")}

    sections = []
    for section in res.sections():
        entry: dict[str, Any] = {"name": section.name}
        body = section.body
        if section.name == "preamble":
            if res.custom_prompt:
                entry["custom"] = swap(body)
            else:
                entry["kind"] = "default"
        elif section.name == "tools":
            listed, trailer = body.split("\n\n")
            entry["tools"] = (
                [] if listed == "(none)" else [line[2 : line.index(":")] for line in listed.split("\n")]
            )
            entry["trailerLines"] = len(trailer.split("\n"))
        elif section.name == "rules":
            bullets = [line.removeprefix("- ") for line in body.split("\n")]
            owners = [next((t.name for t in res.tools if b in t.guidelines), None) for b in bullets]
            entry["origins"] = [
                owner or ("fixed" if i >= len(bullets) - 2 else "fallback") for i, owner in enumerate(owners)
            ]
        elif section.name == "docs":
            pass
        elif section.name == "project_context":
            assert body.startswith(PROJECT_CONTEXT_HEADING + "\n\n")
            entry["body"] = swap("{heading}" + body[len(PROJECT_CONTEXT_HEADING) :])
        elif section.name == "skills":
            cut = body.index("\n\n<available_skills>")
            intro = body[:cut]
            kinds = ("read", "bash", "indirect")
            entry["reader"] = next(
                k for k in kinds if (skills_section(res.skills, k) or "").startswith(intro)
            )
            entry["body"] = swap("{intro}" + body[cut:])
        else:
            entry["body"] = swap(body)
        sections.append(entry)

    by_path = {s.file_path: s for s in res.skills}

    def expand(text: str) -> str:
        out = res.expand(text)
        if out != text and out.startswith("<skill "):
            lines = out.split("\n")
            location = lines[0].split('location="', 1)[1].split('"', 1)[0]
            assert lines[1] == references_line(by_path[location].base_dir)
            lines[1] = "{references}"
            out = "\n".join(lines)
        return swap(out)

    trust_warning = os.path.join(res.cwd, ".pi")
    return {
        "name": None,
        "trusted": res.trust.trusted,
        "activeTools": [t.name for t in res.tools],
        "sections": sections,
        "contextFiles": [
            {"path": swap(f.path), "content": f.content}
            for f in res.context_files
            if f.path.startswith(str(root))
        ],
        "systemPromptSource": swap(res.custom_prompt_source),
        "appendSources": [swap(p) for p in res.append_sources],
        "skills": [
            {
                "name": s.name,
                "description": s.description,
                "path": swap(s.file_path),
                "baseDir": swap(s.base_dir),
                "disableModelInvocation": s.disable_model_invocation,
            }
            for s in res.skills
        ],
        "templates": [
            {
                "name": t.name,
                "description": t.description,
                "argumentHint": t.argument_hint,
                "content": t.content,
                "path": swap(t.file_path),
            }
            for t in res.templates
        ],
        "commands": [
            {
                "name": c.name,
                "description": c.description,
                "source": c.source,
                "sourceInfo": info(c.source_info),
            }
            for c in res.commands()
        ],
        "diagnostics": [
            {
                "type": d.kind,
                "path": swap(d.path),
                **({"name": d.name, "winner": swap(d.winner)} if d.kind == "collision" else {}),
            }
            for d in res.diagnostics
            if d.path != trust_warning
        ],
        "expansions": [{"input": text, "output": expand(text)} for text in SPEC["inputs"]],
    }


def pi_view(recorded: dict[str, Any]) -> dict[str, Any]:
    """pi's outline with the deliberate differences of the module docstring applied."""
    expected = json.loads(json.dumps(recorded))
    expected["name"] = None
    for section in expected["sections"]:
        if section["name"] == "rules":
            section["origins"] = [o for o in section["origins"] if o != "bash"]
        if section["name"] == "docs":
            del section["lines"]
    expected["contextFiles"] = [f for f in expected["contextFiles"] if f["path"].startswith("{root}")]
    return expected


def test_the_outline_was_recorded_for_every_scenario_of_the_spec() -> None:
    assert OUTLINE["pi"] == "@earendil-works/pi-coding-agent@1.6.0"
    assert [s["name"] for s in SPEC["scenarios"]] == list(RECORDED)


@pytest.mark.parametrize("name", [s["name"] for s in SPEC["scenarios"]])
def test_our_resources_have_pis_outline(name: str, tmp_path: Path) -> None:
    scenario = next(s for s in SPEC["scenarios"] if s["name"] == name)
    root = Path(os.path.realpath(tmp_path)) / "t"
    root.mkdir()
    build_project(root, scenario)
    ours = outline(load(root, scenario), root)
    expected = pi_view(RECORDED[name])
    for key in expected:
        assert ours[key] == expected[key], f"{name}: {key} differs"
