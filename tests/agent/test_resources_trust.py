"""pi's project-trust rule for non-interactive runs, on real folders: what needs trust, the order of the
decision, what an untrusted project loses and how that is reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sessiontree.agent.resources import needs_trust
from sessiontree.errors import ResourceError

from .resources_support import project, write

PROJECT = {
    "proj/.pi/skills/s/SKILL.md": "---\ndescription: project skill\n---\n",
    "proj/.pi/prompts/p.md": "project prompt\n",
    "proj/.pi/SYSTEM.md": "project system\n",
    "proj/AGENTS.md": "context stays\n",
    "home/.pi/agent/skills/u/SKILL.md": "---\ndescription: user skill\n---\n",
}


def test_what_needs_trust(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    home = root / "home"
    write(
        root, {"a/.pi/notes.md": "x", "b/.pi/mcp.json": "{}", "c/d/x": "", "c/.agents/skills/k/SKILL.md": ""}
    )
    assert not needs_trust(str(root / "a"), str(home))
    assert needs_trust(str(root / "b"), str(home))
    assert needs_trust(str(root / "c/d"), str(home))  # an ancestor's .agents/skills
    write(root, {"home/.agents/skills/k/SKILL.md": "", "home/w/x": ""})
    assert not needs_trust(str(home / "w"), str(home))  # ~/.agents/skills is the user's own


def test_untrusted_drops_project_resources_keeps_context_and_says_what_it_skipped(tmp_path: Path) -> None:
    res = project(tmp_path, PROJECT)
    assert (res.trust.trusted, res.trust.reason, res.trust.needs_trust) == (False, "not_interactive", True)
    assert [s.name for s in res.skills] == ["u"] and res.templates == [] and res.custom_prompt is None
    assert [f.content for f in res.context_files] == ["context stays\n"]
    pi_dir = os.path.join(res.cwd, ".pi")
    assert res.trust.skipped == tuple(os.path.join(pi_dir, n) for n in ("SYSTEM.md", "skills", "prompts"))
    [warning] = [d for d in res.diagnostics if d.path == pi_dir]
    assert warning.kind == "warning" and "not trusted" in warning.message
    assert all(p in warning.message for p in res.trust.skipped)
    assert res.trust.to_dict()["skipped"] == list(res.trust.skipped)


def test_approve_trusts_and_no_approve_does_not(tmp_path: Path) -> None:
    approved = project(tmp_path, PROJECT, approve=True)
    assert (approved.trust.trusted, approved.trust.reason) == (True, "approve")
    assert [s.name for s in approved.skills] == ["s", "u"] and approved.custom_prompt == "project system\n"
    assert approved.trust.skipped == () and all(d.kind != "warning" for d in approved.diagnostics)
    refused = project(tmp_path, {}, no_approve=True)
    assert (refused.trust.trusted, refused.trust.reason) == (False, "no_approve")
    with pytest.raises(ResourceError, match="contradict"):
        project(tmp_path, {}, approve=True, no_approve=True)


def test_trust_json_nearest_entry_and_default_project_trust(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    store = root / "home/.pi/agent/trust.json"
    write(root, PROJECT)
    store.write_text(json.dumps({str(root): True, str(root / "proj"): None}))
    res = project(tmp_path, {})
    assert (res.trust.trusted, res.trust.reason, res.trust.source) == (True, "trust_file", str(root))
    store.write_text(json.dumps({str(root / "proj"): False}))
    assert project(tmp_path, {}).trust.reason == "trust_file"
    assert project(tmp_path, {}, approve=True).trust.trusted  # the flag comes first
    store.unlink()
    settings = root / "home/.pi/agent/settings.json"
    settings.write_text('{"defaultProjectTrust": "always"}')
    assert (project(tmp_path, {}).trust.trusted, project(tmp_path, {}).trust.reason) == (
        True,
        "default_always",
    )
    settings.write_text('{"defaultProjectTrust": "never"}')
    assert project(tmp_path, {}).trust.reason == "default_never"
    settings.write_text("{broken")
    res = project(tmp_path, {})
    assert res.trust.reason == "not_interactive" and any(d.path == str(settings) for d in res.diagnostics)


def test_a_project_that_needs_no_trust_is_trusted_unless_the_store_says_no(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    res = project(tmp_path, {"home/.pi/agent/SYSTEM.md": "user\n"})
    assert (res.trust.trusted, res.trust.reason, res.trust.needs_trust) == (True, "nothing_to_trust", False)
    write(root, {"home/.pi/agent/trust.json": json.dumps({str(root / "proj"): False})})
    assert project(tmp_path, {}).trust.trusted is False


@pytest.mark.parametrize(
    ("content", "problem"),
    [("{not json", "not valid JSON"), ("[]", "JSON object"), ('{"/x": "yes"}', "true, false or null")],
)
def test_a_damaged_trust_store_is_an_error_naming_it(tmp_path: Path, content: str, problem: str) -> None:
    with pytest.raises(ResourceError, match=problem) as caught:
        project(tmp_path, {**PROJECT, "home/.pi/agent/trust.json": content})
    assert caught.value.path is not None and caught.value.path.endswith("trust.json")
    assert caught.value.kind == "invalid_resource"
