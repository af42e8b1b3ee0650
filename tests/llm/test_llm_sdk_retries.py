"""The provider SDKs do not retry behind the user's back: with default options each call is one HTTP
request, so the harness's retries (which the user sees as ``auto_retry_start`` and the chat's retry line)
are all the retries there are. Against a loopback server answering 500 and 429, counting what it received."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.agent import AgentHarness, RetrySettings
from sessiontree.llm import StreamOptions, complete
from sessiontree.llm.types import Api
from tests.agent.support import Recorder
from tests.llm.fake_servers import JsonReply, fake_server
from tests.llm.wire_support import APIS, context_for, model_for

pytestmark = pytest.mark.anyio

FAILURES = {
    500: {"error": {"type": "api_error", "message": "Internal server error"}},
    429: {"error": {"type": "rate_limit_error", "message": "Rate limit exceeded"}},
}


@pytest.mark.parametrize("status", sorted(FAILURES))
@pytest.mark.parametrize("api", APIS)
async def test_one_call_is_one_request(api: Api, status: int) -> None:
    with fake_server() as server:
        server.replies += [JsonReply(status, FAILURES[status]) for _ in range(5)]
        model = model_for(api, server.url)
        reply = await complete(model, context_for(model), StreamOptions(api_key="test-key"))
        assert reply["stopReason"] == "error"
        assert len(server.requests) == 1


@pytest.mark.parametrize("api", APIS)
async def test_the_harness_retries_are_all_the_requests(api: Api, tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), tmp_path / "sessions")
    with fake_server() as server:
        server.replies += [JsonReply(500, FAILURES[500]) for _ in range(12)]
        harness = AgentHarness(
            manager,
            model_for(api, server.url),
            api_key="test-key",  # default stream options, as the chat uses
            retry=RetrySettings(max_retries=2, base_delay_ms=5),
        )
        events = Recorder()
        harness.subscribe(events)
        last = await harness.prompt("Are you there?")
        assert last["stopReason"] == "error"
        assert len(server.requests) == 3  # the first request and the two retries the user was told of
    starts = events.of("auto_retry_start")
    assert [(e["attempt"], e["maxAttempts"]) for e in starts] == [(1, 2), (2, 2)]
    manager.close()
