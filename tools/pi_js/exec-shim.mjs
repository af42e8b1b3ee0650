// Run another command where pi's RpcClient expects pi: RpcClient spawns `node <cliPath> --mode rpc ...`,
// so with cliPath = this file it runs
//
//   <SESSIONTREE_PI_JS_EXEC...> [--mode rpc] [--provider P] [--model M] [...args]
//
// SESSIONTREE_PI_JS_EXEC is a JSON array (the program and its first arguments), e.g.
// ["/repo/.venv/bin/sessiontree", "rpc"]. With SESSIONTREE_PI_JS_EXEC_DROP_MODE=1 the leading
// "--mode rpc" that RpcClient always puts first is left out. The command gets this process's stdin,
// stdout and stderr themselves (no copying in between) and its environment. SIGTERM, SIGINT and SIGHUP are
// passed on, and this process ends as the command did: the same exit code, or killed by the same signal.
import { spawn } from "node:child_process";

function fail(message, code) {
    process.stderr.write(`exec-shim: ${message}\n`);
    process.exit(code);
}

let command;
try {
    command = JSON.parse(process.env.SESSIONTREE_PI_JS_EXEC ?? "");
} catch {
    fail("SESSIONTREE_PI_JS_EXEC must be a JSON array naming the command, e.g. [\"sessiontree\", \"rpc\"]", 2);
}
if (!Array.isArray(command) || command.length === 0 || !command.every((part) => typeof part === "string")) {
    fail("SESSIONTREE_PI_JS_EXEC must be a non-empty JSON array of strings", 2);
}
let args = process.argv.slice(2);
if (process.env.SESSIONTREE_PI_JS_EXEC_DROP_MODE === "1" && args[0] === "--mode" && args[1] === "rpc") {
    args = args.slice(2);
}
const [program, ...first] = command;
const env = { ...process.env };
delete env.SESSIONTREE_PI_JS_EXEC;
delete env.SESSIONTREE_PI_JS_EXEC_DROP_MODE;

const child = spawn(program, [...first, ...args], { stdio: "inherit", env });
const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"];
const forward = (signal) => child.kill(signal);
for (const signal of SIGNALS) process.on(signal, forward);
child.on("error", (error) => fail(`cannot run ${program}: ${error.message}`, error.code === "ENOENT" ? 127 : 126));
child.on("exit", (code, signal) => {
    for (const s of SIGNALS) process.off(s, forward);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
});
