"""``sessiontree export``: HTML (opened in headless Chromium, hostile sessions included), Markdown and JSONL."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sessiontree import SessionManager
from sessiontree.cli import app
from tests.test_cli import EXAMPLE

runner = CliRunner()
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
PWN = "document.title='PWNED';document.documentElement.setAttribute('data-pwned','1')"
PAYLOAD = (
    f'"\'><script>{PWN}</script><img src=x onerror="{PWN}"><svg onload="{PWN}"></svg>'
    f'[click me](javascript:{PWN}) <javascript:{PWN}> <a href="javascript:{PWN}">raw link</a> '
    "`code` \x1b[31mred\x1b[0m \u202eevil"
)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture
def chromium(tmp_path: Path) -> Any:
    """Run Debian's Chromium headless on a file: ``run(page, *flags) -> stdout``; skips when it is absent."""
    binary = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    )
    if binary is None:
        reason = "Chromium is not installed (apt-get install chromium); .ci/run installs it"
        if os.environ.get("SESSIONTREE_REQUIRE_CHROMIUM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)

    def run(page: Path, *flags: str) -> str:
        profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
        done = subprocess.run(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    return run


class _Dom(HTMLParser):
    """Tags, attributes, the title and the visible text of a DOM dump."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.title = ""
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._in:
            while self._in and self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "title":
            self.title += data
        elif not self._in or self._in[-1] not in ("style", "script"):
            self.text.append(data)

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())


def _dom(html: str) -> _Dom:
    parser = _Dom()
    parser.feed(html)
    return parser


def _hostile_session(tmp_path: Path) -> Path:
    ids = iter([f"id{PAYLOAD[:20]}", "b0000001", "c0000001", "d0000001", "e0000001", "f0000001", "g0000001"])
    manager = SessionManager.create(
        f"/tmp/{PAYLOAD[:30]}", tmp_path / "sessions", id_factory=lambda used: next(ids)
    )
    first = manager.append_message({"role": "user", "content": PAYLOAD, "timestamp": 1})
    manager.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": PAYLOAD},
                {
                    "type": "text",
                    "text": f'# {PAYLOAD}\n\n```\n{PAYLOAD}\n```\n[ok](https://example.com/?q="x")',
                },
                {"type": "toolCall", "id": "t1", "name": PAYLOAD, "arguments": {PAYLOAD: PAYLOAD}},
            ],
            "api": "anthropic-messages",
            "provider": PAYLOAD,
            "model": PAYLOAD,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": "error",
            "errorMessage": PAYLOAD,
            "timestamp": 2,
        }
    )
    manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "t1",
            "toolName": PAYLOAD,
            "content": [
                {"type": "text", "text": PAYLOAD + "\n```\nbreaking out of the fence"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "image", "data": PAYLOAD, "mimeType": f'image/png" onerror="{PWN}'},
            ],
            "isError": True,
            "timestamp": 3,
        }
    )
    manager.append_label_change(first, PAYLOAD)
    manager.append_session_info("Hostile " + PAYLOAD)
    manager.append_custom_message_entry(PAYLOAD, PAYLOAD, True)
    path = Path(str(manager.get_session_file()))
    manager.close()
    return path


def _export(session: Path, out: Path, *extra: str) -> Path:
    result = runner.invoke(app, ["export", str(session), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)
    return out


def test_the_page_shows_the_branch_and_the_tree_in_chromium(tmp_path: Path, chromium: Any) -> None:
    session = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, session)
    before = session.read_bytes()
    page = _export(session, tmp_path / "page.html")
    assert session.read_bytes() == before
    screenshot = tmp_path / "page.png"
    chromium(page, "--window-size=1280,900", f"--screenshot={screenshot}")
    assert screenshot.read_bytes().startswith(b"\x89PNG") and screenshot.stat().st_size > 20_000
    dom = _dom(chromium(page, "--dump-dom"))
    assert dom.title == "Fix parse_duration accumulator"
    text = dom.visible
    assert "The test test_parse_duration_resets_number fails." in text  # the branch
    assert "Days are supported and tested (13 tests pass)." in text
    assert "Try the regex rewrite." in text  # an abandoned branch, in the sidebar only
    assert text.count("Try the regex rewrite.") == 1
    assert "[task]" in text and "[green]" in text  # labels in the tree
    leaf_rows = [a for t, a in dom.tags if t == "div" and "leaf" in (a.get("class") or "")]
    assert len(leaf_rows) == 1
    assert any(t == "details" for t, _ in dom.tags)  # thinking is collapsed
    assert not any(t in ("script", "link", "iframe") for t, _ in dom.tags)


def test_a_hostile_session_runs_no_script(tmp_path: Path, chromium: Any) -> None:
    session = _hostile_session(tmp_path)
    page = _export(session, tmp_path / "hostile.html")
    source = page.read_text("utf-8")
    assert "<script" not in source and "\x1b" not in source and "\u202e" not in source
    dom = _dom(chromium(page, "--dump-dom"))
    assert dom.title.startswith('Hostile "') and dom.title != "PWNED"  # a script would set it to PWNED
    html_attrs = next(a for t, a in dom.tags if t == "html")
    assert "data-pwned" not in html_attrs
    for tag, attrs in dom.tags:
        assert tag not in ("script", "iframe", "object", "embed", "svg"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src"):
                assert (value or "").startswith(("#", "https://", "http://", "data:image/png;base64,")), value
    links = [a.get("href") for t, a in dom.tags if t == "a" and not (a.get("href") or "").startswith("#")]
    assert links == ["https://example.com/?q=%22x%22"]
    images = [a.get("src") for t, a in dom.tags if t == "img"]
    assert images == [f"data:image/png;base64,{PNG}"]  # the session's own image; the forged one is refused
    text = dom.visible
    assert "<script>document.title='PWNED'" in text  # shown as text, escaped
    assert "\\x1b[31mred" in text and "\\u202eevil" in text  # control characters are visible escapes


def test_markdown_export_fences_tool_output(tmp_path: Path) -> None:
    session = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, session)
    out = _export(session, tmp_path / "s.md", "--format", "md")
    text = out.read_text("utf-8")
    assert text.startswith("# Fix parse_duration accumulator\n")
    assert "## User\n\nThe test test_parse_duration_resets_number fails." in text
    assert "**Tool call** `bash`\n\n```json\n" in text
    assert "Try the regex rewrite." not in text  # only the active branch
    assert text.count("```") % 2 == 0
    hostile = _export(_hostile_session(tmp_path / "h"), tmp_path / "h.md", "--format", "md").read_text(
        "utf-8"
    )
    assert "\x1b" not in hostile and "````" in hostile  # the fence outgrows the ``` inside the text


def test_jsonl_export_is_a_session_of_the_branch(tmp_path: Path) -> None:
    session = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, session)
    source = SessionManager.open(session, read_only=True)
    leaf = next(target for target, label in source.get_labels().items() if label == "green")
    out = _export(session, tmp_path / "branch.jsonl", "--format", "jsonl", "--leaf", "green")
    exported = SessionManager.open(out, read_only=True)
    assert exported.problems == []
    assert exported.get_header()["parentSession"] == str(session.resolve())  # type: ignore[index]
    path = [e["id"] for e in source.get_branch(leaf) if e["type"] != "label"]  # labels come after the path
    assert [e["id"] for e in exported.get_branch()][: len(path)] == path
    assert exported.build_session_context().messages == source.build_session_context(leaf).messages


def test_export_refuses_to_overwrite_and_names_a_bad_format(tmp_path: Path) -> None:
    session = tmp_path / EXAMPLE.name
    shutil.copyfile(EXAMPLE, session)
    out = tmp_path / "x.html"
    out.write_text("keep me", "utf-8")
    refused = runner.invoke(app, ["export", str(session), "--out", str(out)])
    assert refused.exit_code == 2 and "already exists" in refused.output
    assert out.read_text("utf-8") == "keep me"
    assert runner.invoke(app, ["export", str(session), "--out", str(out), "--force"]).exit_code == 0
    assert out.read_text("utf-8").startswith("<!DOCTYPE html>")
    bad = runner.invoke(app, ["export", str(session), "--format", "pdf"])
    assert bad.exit_code == 2 and "unknown format 'pdf'" in bad.output
