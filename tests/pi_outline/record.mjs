#!/usr/bin/env node
// Records the OUTLINE of pi 1.6.0's system prompt and prompt resources, with pi's own code, for the temp
// project described in project.json: which sections in which order, which context files (paths relative to
// the temp root, contents), which skills, templates and commands, and what a few inputs expand to. pi's fixed
// sentences are never recorded: they are replaced by placeholders ("{heading}", "{intro}", "{references}")
// or reduced to counts and origins.
//
//   node tests/pi_outline/record.mjs            # writes tests/agent/data/pi_prompt_outline.json
//
// pi is installed with npm into a cache directory outside the repository ($SESSIONTREE_PI_CACHE, default
// ~/.cache/sessiontree-pi): @earendil-works/pi-coding-agent@1.6.0 and, because that package needs Node 22
// (fs.globSync), the Node 22 binary npm ships as node-linux-<arch>. The script then runs itself again under
// that Node. tests/agent/test_resources_outline.py compares our loader with the committed JSON.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PI_PACKAGE = "@earendil-works/pi-coding-agent";
const PI_VERSION = "1.6.0";
const NODE_VERSION = "22.23.5";
const HERE = dirname(fileURLToPath(import.meta.url));
const SPEC_PATH = join(HERE, "project.json");
const OUT_PATH = join(HERE, "..", "agent", "data", "pi_prompt_outline.json");
const CACHE = process.env.SESSIONTREE_PI_CACHE ?? join(homedir(), ".cache", "sessiontree-pi");

function install() {
	mkdirSync(CACHE, { recursive: true });
	const manifest = join(CACHE, "package.json");
	if (!existsSync(manifest)) writeFileSync(manifest, '{"name": "sessiontree-pi-cache", "private": true}\n');
	const nodePackage = `node-linux-${process.arch}`;
	const wanted = [
		[PI_PACKAGE, PI_VERSION],
		[nodePackage, NODE_VERSION],
	];
	const missing = wanted.filter(([name, version]) => {
		const path = join(CACHE, "node_modules", name, "package.json");
		return !existsSync(path) || JSON.parse(readFileSync(path, "utf8")).version !== version;
	});
	if (missing.length > 0) {
		const specs = missing.map(([name, version]) => `${name}@${version}`);
		console.error(`installing ${specs.join(" ")} into ${CACHE}`);
		execFileSync("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", CACHE, ...specs], {
			stdio: ["ignore", "inherit", "inherit"],
		});
	}
	return join(CACHE, "node_modules", nodePackage, "bin", "node");
}

if (process.argv[2] !== "--inside") {
	const node = install();
	const home = mkdtempSync(join(tmpdir(), "pi-outline-home-"));
	try {
		execFileSync(node, [fileURLToPath(import.meta.url), "--inside"], {
			stdio: "inherit",
			env: { ...process.env, SESSIONTREE_PI_CACHE: CACHE, HOME: home, PI_CODING_AGENT_DIR: join(home, "unused-agent-dir") },
		});
	} finally {
		rmSync(home, { recursive: true, force: true });
	}
	process.exit(0);
}

// ---- inside Node 22, with pi importable ----
const DIST = join(CACHE, "node_modules", PI_PACKAGE, "dist");
const load = (path) => import(pathToFileURL(join(DIST, path)).href);
const pi = await load("index.js");
const { buildSystemPromptSections } = await load("core/system-prompt.js");
const { resolveProjectTrusted } = await load("core/project-trust.js");
const { expandPromptTemplate } = await load("core/prompt-templates.js");
const { DefaultResourceLoader, SettingsManager, SessionManager, createAgentSession, formatSkillsForPrompt } = pi;
const { ProjectTrustStore, hasTrustRequiringProjectResources } = pi;

const spec = JSON.parse(readFileSync(SPEC_PATH, "utf8"));

