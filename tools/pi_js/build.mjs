// Bundle pi 1.6.0's own SessionManager benchmark and RpcClient (run by build.sh after the npm install).
//
//   node tools/pi_js/build.mjs --dir DIR [--force]
//
// DIR/npm holds the installed packages. pi ships its compiled JavaScript (tsc's output, ES2022 modules)
// next to source maps whose sourcesContent is the TypeScript it came from. The compiled modules run on
// node 20 as they are, so esbuild bundles them directly (tree-shaken to what the entry points use, nothing
// stubbed); the TypeScript is extracted to DIR/src so the code can be read and compared. Outputs:
//   DIR/session-bench.mjs  times SessionManager.open + buildSessionContext on a session file (JSON out)
//   DIR/rpc-client.mjs     exports pi's RpcClient (and its JSONL framing helpers) unchanged
//   DIR/exec-shim.mjs      a node script RpcClient can spawn as its "cliPath" to run another command
//   DIR/package.json       pi's name, version and piConfig: pi's config.js reads them from the bundle's
//                          nearest package.json (APP_NAME, VERSION, the ~/.pi directory name)
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import {
    copyFileSync,
    existsSync,
    mkdirSync,
    readdirSync,
    readFileSync,
    renameSync,
    rmSync,
    writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const INPUTS = ["package.json", "build.mjs", "session-bench.entry.mjs", "rpc-client.entry.mjs", "exec-shim.mjs"];
const OUTPUTS = ["session-bench.mjs", "rpc-client.mjs", "exec-shim.mjs", "package.json"];
const PI_PACKAGE = "@earendil-works/pi-coding-agent";

function fail(message) {
    console.error(`build.mjs: ${message}`);
    process.exit(1);
}

function parseArgs(argv) {
    const out = { dir: undefined, force: false };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === "--dir") out.dir = argv[++i];
        else if (argv[i] === "--force") out.force = true;
        else fail(`unknown argument ${argv[i]} (usage: build.mjs --dir DIR [--force])`);
    }
    if (!out.dir) fail("--dir DIR is required");
    out.dir = resolve(out.dir);
    return out;
}

function readJson(path) {
    try {
        return JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
        fail(`cannot read ${path}: ${error.message} (run tools/pi_js/build.sh, which installs the packages first)`);
    }
}

/** The pinned versions must be the installed ones: a stale or hand-edited DIR/npm is an error, not a guess. */
function checkInstalled(modules, pins) {
    for (const [name, want] of Object.entries(pins)) {
        const got = readJson(join(modules, name, "package.json")).version;
        if (got !== want) fail(`${name} ${got} is installed in ${modules}, ${want} is pinned: rerun build.sh`);
    }
}

function stampOf(nodeModules) {
    const hash = createHash("sha256");
    for (const name of INPUTS) hash.update(`${name}\0`).update(readFileSync(join(HERE, name))).update("\0");
    hash.update(`node ${process.versions.node.split(".")[0]}\0`);
    hash.update(readFileSync(join(nodeModules, PI_PACKAGE, "package.json")));
    return hash.digest("hex");
}

function* mapFiles(dir) {
    for (const item of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, item.name);
        if (item.isDirectory()) yield* mapFiles(path);
        else if (item.name.endsWith(".js.map")) yield path;
    }
}

/** Write every source map's sourcesContent (pi's TypeScript) to DIR/src/<package>/<its path in the package>. */
function extractSources(nodeModules, outDir) {
    rmSync(outDir, { recursive: true, force: true });
    let count = 0;
    const scope = join(nodeModules, "@earendil-works");
    for (const pkg of readdirSync(scope)) {
        const root = join(scope, pkg);
        if (!existsSync(join(root, "dist"))) continue;
        for (const mapPath of mapFiles(join(root, "dist"))) {
            const map = JSON.parse(readFileSync(mapPath, "utf8"));
            (map.sources ?? []).forEach((source, i) => {
                const text = map.sourcesContent?.[i];
                if (typeof text !== "string") return;
                const inPackage = relative(root, resolve(dirname(mapPath), map.sourceRoot ?? "", source));
                if (inPackage.startsWith("..") || inPackage.split(sep).includes("node_modules")) return;
                const target = join(outDir, pkg, inPackage);
                mkdirSync(dirname(target), { recursive: true });
                writeFileSync(target, text);
                count++;
            });
        }
    }
    return count;
}

