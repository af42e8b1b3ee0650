// pi 1.6.0's own RpcClient, unchanged, for node test scripts:
//
//   import { RpcClient, execShimPath } from "<dir>/rpc-client.mjs";
//
// RpcClient spawns `node <cliPath> --mode rpc [--provider P] [--model M] [...args]` with
// env = {...process.env, ...options.env} and cwd = options.cwd. execShimPath is the absolute path of
// exec-shim.mjs beside this file: give it as cliPath, with the command to run in options.env
// SESSIONTREE_PI_JS_EXEC (a JSON array), to drive another program than pi (README.md in tools/pi_js).
import { fileURLToPath } from "node:url";

export { RpcClient } from "pi-dist/modes/rpc/rpc-client.js";
export { attachJsonlLineReader, serializeJsonLine } from "pi-dist/modes/rpc/jsonl.js";
export { VERSION as PI_VERSION } from "pi-dist/config.js";

export const execShimPath = fileURLToPath(new URL("./exec-shim.mjs", import.meta.url));
