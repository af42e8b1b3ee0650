// pi 1.6.0's own RpcClient (tools/pi_js bundle) runs `sessiontree rpc` as its agent process and uses every
// method it has against it. Driven by tests/headless/test_rpc_client.py, which starts the loopback model
// (tests/headless/model_rules.py: "tool", "slow", "long", "flaky" and echoes) and pi's agent directory.
//
//   SESSIONTREE_PI_JS_DIR  the bundle directory (rpc-client.mjs, exec-shim.mjs)
//   RPC_CHECK_COMMAND      JSON array: the command that is `sessiontree rpc`
//   RPC_CHECK_CWD          the agent's working directory
//
// Exits 0 and prints a JSON report on its last stdout line; throws (exit 1) at the first broken expectation.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const bundle = join(process.env.SESSIONTREE_PI_JS_DIR, "rpc-client.mjs");
const { RpcClient, execShimPath, PI_VERSION } = await import(pathToFileURL(bundle).href);
const cwd = process.env.RPC_CHECK_CWD;
assert.equal(PI_VERSION, "1.6.0");

// Every public method of RpcClient, and the ones this script called.
const PRIVATE = new Set(["constructor", "handleLine", "createProcessExitError", "rejectPendingRequests", "send", "getData"]);
const methods = Object.getOwnPropertyNames(RpcClient.prototype).filter((name) => !PRIVATE.has(name));
const called = new Set();
const raw = new RpcClient({
	cliPath: execShimPath,
	cwd,
	provider: "loop",
	model: "m1",
	env: { SESSIONTREE_PI_JS_EXEC: process.env.RPC_CHECK_COMMAND },
});
const client = new Proxy(raw, {
	get(target, name) {
		const value = Reflect.get(target, name);
		if (typeof value !== "function") return value;
		called.add(name);
		return value.bind(target);
	},
});

