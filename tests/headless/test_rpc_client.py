"""The external check: pi 1.6.0's own ``RpcClient`` (node, from the tools/pi_js bundle) starts ``sessiontree
rpc`` as its agent process, the way it starts pi, and uses every method it has against it with a loopback
model (tests/headless/rpc_client_check.mjs holds the expectations).

Skips, saying why, when node or the bundle is missing (fails instead under ``SESSIONTREE_REQUIRE_PI_JS=1``);
``bash tools/pi_js/build.sh`` builds the bundle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sessiontree.format.pi_json import loads
from tests.headless.model_rules import answer_by_rules
from tests.headless.support import agent_env
from tests.llm.fake_servers import fake_server
from tests.pi_js_bundle import pi_js_or_skip

SCRIPT = Path(__file__).with_name("rpc_client_check.mjs")


def test_pi_rpc_client_uses_every_method_against_sessiontree_rpc(tmp_path: Path) -> None:
    found = pi_js_or_skip()  # skips with the reason, or fails under SESSIONTREE_REQUIRE_PI_JS=1
    node, bundle = found.node, found.directory
    work = tmp_path / "project"
    work.mkdir()
    pi = tmp_path / "pi"
    pi.mkdir()
    with fake_server() as raw:
        server = answer_by_rules(raw)
        provider = {
            "baseUrl": f"{server.url}/v1",
            "api": "openai-completions",
            "apiKey": "loop-key",
            "models": [{"id": "m1"}, {"id": "m2", "reasoning": True}],
        }
        (pi / "models.json").write_text(json.dumps({"providers": {"loop": provider}}))
        (pi / "settings.json").write_text(
            json.dumps({"compaction": {"keepRecentTokens": 1}})
        )  # pi's settings
        (tmp_path / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 3000}}))  # sessiontree's
        env = agent_env(tmp_path)
        env["SESSIONTREE_PI_JS_DIR"] = str(bundle)
        env["RPC_CHECK_COMMAND"] = json.dumps([sys.executable, "-m", "sessiontree", "rpc"])
        env["RPC_CHECK_CWD"] = str(work)
        done = subprocess.run(
            [node, str(SCRIPT)], env=env, cwd=work, capture_output=True, text=True, timeout=600, check=False
        )
    assert done.returncode == 0, f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-6000:]}"
    report = json.loads(done.stdout.strip().split("\n")[-1])
    assert {"start", "stop", "onEvent", "promptAndWait", "collectEvents", "waitForIdle"} <= set(
        report["methods"]
    )
    assert len(report["methods"]) >= 40
    fork_header = loads(Path(report["forkFile"]).read_bytes().split(b"\n", 1)[0])
    assert fork_header["parentSession"] == report["sessionFile"]
    stored = [loads(line) for line in Path(report["sessionFile"]).read_bytes().split(b"\n") if line]
    assert any(e["type"] == "compaction" for e in stored) and any(e["type"] == "session_info" for e in stored)
