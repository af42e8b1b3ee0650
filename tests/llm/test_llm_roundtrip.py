"""An assistant message from each provider, stored with append_message, re-opens and makes the same request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.llm import Context, StreamOptions, complete, convert_to_llm
from sessiontree.llm.types import Api
from tests.llm.fake_servers import fake_server, reply_for
from tests.llm.wire_support import APIS, READ_TOOL, SYSTEM_PROMPT, model_for

pytestmark = pytest.mark.anyio

OPTIONS: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, "reasoning": "high"}


@pytest.mark.parametrize("api", APIS)
async def test_provider_message_round_trips_through_the_session_file(api: Api, tmp_path: Path) -> None:
    with fake_server() as server:
        model = model_for(api, server.url)
        prompt = {
            "role": "user",
            "content": [{"type": "text", "text": "Read a.txt"}],
            "timestamp": 1_700_000_000_000,
        }
        server.replies.append(
            reply_for(api, thinking=["Need the file."], text=["Reading."],
                      tool_calls=[("call_7", "read", ['{"path": ', '"a.txt"}'])], stop="toolUse")
        )  # fmt: skip
        first = Context(messages=convert_to_llm([prompt]), system_prompt=SYSTEM_PROMPT, tools=[READ_TOOL])
        reply = await complete(model, first, StreamOptions(**OPTIONS))
        assert reply["stopReason"] == "toolUse", reply.get("errorMessage")
        call = reply["content"][-1]
        assert call["type"] == "toolCall"
        result = {"role": "toolResult", "toolCallId": call["id"], "toolName": "read",
                  "content": [{"type": "text", "text": "hello"}], "isError": False, "timestamp": 1_700_000_009_000}  # fmt: skip
        history = [prompt, reply, result]

        manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
        for message in history:
            manager.append_message(message)
        path = manager.get_session_file()
        manager.close()
        assert path is not None

        stored_line = next(
            json.loads(line) for line in Path(path).read_text("utf-8").splitlines()
            if '"role":"assistant"' in line
        )  # fmt: skip
        assert stored_line["message"] == reply
        assert list(stored_line["message"]) == list(reply)  # pi's key order survives the file

        reopened = SessionManager.open(path)
        try:
            messages = reopened.build_session_context().messages
        finally:
            reopened.close()
        assert messages == history

        # The next turn, sent once from memory and once from the re-opened file: byte-identical requests.
        for source in (history, messages):
            server.replies.append(reply_for(api, text=["Done."]))
            context = Context(messages=convert_to_llm(source), system_prompt=SYSTEM_PROMPT, tools=[READ_TOOL])
            final = await complete(model, context, StreamOptions(**OPTIONS))
            assert final["stopReason"] == "stop", final.get("errorMessage")
        from_memory, from_file = server.requests[-2].body, server.requests[-1].body
    assert from_memory == from_file
    sent = json.dumps(from_file)
    assert "Need the file." in sent  # the same-model thinking went back to the provider
    assert "hello" in sent