const events = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(what, predicate, timeout = 30000) {
	const end = Date.now() + timeout;
	for (;;) {
		const found = events.find(predicate);
		if (found) return found;
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}; stderr: ${raw.getStderr()}`);
		await sleep(20);
	}
}
const mark = () => events.length;
const since = (start) => events.slice(start);
const textOf = (message) =>
	typeof message.content === "string" ? message.content : message.content.filter((b) => b.type === "text").map((b) => b.text).join("");

await client.start();
client.onEvent((event) => events.push(event));

// -- state and models -------------------------------------------------------------------------------------
const first = await client.getState();
assert.equal(first.model.provider, "loop");
assert.equal(first.model.id, "m1");
assert.equal(first.isStreaming, false);
assert.equal(first.messageCount, 0);
assert.match(first.sessionFile, new RegExp(`_${first.sessionId}\\.jsonl$`));
const models = await client.getAvailableModels();
assert.deepEqual(models.map((m) => [m.provider, m.id, m.reasoning]), [["loop", "m1", false], ["loop", "m2", true]]);

// -- prompts ----------------------------------------------------------------------------------------------
const hello = await client.promptAndWait("hello");
assert.deepEqual(hello.slice(-2).map((e) => e.type), ["agent_end", "agent_settled"]);
assert.equal(hello[0].type, "agent_start");
assert.equal(await client.getLastAssistantText(), "Echo: hello");

const collecting = client.collectEvents();
assert.equal(await client.prompt("tool"), "started");
const toolRun = await collecting;
const toolEnd = toolRun.find((e) => e.type === "tool_execution_end");
assert.equal(toolEnd.toolName, "bash");
assert.equal(toolEnd.isError, false);
const start = toolRun.find((e) => e.type === "message_update" && e.assistantMessageEvent.type === "toolcall_start");
assert.deepEqual([start.assistantMessageEvent.id, start.assistantMessageEvent.toolName], ["call_1", "bash"]);
assert.equal(await client.getLastAssistantText(), "Tool said: from-tool");

// steer and follow up while a tool runs
let at = mark();
let idle = client.waitForIdle();
await client.prompt("slow");
await until("the slow tool", (e, i) => i >= at && e.type === "tool_execution_start");
assert.equal(await client.steer("S"), "queued");
assert.equal(await client.followUp("F"), "queued");
await idle;
const users = since(at).filter((e) => e.type === "message_end" && e.message.role === "user").map((e) => textOf(e.message));
assert.deepEqual(users, ["slow", "S", "F"]);
assert.deepEqual(since(at).filter((e) => e.type === "agent_settled"), [{ type: "agent_settled", aborted: false }]);

// clear the queue during a run
at = mark();
idle = client.waitForIdle();
await client.prompt("slow");
await until("the slow tool", (e, i) => i >= at && e.type === "tool_execution_start");
assert.equal(await client.prompt("X", undefined, "steer"), "queued");
assert.deepEqual(await client.clearQueue(), { steering: ["X"], followUp: [] });
await idle;

// abort a run
at = mark();
await client.prompt("long");
await until("the long tool", (e, i) => i >= at && e.type === "tool_execution_start");
await client.abort();
const aborted = await until("agent_settled", (e, i) => i >= at && e.type === "agent_settled");
assert.equal(aborted.aborted, true);
const messages = await client.getMessages();
assert.equal(messages.at(-1).stopReason, "aborted");

// -- model and thinking -----------------------------------------------------------------------------------
assert.equal((await client.setModel("loop", "m2")).id, "m2");
assert.deepEqual(await client.getAvailableThinkingLevels(), ["off", "minimal", "low", "medium", "high"]);
await client.setThinkingLevel("medium");
assert.equal((await client.getState()).thinkingLevel, "medium");
assert.deepEqual(await client.cycleThinkingLevel(), { level: "high" });
const cycled = await client.cycleModel();
assert.deepEqual([cycled.model.id, cycled.thinkingLevel, cycled.isScoped], ["m1", "off", false]);
assert.equal(await client.cycleThinkingLevel(), null);
await client.setSteeringMode("all");
await client.setFollowUpMode("one-at-a-time");
await client.setAutoCompaction(false);
let state = await client.getState();
assert.deepEqual([state.steeringMode, state.followUpMode, state.autoCompactionEnabled], ["all", "one-at-a-time", false]);
await client.setAutoCompaction(true);

// -- retry ------------------------------------------------------------------------------------------------
await client.setAutoRetry(true);
at = mark();
await client.prompt("flaky");
await until("auto_retry_start", (e, i) => i >= at && e.type === "auto_retry_start");
await client.abortRetry();
const retryEnd = await until("auto_retry_end", (e, i) => i >= at && e.type === "auto_retry_end");
assert.equal(retryEnd.success, false);
await until("agent_settled", (e, i) => i >= at && e.type === "agent_settled");
await client.setAutoRetry(false);

// -- bash -------------------------------------------------------------------------------------------------
const echoed = await client.bash("echo hi; exit 4");
assert.deepEqual([echoed.output, echoed.exitCode, echoed.cancelled], ["hi", 4, false]);
const sleeping = client.bash("sleep 30");
await sleep(300);
await client.abortBash();
assert.equal((await sleeping).cancelled, true);

// -- the session ------------------------------------------------------------------------------------------
const stats = await client.getSessionStats();
assert.equal(stats.sessionId, first.sessionId);
assert.ok(stats.userMessages >= 8 && stats.toolCalls >= 4, JSON.stringify(stats));
const forks = await client.getForkMessages();
assert.equal(forks[0].text, "hello");
const all = await client.getEntries();
assert.equal(all.leafId, all.entries.at(-1).id);
const after = await client.getEntries(forks[0].entryId);
assert.equal(after.entries.length, all.entries.length - all.entries.findIndex((e) => e.id === forks[0].entryId) - 1);
const tree = await client.getTree();
assert.equal(tree.tree[0].entry.id, all.entries[0].id);
const compacted = await client.compact("keep the echoes");
assert.match(compacted.summary, /^## Goal/);
assert.equal((await client.getMessages())[0].role, "compactionSummary");
await client.setSessionName("checked by pi");
assert.equal((await client.getState()).sessionName, "checked by pi");
const exported = await client.exportHtml();
assert.ok(existsSync(join(cwd, exported.path)), exported.path);
assert.match(readFileSync(join(cwd, exported.path), "utf8"), /^<!DOCTYPE html>/);
assert.deepEqual(await client.getCommands(), []);

const forked = await client.fork(forks[1].entryId);
assert.deepEqual(forked, { text: forks[1].text, cancelled: false });
const forkFile = (await client.getState()).sessionFile;
assert.notEqual(forkFile, first.sessionFile);
assert.deepEqual(await client.clone(), { cancelled: false });
assert.notEqual((await client.getState()).sessionFile, forkFile);
assert.deepEqual(await client.newSession(first.sessionFile), { cancelled: false });
assert.equal((await client.getState()).messageCount, 0);
await assert.rejects(client.clone(), /no current entry/);
assert.deepEqual(await client.switchSession(first.sessionFile), { cancelled: false });
state = await client.getState();
assert.deepEqual([state.sessionFile, state.sessionName], [first.sessionFile, "checked by pi"]);
assert.equal(typeof client.getStderr(), "string");
await client.stop();

const missed = methods.filter((name) => !called.has(name));
assert.deepEqual(missed, [], `RpcClient methods not used: ${missed.join(", ")}`);
console.log(JSON.stringify({ methods: [...called].sort(), sessionFile: first.sessionFile, forkFile, events: events.length }));