function buildProject(root, scenario) {
	const removed = scenario.remove ?? [];
	const gone = (rel) => removed.some((r) => rel === r || rel.startsWith(`${r}/`));
	const files = { ...spec.files, ...(scenario.files ?? {}) };
	for (const [rel, content] of Object.entries(files)) {
		if (gone(rel)) continue;
		const path = join(root, rel);
		mkdirSync(dirname(path), { recursive: true });
		writeFileSync(path, content.replaceAll("{root}", root));
	}
}

function relative(root) {
	const swap = (text) => (typeof text === "string" ? text.replaceAll(root, "{root}") : text);
	const info = (s) =>
		s && { path: swap(s.path), source: s.source, scope: s.scope, origin: s.origin, baseDir: swap(s.baseDir) };
	return { swap, info };
}

// Which rule each bullet of <rules> came from: a tool's guideline, the shell fallback, or the fixed pair.
function ruleOrigins(body, options, declared) {
	const bullets = body.split("\n").map((line) => line.replace(/^- /, ""));
	return bullets.map((bullet, index) => {
		const owner = declared.find((name) => (options.toolGuidelines[name] ?? []).map((g) => g.trim()).includes(bullet));
		if (owner) return owner;
		if (index >= bullets.length - 2) return "fixed";
		return "fallback";
	});
}

function outlineSections(sections, options, swap) {
	const declared = options.selectedTools.filter((name) => !options.hiddenTools.includes(name));
	const out = [];
	for (const [name, text] of Object.entries(sections)) {
		const body = name === "preamble" ? text : text.slice(`<${name}>\n`.length, -`\n</${name}>`.length);
		const entry = { name };
		if (name === "preamble") {
			if (options.customPrompt) entry.custom = swap(body);
			else entry.kind = "default";
		} else if (name === "tools") {
			const [list, trailer] = body.split("\n\n");
			entry.tools = list === "(none)" ? [] : list.split("\n").map((line) => line.slice(2, line.indexOf(":")));
			entry.trailerLines = trailer.split("\n").length;
		} else if (name === "rules") {
			entry.origins = ruleOrigins(body, options, declared);
		} else if (name === "docs") {
			entry.lines = body.split("\n").length;
		} else if (name === "project_context") {
			entry.body = swap(`{heading}${body.slice(body.indexOf("\n\n"))}`);
		} else if (name === "skills") {
			const cut = body.indexOf("\n\n<available_skills>");
			const intro = body.slice(0, cut);
			const kinds = ["read", "bash", "indirect"];
			entry.reader = kinds.find((k) => formatSkillsForPrompt(options.skills, k).trim().startsWith(intro));
			entry.body = swap(`{intro}${body.slice(cut)}`);
		} else {
			entry.body = swap(body);
		}
		out.push(entry);
	}
	return out;
}

