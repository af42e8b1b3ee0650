"""convert_to_llm: pi's role mapping, exact wrapper texts, bash text, and the transform_context hook."""

from __future__ import annotations

from typing import Any

import anyio

from sessiontree.llm.convert import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    bash_execution_to_text,
    convert_to_llm,
    prepare_llm_messages,
)


def _bash(**fields: Any) -> dict[str, Any]:
    base = {
        "role": "bashExecution",
        "command": "ls",
        "output": "a\nb",
        "cancelled": False,
        "truncated": False,
        "timestamp": 5,
    }
    base.update(fields)
    return base


def test_wrapper_constants_are_exact() -> None:
    assert COMPACTION_SUMMARY_PREFIX == (
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    )
    assert COMPACTION_SUMMARY_SUFFIX == "\n</summary>"
    assert BRANCH_SUMMARY_PREFIX.startswith("<branch_exploration_summary>\n")
    assert BRANCH_SUMMARY_PREFIX.endswith(".\n\n")
    assert BRANCH_SUMMARY_PREFIX.count("\n") == 3  # tag line, one sentence, blank line
    assert "abandoned" in BRANCH_SUMMARY_PREFIX and "reference only" in BRANCH_SUMMARY_PREFIX
    assert BRANCH_SUMMARY_SUFFIX == "\n</branch_exploration_summary>"


def test_roles_map_as_pi_does() -> None:
    user = {"role": "user", "content": "hi", "timestamp": 1}
    assistant = {"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 2}
    result = {
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "t",
        "content": [],
        "isError": False,
        "timestamp": 3,
    }
    custom_str = {"role": "custom", "customType": "x", "content": "note", "display": True, "timestamp": 4}
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    custom_arr = {"role": "custom", "customType": "x", "content": [image], "display": False, "timestamp": 6}
    branch = {"role": "branchSummary", "summary": "tried X", "fromId": "abc", "timestamp": 7}
    compaction = {"role": "compactionSummary", "summary": "S", "tokensBefore": 10, "timestamp": 8}
    out = convert_to_llm(
        [
            user,
            assistant,
            result,
            custom_str,
            custom_arr,
            _bash(excludeFromContext=True),
            _bash(),
            branch,
            compaction,
            {"role": "hookMessage", "timestamp": 9},
        ]
    )
    assert out[0] is user and out[1] is assistant and out[2] is result
    assert out[3] == {"role": "user", "content": [{"type": "text", "text": "note"}], "timestamp": 4}
    assert out[4] == {"role": "user", "content": [image], "timestamp": 6}
    assert out[5] == {
        "role": "user",
        "content": [{"type": "text", "text": "Ran `ls`\n```\na\nb\n```"}],
        "timestamp": 5,
    }
    assert out[6]["content"] == [
        {"type": "text", "text": BRANCH_SUMMARY_PREFIX + "tried X" + BRANCH_SUMMARY_SUFFIX}
    ]
    assert out[6]["timestamp"] == 7
    assert out[7]["content"] == [
        {"type": "text", "text": COMPACTION_SUMMARY_PREFIX + "S" + COMPACTION_SUMMARY_SUFFIX}
    ]
    assert len(out) == 8


def test_damaged_messages_are_left_out_whatever_their_role_holds() -> None:
    # a damaged entry's message can have any JSON value as its role: an object or a list (unhashable),
    # a number, null; none of them is a model message, and none stops the others from converting
    user = {"role": "user", "content": "hi", "timestamp": 1}
    damaged = [{"role": {"x": 1}}, {"role": ["user"]}, {"role": 3}, {"role": None}, {}, "text", None, 7]
    assert convert_to_llm([*damaged, user, *damaged]) == [user]


def test_bash_text_variants() -> None:
    assert bash_execution_to_text(_bash(output="")) == "Ran `ls`\n(no output)"
    assert (
        bash_execution_to_text(_bash(exitCode=2)) == "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"
    )
    assert bash_execution_to_text(_bash(exitCode=0)) == "Ran `ls`\n```\na\nb\n```"
    assert (
        bash_execution_to_text(_bash(exitCode=2, cancelled=True))
        == "Ran `ls`\n```\na\nb\n```\n\n(command cancelled)"
    )
    assert bash_execution_to_text(_bash(truncated=True, fullOutputPath="/tmp/o")) == (
        "Ran `ls`\n```\na\nb\n```\n\n[Output truncated. Full output: /tmp/o]"
    )
    assert bash_execution_to_text(_bash(truncated=True)) == "Ran `ls`\n```\na\nb\n```"


def test_transform_context_runs_first() -> None:
    msgs = [
        {"role": "user", "content": "a", "timestamp": 1},
        {"role": "user", "content": "b", "timestamp": 2},
    ]
    out = convert_to_llm(msgs, transform_context=lambda m: m[1:])
    assert [m["content"] for m in out] == ["b"]

    async def drop_first(m: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 0}, *m[1:]]

    async def main() -> None:
        result = await prepare_llm_messages(msgs, transform_context=drop_first)
        assert result[0]["content"][0]["text"].startswith(COMPACTION_SUMMARY_PREFIX)  # type: ignore[index]
        assert result[1]["content"] == "b"
        assert (await prepare_llm_messages(msgs, transform_context=lambda m: m[:1]))[0]["content"] == "a"

    anyio.run(main)