async function bundle(esbuild, nodeModules, entry, outfile) {
    const piDist = join(nodeModules, PI_PACKAGE, "dist");
    const piDistPlugin = {
        name: "pi-dist",
        setup(build) {
            // "pi-dist/x.js" in an entry point is pi's compiled dist/x.js (not in the package's exports map)
            build.onResolve({ filter: /^pi-dist\// }, (args) => ({ path: join(piDist, args.path.slice("pi-dist/".length)) }));
        },
    };
    const result = await esbuild.build({
        entryPoints: [join(HERE, entry)],
        outfile,
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        nodePaths: [nodeModules],
        plugins: [piDistPlugin],
        metafile: true,
        logLevel: "warning",
        legalComments: "none",
        // pi's CommonJS dependencies (cross-spawn) call require(); an ES module bundle needs one made for it
        banner: { js: 'import { createRequire as __piJsCreateRequire } from "node:module"; const require = __piJsCreateRequire(import.meta.url);' },
    });
    // what ended up in the bundle (after tree-shaking), and how many bytes of each
    const [output] = Object.values(result.metafile.outputs);
    const kept = Object.entries(output.inputs).filter(([, info]) => info.bytesInOutput > 0);
    return Object.fromEntries(
        kept
            .map(([path, info]) => {
                const full = resolve(path);
                const name = full.startsWith(nodeModules + sep) ? relative(nodeModules, full) : relative(HERE, full);
                return [name, info.bytesInOutput];
            })
            .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
}

async function main() {
    const { dir, force } = parseArgs(process.argv.slice(2));
    const nodeModules = join(dir, "npm", "node_modules");
    const pins = readJson(join(HERE, "package.json")).dependencies;
    checkInstalled(nodeModules, pins);
    const stamp = stampOf(nodeModules);
    const stampPath = join(dir, ".stamp");
    const built = OUTPUTS.every((name) => existsSync(join(dir, name)));
    if (!force && built && existsSync(stampPath) && readFileSync(stampPath, "utf8") === stamp) {
        console.error(`build.mjs: ${dir} is up to date (pi ${pins[PI_PACKAGE]})`);
        return;
    }
    rmSync(stampPath, { force: true });
    const started = performance.now();
    const esbuild = createRequire(join(nodeModules, "esbuild", "package.json"))("esbuild");
    const sources = extractSources(nodeModules, join(dir, "src"));
    const tmp = join(dir, `.tmp-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const inputs = {};
    inputs["session-bench.mjs"] = await bundle(esbuild, nodeModules, "session-bench.entry.mjs", join(tmp, "session-bench.mjs"));
    inputs["rpc-client.mjs"] = await bundle(esbuild, nodeModules, "rpc-client.entry.mjs", join(tmp, "rpc-client.mjs"));
    copyFileSync(join(HERE, "exec-shim.mjs"), join(tmp, "exec-shim.mjs"));
    const pi = readJson(join(nodeModules, PI_PACKAGE, "package.json"));
    const meta = { name: pi.name, version: pi.version, type: "module", piConfig: pi.piConfig, private: true };
    writeFileSync(join(tmp, "package.json"), `${JSON.stringify(meta, null, 2)}\n`);
    writeFileSync(join(tmp, "bundle-inputs.json"), `${JSON.stringify(inputs, null, 1)}\n`);
    for (const name of [...OUTPUTS, "bundle-inputs.json"]) renameSync(join(tmp, name), join(dir, name));
    rmSync(tmp, { recursive: true, force: true });
    // the bundles must load on this node before the stamp says they are good
    execFileSync(process.execPath, [join(dir, "session-bench.mjs"), "--check"], { stdio: ["ignore", "ignore", "inherit"] });
    execFileSync(
        process.execPath,
        ["--input-type=module", "-e", `const m = await import(${JSON.stringify(join(dir, "rpc-client.mjs"))}); if (typeof m.RpcClient !== "function") process.exit(1);`],
        { stdio: ["ignore", "ignore", "inherit"] },
    );
    writeFileSync(stampPath, stamp);
    const ms = Math.round(performance.now() - started);
    console.error(`build.mjs: built ${dir} (pi ${pi.version}, ${sources} TypeScript sources extracted) in ${ms} ms`);
}

await main();
