"""pi's coding tools on a real temporary directory: shapes, truncation notices, confinement to the working
directory, clear errors, the edit diff, bash timeouts, full-output files and process-group kills; and pi's
truncate tests (packages/agent/test/harness/truncate.test.ts)."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiontree.agent import AgentTool, ToolResult, coding_tools, read_only_tools
from sessiontree.agent.tools._truncate import (
    DEFAULT_MAX_BYTES,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)
from sessiontree.agent.validate import validate_arguments
from sessiontree.llm import AbortSignal

pytestmark = pytest.mark.anyio

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


def tools(tmp_path: Path, **options: Any) -> dict[str, AgentTool]:
    return {t.name: t for t in coding_tools(tmp_path, **options)}


async def call(tool: AgentTool, signal: AbortSignal | None = None, **args: Any) -> ToolResult:
    """Run ``tool`` as the loop does: argument shim, schema check, execute."""
    raw: Any = tool.prepare_arguments(args) if tool.prepare_arguments else args
    return await tool.execute("call-1", validate_arguments(tool.name, tool.parameters, raw), signal, None)


def out(result: ToolResult) -> str:
    return str(result.content[0]["text"])


async def test_the_tool_set_has_pi_s_names_and_repeatable_flags(tmp_path: Path) -> None:
    assert [t.name for t in coding_tools(tmp_path)] == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert {t.name for t in coding_tools(tmp_path) if t.repeatable} == {"read", "grep", "find", "ls"}
    assert [t.name for t in read_only_tools(tmp_path)] == ["read", "grep", "find", "ls"]


# -- read ----------------------------------------------------------------------------------------------------
async def test_read_returns_text_with_offset_and_limit_notices(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("\n".join(f"line {i}" for i in range(1, 11)))
    read = tools(tmp_path)["read"]
    assert out(await call(read, path="f.txt")).splitlines()[0] == "line 1"
    limited = out(await call(read, path="f.txt", offset=3, limit=2))
    assert limited == "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    with pytest.raises(ValueError, match="Offset 50 is beyond end of file"):
        await call(read, path="f.txt", offset=50)


async def test_read_truncates_long_files_and_says_how_to_continue(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("\n".join(f"row {i}" for i in range(3000)))
    result = await call(tools(tmp_path)["read"], path="big.txt")
    assert out(result).endswith("[Showing lines 1-2000 of 3000. Use offset=2001 to continue.]")
    assert result.details["truncation"]["truncatedBy"] == "lines"
    (tmp_path / "wide.txt").write_text("x" * (DEFAULT_MAX_BYTES + 10))
    wide = out(await call(tools(tmp_path)["read"], path="wide.txt"))
    assert wide.startswith("[Line 1 is 50.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' wide.txt")


async def test_read_refuses_binary_missing_and_directories_and_reads_images(tmp_path: Path) -> None:
    read = tools(tmp_path)["read"]
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(ValueError, match=r"Cannot read binary file: blob\.bin"):
        await call(read, path="blob.bin")
    with pytest.raises(FileNotFoundError, match=r"File not found: nope\.txt"):
        await call(read, path="nope.txt")
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        await call(read, path="dir")
    (tmp_path / "pixel.png").write_bytes(base64.b64decode(PNG))
    image = await call(read, path="pixel.png")
    assert image.content[0]["text"] == "Read image file [image/png]"
    assert image.content[1] == {"type": "image", "data": PNG, "mimeType": "image/png"}


async def test_paths_outside_the_working_directory_are_refused_unless_allowed(tmp_path: Path) -> None:
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    (other / "secret.txt").write_text("secret")
    (work / "link").symlink_to(other / "secret.txt")
    confined = tools(work)
    for path in (str(other / "secret.txt"), "../other/secret.txt", "link"):
        with pytest.raises(PermissionError, match="outside the working directory"):
            await call(confined["read"], path=path)
    with pytest.raises(PermissionError):
        await call(confined["write"], path="../escape.txt", content="x")
    assert not (tmp_path / "escape.txt").exists()
    assert (
        out(await call(tools(work, allowed_paths=[str(other)])["read"], path="../other/secret.txt"))
        == "secret"
    )
    assert out(await call(tools(work, allow_outside=True)["read"], path="link")) == "secret"
    (work / "x.txt").write_text("x")
    assert out(await call(confined["read"], path="@x.txt")) == "x"  # models sometimes prefix paths with @


# -- write and edit ------------------------------------------------------------------------------------------
async def test_write_creates_parents_and_reports_bytes(tmp_path: Path) -> None:
    result = await call(tools(tmp_path)["write"], path="a/b/c.txt", content="héllo")
    assert out(result) == "Successfully wrote 6 bytes to a/b/c.txt"
    assert (tmp_path / "a/b/c.txt").read_text() == "héllo"


async def test_edit_replaces_a_unique_match_and_reports_a_diff(tmp_path: Path) -> None:
    file = tmp_path / "m.py"
    file.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    result = await call(
        tools(tmp_path)["edit"], path="m.py", edits=[{"oldText": "line 10\n", "newText": "line ten\n"}]
    )
    assert out(result) == "Successfully replaced 1 block(s) in m.py."
    assert "line ten" in file.read_text() and "line 10\n" not in file.read_text()
    details = result.details
    assert details["firstChangedLine"] == 10
    assert (
        "-10 line 10" in details["diff"]
        and "+10 line ten" in details["diff"]
        and " 6 line 6" in details["diff"]
    )
    assert " 5 line 5" not in details["diff"] and "..." in details["diff"]
    assert (
        details["patch"].startswith("--- a/m.py\n+++ b/m.py\n@@")
        and "-line 10\n+line ten\n" in details["patch"]
    )


async def test_edit_errors_are_clear(tmp_path: Path) -> None:
    edit = tools(tmp_path)["edit"]
    (tmp_path / "f.txt").write_text("alpha beta alpha\n")
    cases = [
        ([{"oldText": "gamma", "newText": "x"}], "Could not find the text in f.txt"),
        ([{"oldText": "alpha", "newText": "x"}], "Found 2 occurrences of the text in f.txt"),
        ([{"oldText": "beta", "newText": "beta"}], "No changes made to f.txt"),
        ([{"oldText": "", "newText": "x"}], "oldText must not be empty"),
        (
            [{"oldText": "alpha beta", "newText": "x"}, {"oldText": "beta alpha", "newText": "y"}],
            "edits[0] and edits[1] overlap",
        ),
    ]
    for edits, message in cases:
        with pytest.raises(ValueError) as error:
            await call(edit, path="f.txt", edits=edits)
        assert message in str(error.value)
    with pytest.raises(FileNotFoundError):
        await call(edit, path="missing.txt", edits=[{"oldText": "a", "newText": "b"}])
    assert (tmp_path / "f.txt").read_text() == "alpha beta alpha\n"


async def test_edit_takes_several_edits_and_the_older_argument_shape(tmp_path: Path) -> None:
    file = tmp_path / "f.txt"
    file.write_text("\ufeffone\r\ntwo\r\nthree\r\n")
    edit = tools(tmp_path)["edit"]
    await call(
        edit, path="f.txt", edits=[{"oldText": "one", "newText": "1"}, {"oldText": "three", "newText": "3"}]
    )
    await call(edit, path="f.txt", oldText="two", newText="2")
    assert file.read_bytes().decode("utf-8") == "\ufeff1\r\n2\r\n3\r\n"  # BOM and CRLF kept
    await call(edit, path="f.txt", edits='[{"oldText": "2", "newText": "deux"}]')
    assert "deux" in file.read_text()


# -- bash ----------------------------------------------------------------------------------------------------
async def test_bash_runs_in_the_working_directory_and_merges_stderr(tmp_path: Path) -> None:
    result = await call(tools(tmp_path)["bash"], command="pwd; echo oops >&2")
    assert out(result).splitlines() == [str(tmp_path.resolve()), "oops"]
    assert out(await call(tools(tmp_path)["bash"], command="true")) == "(no output)"


async def test_bash_reports_exit_codes_and_timeouts_as_errors(tmp_path: Path) -> None:
    bash = tools(tmp_path)["bash"]
    with pytest.raises(RuntimeError) as failed:
        await call(bash, command="echo before; exit 3")
    assert str(failed.value) == "before\n\nCommand exited with code 3"
    started = time.monotonic()
    with pytest.raises(TimeoutError) as slow:
        await call(bash, command="echo started; sleep 20", timeout=0.3)
    assert time.monotonic() - started < 5
    assert str(slow.value) == "started\n\nCommand timed out after 0.3 seconds"


async def test_bash_truncates_output_and_keeps_the_full_output_in_a_file(tmp_path: Path) -> None:
    result = await call(tools(tmp_path)["bash"], command="seq 1 5000")
    text = out(result)
    assert text.endswith(
        f"[Showing lines 3001-5000 of 5000. Full output: {result.details['fullOutputPath']}]"
    )
    assert text.splitlines()[0] == "3001"
    full = Path(result.details["fullOutputPath"])
    assert full.read_text().splitlines() == [str(i) for i in range(1, 5001)]
    big = await call(
        tools(tmp_path)["bash"], command="head -c 300000 /dev/zero | tr '\\0' 'x'; echo; echo end"
    )
    assert out(big).splitlines()[-3] == "end"
    assert Path(big.details["fullOutputPath"]).stat().st_size == 300_005  # 300000 x, newline, "end", newline
    full.unlink()
    Path(big.details["fullOutputPath"]).unlink()


async def test_aborting_bash_kills_its_whole_process_group(tmp_path: Path) -> None:
    bash = tools(tmp_path)["bash"]
    signal = AbortSignal()
    pid_file = tmp_path / "child.pid"
    errors: list[str] = []

    async def run() -> None:
        try:
            await call(bash, signal, command=f"sleep 30 & echo $! > {pid_file}; wait")
        except RuntimeError as exc:
            errors.append(str(exc))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        with anyio.fail_after(5):
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.01)
        signal.abort()
    assert errors == ["Command aborted"]
    child = int(pid_file.read_text())
    with anyio.fail_after(5):
        while True:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            await anyio.sleep(0.02)


async def test_bash_does_not_hang_on_a_background_child_holding_the_pipe(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await call(tools(tmp_path)["bash"], command="(sleep 5 &) ; echo done")
    assert out(result) == "done" and time.monotonic() - started < 3


# -- ls, grep, find ------------------------------------------------------------------------------------------
def tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 'Hello'\n\nprint(main())\n")
    (root / "src" / "util.py").write_text("HELLO = 1\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("hello from build\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "debug.log").write_text("hello log\n")
    (root / ".hidden").write_text("hello hidden\n")
    (root / "data.bin").write_bytes(b"hello\x00binary")
    (root / "README").write_text("readme\n")


async def test_ls_sorts_marks_directories_and_limits(tmp_path: Path) -> None:
    tree(tmp_path)
    ls = tools(tmp_path)["ls"]
    assert out(await call(ls)).splitlines() == [
        ".gitignore",
        ".hidden",
        "build/",
        "data.bin",
        "debug.log",
        "README",
        "src/",
    ]
    limited = await call(ls, limit=2)
    assert out(limited).endswith("[2 entries limit reached. Use limit=4 for more]") and limited.details == {
        "entryLimitReached": 2
    }
    (tmp_path / "empty").mkdir()
    assert out(await call(ls, path="empty")) == "(empty directory)"
    with pytest.raises(NotADirectoryError):
        await call(ls, path="README")


async def test_grep_finds_matches_with_context_and_honours_gitignore(tmp_path: Path) -> None:
    tree(tmp_path)
    grep = tools(tmp_path)["grep"]
    found = out(await call(grep, pattern="hello", ignoreCase=True)).splitlines()
    assert found == [
        ".hidden:1: hello hidden",
        "src/app.py:2:     return 'Hello'",
        "src/util.py:1: HELLO = 1",
    ]
    assert out(await call(grep, pattern="hello")) == ".hidden:1: hello hidden"
    context = out(await call(grep, pattern="return", context=1)).splitlines()
    assert context == ["src/app.py-1- def main():", "src/app.py:2:     return 'Hello'", "src/app.py-3- "]
    assert out(await call(grep, pattern="main()", literal=True, glob="*.py")).count("main()") == 2
    assert out(await call(grep, pattern="nothing here")) == "No matches found"
    with pytest.raises(ValueError, match="Invalid regular expression"):
        await call(grep, pattern="(")
    (tmp_path / "long.txt").write_text("needle " + "x" * 600 + "\n" + "needle\n" * 5)
    limited = await call(grep, pattern="needle", path="long.txt", limit=2)
    assert (
        "[2 matches limit reached. Use limit=4 for more, or refine pattern. Some lines truncated to 500 chars"
        in out(limited)
    )
    assert limited.details == {"matchLimitReached": 2, "linesTruncated": True}


async def test_find_matches_names_or_paths_and_honours_gitignore(tmp_path: Path) -> None:
    tree(tmp_path)
    find = tools(tmp_path)["find"]
    assert out(await call(find, pattern="*.py")).splitlines() == ["src/app.py", "src/util.py"]
    assert out(await call(find, pattern="src/**/app.*")) == "src/app.py"
    assert out(await call(find, pattern="**/*.log")) == "No files found matching pattern"
    limited = await call(find, pattern="*", limit=3)
    assert "[3 results limit reached. Use limit=6 for more, or refine pattern]" in out(limited)


# -- truncation (pi's truncate tests) ----------------------------------------------------------------------
def test_sizes_count_utf8_bytes() -> None:
    assert truncate_head("é" * 10).total_bytes == 20
    assert (format_size(512), format_size(1536), format_size(3 * 1024 * 1024)) == ("512B", "1.5KB", "3.0MB")


def test_head_truncation_keeps_whole_lines_within_the_byte_limit() -> None:
    cut = truncate_head("aaaa\nbbbb\ncccc\n", max_bytes=10)
    assert (cut.content, cut.truncated_by, cut.output_lines, cut.total_lines) == ("aaaa\nbbbb", "bytes", 2, 3)
    first = truncate_head("x" * 20 + "\nshort", max_bytes=10)
    assert first.first_line_exceeds_limit and first.content == ""
    by_lines = truncate_head("\n".join(["l"] * 10), max_lines=3)
    assert (by_lines.content, by_lines.truncated_by) == ("l\nl\nl", "lines")


def test_tail_truncation_keeps_the_end_and_cuts_a_long_last_line_on_a_character_boundary() -> None:
    cut = truncate_tail("one\ntwo\nthree\n", max_bytes=9)
    assert cut.content == "two\nthree" and cut.output_lines == 2
    partial = truncate_tail("ab" + "é" * 10, max_bytes=7)
    assert partial.last_line_partial and partial.content == "ééé"
    assert truncate_line("x" * 600) == ("x" * 500 + "... [truncated]", True)
