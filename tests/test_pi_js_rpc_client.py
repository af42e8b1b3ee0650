"""pi 1.6.0's own RpcClient (tools/pi_js) driving another command through exec-shim.mjs.

Needs node and the bundle from ``bash tools/pi_js/build.sh`` (skipped with the reason otherwise). The agent
process is a small Python program speaking pi's RPC framing; the test checks what it received (argv, the
command lines), that responses resolve the client's requests, and that stop() ends it by SIGTERM.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.pi_js_bundle import pi_js_or_skip

AGENT = r"""
import json, signal, sys
log = open(sys.argv[1], "w")
def on_term(*_):
    log.write(json.dumps({"signal": "SIGTERM"}) + "\n"); log.close(); sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
log.write(json.dumps({"argv": sys.argv[2:]}) + "\n"); log.flush()
print(json.dumps({"type": "agent_ready"}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    log.write(json.dumps({"command": cmd}) + "\n"); log.flush()
    data = {"sessionId": "s1", "thinkingLevel": "off", "messageCount": 0}
    print(json.dumps({"id": cmd.get("id"), "type": "response", "command": cmd["type"], "success": True, "data": data}), flush=True)
"""

CLIENT = r"""
const [bundle, python, agent, log, drop] = process.argv.slice(2);
const { RpcClient, execShimPath, PI_VERSION } = await import(bundle);
const events = [];
const client = new RpcClient({
    cliPath: execShimPath,
    provider: "local",
    model: "model-a",
    args: ["--no-session"],
    env: { SESSIONTREE_PI_JS_EXEC: JSON.stringify([python, agent, log]), SESSIONTREE_PI_JS_EXEC_DROP_MODE: drop },
});
client.onEvent((event) => events.push(event));
await client.start();
const state = await client.getState();
await client.stop();
console.log(JSON.stringify({ pi: PI_VERSION, state, events }));
"""


def _run(tmp_path: Path, drop: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    found = pi_js_or_skip()
    agent, client, log = tmp_path / "agent.py", tmp_path / "client.mjs", tmp_path / "agent.log"
    agent.write_text(AGENT)
    client.write_text(CLIENT)
    bundle = found.directory / "rpc-client.mjs"
    done = subprocess.run(
        [found.node, str(client), str(bundle), sys.executable, str(agent), str(log), drop],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), [json.loads(line) for line in log.read_text().splitlines()]


def test_rpc_client_runs_the_named_command_with_its_arguments(tmp_path: Path) -> None:
    out, log = _run(tmp_path, "0")
    assert out["pi"] == "1.6.0"
    assert out["state"] == {"sessionId": "s1", "thinkingLevel": "off", "messageCount": 0}
    assert out["events"] == [{"type": "agent_ready"}]  # an id-less line goes to the listeners
    assert log[0] == {"argv": ["--mode", "rpc", "--provider", "local", "--model", "model-a", "--no-session"]}
    assert log[1] == {"command": {"id": "req_1", "type": "get_state"}}
    assert log[-1] == {"signal": "SIGTERM"}  # stop()'s SIGTERM reached the command through the shim


def test_drop_mode_leaves_out_the_leading_mode_rpc(tmp_path: Path) -> None:
    _, log = _run(tmp_path, "1")
    assert log[0] == {"argv": ["--provider", "local", "--model", "model-a", "--no-session"]}
