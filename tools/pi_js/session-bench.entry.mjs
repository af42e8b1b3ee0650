// Time pi 1.6.0's own SessionManager on a session file: what pi does when it resumes a session
// (`pi --session FILE`): SessionManager.open(FILE), then sessionManager.buildSessionContext().
//
//   node session-bench.mjs FILE [REPEATS] [--load-entries]   prints one JSON object (seconds; medians)
//   node session-bench.mjs --check                          loads the bundle and prints pi's version
//
// Phases per repeat: open (SessionManager.open: the header scan, loadEntriesFromFile's read + JSON.parse
// of every line, the migration check, the id/label index), then context (buildSessionContext at the leaf).
// With --load-entries, loadEntriesFromFile alone is timed too, after the others (so that the first open in
// a fresh process is as cold as pi's). startup_s is the time from node's start to the first line of this
// program: node itself plus evaluating the bundle. open_context_cpu_s is the CPU time of open + context
// (user + system, all of the process's threads). The whole process time is the caller's to measure: without
// --load-entries the process does nothing else.
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { CURRENT_SESSION_VERSION, loadEntriesFromFile, SessionManager } from "pi-dist/core/session-manager.js";
import { VERSION } from "pi-dist/config.js";

const startup_s = performance.now() / 1000;

function fail(message, code = 2) {
    process.stderr.write(`session-bench: ${message}\n`);
    process.exit(code);
}

function median(values) {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * pi's open rewrites a file whose header is older than version 3 (migration) and appends "\n" to a file
 * whose last line has none: refuse those, so that a benchmark never changes its input.
 */
function checkUntouched(path) {
    let size;
    try {
        size = statSync(path).size;
    } catch (error) {
        fail(`cannot read ${path}: ${error.message}`);
    }
    if (size === 0) fail(`${path} is empty (pi would write a new header into it)`);
    const fd = openSync(path, "r");
    let first;
    try {
        const last = Buffer.alloc(1);
        readSync(fd, last, 0, 1, size - 1);
        if (last[0] !== 0x0a) fail(`${path} does not end with a newline: pi's open would append one; benchmark a copy`);
        const head = Buffer.alloc(Math.min(size, 1 << 20));
        const got = readSync(fd, head, 0, head.length, 0);
        const end = head.subarray(0, got).indexOf(0x0a);
        first = head.subarray(0, end === -1 ? got : end).toString("utf8");
    } finally {
        closeSync(fd);
    }
    let header;
    try {
        header = JSON.parse(first);
    } catch {
        fail(`${path}:1: the first line is not JSON (not a pi session header)`);
    }
    if (header?.type !== "session" || typeof header.id !== "string") fail(`${path}:1: not a pi session header`);
    if ((header.version ?? 1) < CURRENT_SESSION_VERSION) {
        fail(`${path}:1: a version ${header.version ?? 1} session: pi's open would migrate and rewrite it; benchmark a copy`);
    }
}

function main(argv) {
    if (argv[0] === "--check") {
        process.stdout.write(`${JSON.stringify({ pi: VERSION, node: process.versions.node })}\n`);
        return;
    }
    const loadEntries = argv.includes("--load-entries");
    const positional = argv.filter((arg) => arg !== "--load-entries");
    if (positional.length < 1 || positional.length > 2 || positional.some((arg) => arg.startsWith("-"))) {
        fail("usage: node session-bench.mjs FILE [REPEATS] [--load-entries]   (or --check)");
    }
    const path = positional[0];
    const repeats = positional.length > 1 ? Number(positional[1]) : 1;
    if (!Number.isInteger(repeats) || repeats < 1) fail(`REPEATS must be a positive integer, not ${positional[1]}`);
    checkUntouched(path);
    const samples = { open_s: [], context_s: [], open_context_s: [], open_context_cpu_s: [] };
    if (loadEntries) samples.load_entries_s = [];
    let entries = 0;
    let messages = 0;
    let leafId = null;
    for (let run = 0; run < repeats; run++) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const manager = SessionManager.open(path);
        const t1 = performance.now();
        const context = manager.buildSessionContext();
        const t2 = performance.now();
        const cpu = process.cpuUsage(c0);
        if (loadEntries) {
            const t3 = performance.now();
            const loaded = loadEntriesFromFile(path);
            samples.load_entries_s.push((performance.now() - t3) / 1000);
            if (loaded.length !== manager.getEntries().length + 1) fail(`${path}: open and loadEntriesFromFile disagree`, 1);
        }
        samples.open_s.push((t1 - t0) / 1000);
        samples.context_s.push((t2 - t1) / 1000);
        samples.open_context_s.push((t2 - t0) / 1000);
        samples.open_context_cpu_s.push((cpu.user + cpu.system) / 1e6); // every thread of the process (GC helpers too)
        entries = manager.getEntries().length;
        messages = context.messages.length;
        leafId = manager.getLeafId();
    }
    const medians = Object.fromEntries(Object.entries(samples).map(([key, values]) => [key, median(values)]));
    const result = {
        pi: VERSION,
        node: process.versions.node,
        file: path,
        bytes: statSync(path).size,
        repeats,
        entries,
        messages,
        leafId,
        startup_s,
        medians,
        samples,
        total_s: performance.now() / 1000,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
}

main(process.argv.slice(2));