async function record(scenario) {
	const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-outline-")));
	try {
		buildProject(root, scenario);
		const { swap, info } = relative(root);
		const cwd = join(root, spec.cwd);
		const agentDir = join(root, spec.agent_dir);
		process.env.HOME = join(root, spec.home);
		const fill = (value) => (typeof value === "string" ? value.replaceAll("{root}", root) : value);

		// As pi's main.ts does in print/json/rpc mode: no UI, so "ask" means untrusted.
		const override = scenario.approve ?? undefined;
		const trustStore = new ProjectTrustStore(agentDir);
		const startup = SettingsManager.create(cwd, agentDir, { projectTrusted: false });
		const needsTrust = hasTrustRequiringProjectResources(cwd);
		const resolve = override === undefined && needsTrust;
		let trusted = resolve ? false : (override ?? trustStore.get(cwd) ?? !needsTrust);
		const settingsManager = SettingsManager.create(cwd, agentDir, { projectTrusted: trusted });
		const loader = new DefaultResourceLoader({
			cwd,
			agentDir,
			settingsManager,
			noContextFiles: scenario.no_context_files ?? false,
			systemPrompt: fill(scenario.system_prompt),
			appendSystemPrompt: scenario.append_system_prompt?.map(fill),
			additionalSkillPaths: (scenario.skill_paths ?? []).map(fill),
			additionalPromptTemplatePaths: (scenario.prompt_paths ?? []).map(fill),
		});
		const ui = { select: async () => undefined, confirm: async () => false, input: async () => undefined, notify() {} };
		await loader.reload(
			resolve
				? {
						resolveProjectTrust: async ({ extensionsResult }) => {
							trusted = await resolveProjectTrusted({
								cwd,
								trustStore,
								trustOverride: override,
								defaultProjectTrust: startup.getDefaultProjectTrust(),
								extensionsResult,
								projectTrustContext: { cwd, mode: "rpc", hasUI: false, ui },
							});
							return trusted;
						},
					}
				: undefined,
		);
		const { session } = await createAgentSession({
			cwd,
			agentDir,
			settingsManager,
			resourceLoader: loader,
			sessionManager: SessionManager.inMemory(cwd),
			...(scenario.tools ? { tools: scenario.tools } : {}),
		});
		const options = session._baseSystemPromptOptions;
		const sections = buildSystemPromptSections(options);
		const rendered = Object.values(sections)
			.filter((s) => s.length > 0)
			.join("\n\n");
		if (rendered !== session.systemPrompt) throw new Error(`${scenario.name}: sections do not render the prompt`);

		const skills = loader.getSkills();
		const prompts = loader.getPrompts();
		const skillDirs = new Map(skills.skills.map((s) => [s.filePath, s.baseDir]));
		const expand = (input) => {
			let text = session._expandSkillCommand(input);
			if (text !== input && text.startsWith("<skill ")) {
				const lines = text.split("\n");
				lines[1] = "{references}";
				text = lines.join("\n");
			}
			return swap(expandPromptTemplate(text, [...session.promptTemplates]));
		};
		const diagnostics = [...skills.diagnostics, ...prompts.diagnostics].map((d) => ({
			type: d.type,
			path: swap(d.path),
			...(d.collision ? { name: d.collision.name, winner: swap(d.collision.winnerPath) } : {}),
		}));
		session.dispose();
		return {
			name: scenario.name,
			trusted,
			activeTools: session.getActiveToolNames(),
			sections: outlineSections(sections, options, swap),
			contextFiles: loader.getAgentsFiles().agentsFiles.map((f) => ({ path: swap(f.path), content: f.content })),
			systemPromptSource: swap(loader.getSystemPromptSource()?.path) ?? null,
			appendSources: loader.getAppendSystemPromptSources().map((s) => swap(s.path)),
			skills: skills.skills.map((s) => ({
				name: s.name,
				description: s.description,
				path: swap(s.filePath),
				baseDir: swap(skillDirs.get(s.filePath)),
				disableModelInvocation: s.disableModelInvocation,
			})),
			templates: prompts.prompts.map((t) => ({
				name: t.name,
				description: t.description,
				argumentHint: t.argumentHint ?? null,
				content: t.content,
				path: swap(t.filePath),
			})),
			commands: [
				...prompts.prompts.map((t) => ({ name: t.name, description: t.description, source: "prompt", sourceInfo: info(t.sourceInfo) })),
				...skills.skills.map((s) => ({ name: `skill:${s.name}`, description: s.description, source: "skill", sourceInfo: info(s.sourceInfo) })),
			],
			diagnostics,
			expansions: spec.inputs.map((input) => ({ input, output: expand(input) })),
		};
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
}

const scenarios = [];
for (const scenario of spec.scenarios) scenarios.push(await record(scenario));
const outline = { pi: `${PI_PACKAGE}@${PI_VERSION}`, spec: "tests/pi_outline/project.json", scenarios };
mkdirSync(dirname(OUT_PATH), { recursive: true });
writeFileSync(OUT_PATH, `${JSON.stringify(outline, null, "\t")}\n`);
console.error(`wrote ${OUT_PATH} (${scenarios.length} scenarios)`);
