/**
 * The compiled executable (bun run compile → dist/mcpmgr): version injected at build
 * time, no .env / bunfig.toml autoloading from the working directory, and a working
 * proxy used by the SDK client.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import pkg from "../../package.json" with { type: "json" };
import { startConformanceServer, type RunningFixture } from "../support/conformance.ts";
import { REPO_ROOT, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const binary = join(REPO_ROOT, "dist/mcpmgr");
// A reproducible build's date: the executable must report this, not the time it was built.
const SOURCE_DATE_EPOCH = "1767225600";
let fixture: RunningFixture;
let workdir: string;

beforeAll(async () => {
  const build = Bun.spawnSync([process.execPath, "run", "compile"], {
    cwd: REPO_ROOT,
    env: { ...process.env, SOURCE_DATE_EPOCH },
    stderr: "pipe",
    stdout: "pipe",
  });
  if (!build.success) throw new Error(`compile failed:\n${build.stderr.toString()}`);
  fixture = await startConformanceServer();
  // A directory with files Bun would load if autoloading were on: both would break the run.
  workdir = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-"));
  await writeFile(join(workdir, ".env"), "MCPMGR_MAX_REQUEST_BYTES=not-a-number\n");
  await writeFile(join(workdir, "preload.ts"), 'console.log("PRELOADED"); process.exit(7);\n');
  await writeFile(join(workdir, "bunfig.toml"), 'preload = ["./preload.ts"]\n');
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

test("--version prints the version injected at build time", () => {
  const run = Bun.spawnSync([binary, "--version"], { cwd: workdir });
  expect(run.exitCode).toBe(0);
  const printed = run.stdout.toString().trim();
  expect(printed.startsWith(pkg.version)).toBe(true);
  expect(printed).toMatch(/^\d+\.\d+\.\d+(\+[0-9a-f]+)?$/);
});

test("version --format json reports the build: commit, SOURCE_DATE_EPOCH's date, the Bun inside", () => {
  const run = Bun.spawnSync([binary, "version", "--format", "json"], { cwd: workdir });
  expect(run.exitCode).toBe(0);
  const head = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: REPO_ROOT }).stdout.toString().trim();
  const printedVersion = Bun.spawnSync([binary, "--version"], { cwd: workdir }).stdout.toString().trim();
  expect(JSON.parse(run.stdout.toString())).toEqual({
    version: printedVersion,
    commit: head,
    buildDate: "2026-01-01T00:00:00Z",
    bun: Bun.version,
    os: process.platform,
    arch: process.arch,
  });
});

test("completion and help from the binary: the scripts and the examples", () => {
  const bash = Bun.spawnSync([binary, "completion", "bash"], { cwd: workdir });
  expect(bash.exitCode).toBe(0);
  expect(bash.stdout.toString()).toContain("complete -F _mcpmgr mcpmgr");
  const help = Bun.spawnSync([binary, "list", "--help"], { cwd: workdir, env: { ...process.env, NO_COLOR: "1" } });
  expect(help.stdout.toString()).toContain("EXAMPLES\n\n  # ");
});

test("a usage error exits 2 with one line, from the binary too", () => {
  const run = Bun.spawnSync([binary, "proxy", "x", "--target-uri", "http://127.0.0.1:9/mcp", "--port", "0"], {
    cwd: workdir,
    env: { ...process.env, NO_COLOR: "1" },
  });
  expect(run.exitCode).toBe(2);
  expect(run.stderr.toString().trim().split("\n")).toHaveLength(1);
});

test("option files read again by the bundled yaml and jsonc-parser: one line for a duplicate key or a syntax error", async () => {
  // jsonc-parser's main entry is a UMD bundle whose inner requires the executable cannot resolve.
  const files: [string, string, string][] = [
    ["dup.json", '{"network": {},\n "network": {}}', 'the key "network" is given twice in one object (line 2)'],
    ["bad.json", '{"read": ghp_notquoted}', "not valid JSON (line 1, column 10: invalid symbol)"],
  ];
  for (const [name, text, said] of files) {
    await writeFile(join(workdir, name), text);
    const run = Bun.spawnSync(
      [binary, "run", "--foreground", "npx://whatever", "--permission-profile", join(workdir, name)],
      { cwd: workdir, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: join(workdir, "home") } },
    );
    expect(run.stderr.toString()).toContain(said);
    expect(run.exitCode).toBe(2);
  }
  const yaml = join(workdir, "dup.yaml");
  await writeFile(yaml, 'version: "1.0"\ntype: cedarv1\ncedar:\n  policies: []\n  policies: []\n');
  const run = Bun.spawnSync([binary, "run", "--foreground", "http://127.0.0.1:9/mcp", "--authz-config", yaml], {
    cwd: workdir,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: join(workdir, "home") },
  });
  expect(run.stderr.toString()).toContain('the key "policies" is given twice in one object (line 5)');
  // The yaml library's other paths in the executable: a syntax error, an alias with no anchor, and
  // merge keys (two in one mapping), which are no duplicates: that file passes on to its policy check.
  const yamlFiles: [string, string][] = [
    ['version: "1.0"\ncedar:\n  policies: [\n', "not valid YAML (line 4, column 1: "],
    ['version: "1.0"\ntype: cedarv1\ncedar:\n  policies: *p\n', "an alias (*) with no anchor (&)"],
    ['version: "1.0"\ntype: cedarv1\ncedar:\n  <<: {policies: []}\n  <<: {policies: ["nonsense"]}\n', "--authz-config"],
  ];
  for (const [text, said] of yamlFiles) {
    await writeFile(yaml, text);
    const again = Bun.spawnSync([binary, "run", "--foreground", "http://127.0.0.1:9/mcp", "--authz-config", yaml], {
      cwd: workdir,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: join(workdir, "home") },
    });
    expect(again.stderr.toString()).toContain(said);
    expect(again.stderr.toString()).not.toContain("given twice");
    expect(again.stderr.toString()).not.toContain("unexpected error");
    expect(again.exitCode).toBe(2);
  }
});

test("the binary proxies an MCP server for the SDK client, ignoring .env and bunfig.toml in its directory", async () => {
  const proxy = await spawnUntil([binary, "proxy", "e2e", "--target-uri", fixture.url], /^(http:\/\/\S+)$/m, {
    cwd: workdir,
  });
  try {
    const url = proxy.match[1] as string;
    const client = new Client({ name: "e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("test_simple_text");
    const result = await client.callTool({ name: "test_simple_text", arguments: {} });
    expect(JSON.stringify(result.content)).toContain("text");
    await client.close();
    expect(proxy.output()).not.toContain("PRELOADED");
  } finally {
    expect(await proxy.stop()).toBe(0);
  }
});

test("one-shot commands run in the interpreter; a proxy gets the JIT back for its hot path", async () => {
  // Asked to, JavaScriptCore reports every function it compiles ("Optimized ... using Baseline").
  const reportJit = { BUN_JSC_reportCompileTimes: "1" };
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-jit-"));
  try {
    for (const argv of [["--version"], ["--help"], ["list"], ["registry", "list"]]) {
      const run = Bun.spawnSync([binary, ...argv], {
        cwd: workdir,
        env: { ...process.env, ...reportJit, NO_COLOR: "1", MCPMGR_HOME: home },
      });
      expect(run.exitCode).toBe(0);
      expect(`${argv.join(" ")}: ${run.stderr.toString()}`).not.toContain("Optimized");
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
  const proxy = await spawnUntil([binary, "proxy", "e2e-jit", "--target-uri", fixture.url], /^(http:\/\/\S+)$/m, {
    cwd: workdir,
    env: reportJit,
  });
  try {
    const client = new Client({ name: "e2e-jit", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.match[1] as string)));
    for (let i = 0; i < 100; i++) await client.listTools();
    await client.close();
    expect(proxy.output()).toContain("Optimized");
  } finally {
    expect(await proxy.stop()).toBe(0);
  }
});

test("the binary runs a detached workload through its own supervisor, and removes it", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-home-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  try {
    const run = Bun.spawnSync([binary, "run", "npx://./test/fixtures/sandbox-probe", "--name", "binprobe"], {
      cwd: REPO_ROOT,
      env,
      timeout: 120_000,
    });
    expect(run.exitCode).toBe(0);
    const client = new Client({ name: "e2e-detached", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(run.stdout.toString().trim())));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("env");
    await client.close();
    const listed = JSON.parse(Bun.spawnSync([binary, "list", "--format", "json"], { env }).stdout.toString()) as {
      name: string;
      status: string;
    }[];
    expect(listed).toEqual([expect.objectContaining({ name: "binprobe", status: "running" })]);
    expect(Bun.spawnSync([binary, "rm", "binprobe"], { env, timeout: 60_000 }).exitCode).toBe(0);
    expect(Bun.spawnSync(["pgrep", "-f", "__supervise binprobe"]).stdout.toString().trim()).toBe("");
  } finally {
    removeLeftover(env, "binprobe"); // a failed expectation above must not leave its supervisor running
    await rm(home, { recursive: true, force: true });
  }
}, 120_000);

test("the binary stops, starts and removes several workloads at once (the batch code is a chunk loaded on demand)", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-home-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  const names = ["binbatch-a", "binbatch-b"];
  const mcpmgr = (...args: string[]) => {
    const result = Bun.spawnSync([binary, ...args], { cwd: REPO_ROOT, env, timeout: 120_000 });
    return { code: result.exitCode, stderr: result.stderr.toString() };
  };
  try {
    for (const name of names) expect(mcpmgr("run", "npx://./test/fixtures/sandbox-probe", "--name", name).code).toBe(0);
    const stopped = mcpmgr("stop", "--all");
    expect([stopped.code, stopped.stderr.split("\n").filter(Boolean).sort()]).toEqual([
      0,
      names.map((name) => `[info] stopped ${name}`),
    ]);
    const started = mcpmgr("start", ...names);
    expect(started.code).toBe(0);
    for (const name of names) expect(started.stderr).toContain(`[info] started ${name} at http://127.0.0.1:`);
    const removed = mcpmgr("rm", "--all");
    expect(removed.code).toBe(0);
    for (const name of names) expect(removed.stderr).toContain(`[info] removed ${name}`);
    expect(Bun.spawnSync(["pgrep", "-f", "__supervise binbatch-"]).stdout.toString().trim()).toBe("");
  } finally {
    for (const name of names) removeLeftover(env, name);
    await rm(home, { recursive: true, force: true });
  }
}, 180_000);

test("the binary decides Cedar policies in its own evaluator (__cedar-evaluator), which leaves with the workload", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-cedar-"));
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  const policies = join(home, "authz.json");
  await writeFile(
    policies,
    JSON.stringify({
      version: "1.0",
      type: "cedarv1",
      cedar: { policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"env");'] },
    }),
  );
  // Named after the wire's version and the build (state/cedar-socket-path.ts): the binary's own.
  const socket = join(home, "run", "cedar", "evaluator-v2-");
  const evaluators = () =>
    Bun.spawnSync(["pgrep", "-f", `__cedar-evaluator ${socket}`])
      .stdout.toString()
      .trim()
      .split("\n")
      .filter(Boolean);
  try {
    const run = Bun.spawnSync(
      [binary, "run", "npx://./test/fixtures/sandbox-probe", "--name", "bincedar", "--authz-config", policies],
      { cwd: REPO_ROOT, env, timeout: 120_000 },
    );
    expect(run.exitCode).toBe(0);
    const client = new Client({ name: "e2e-cedar", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(run.stdout.toString().trim())));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["env"]);
    const denied = await client.callTool({ name: "read_file", arguments: { path: "/etc/hostname" } }).catch(String);
    expect(String(denied)).toContain("Forbidden");
    await client.close();
    const [pid] = evaluators();
    expect(pid).toBeDefined();
    // The evaluator is this executable, started with its hidden command.
    expect(await readlinkExe(Number(pid))).toBe(await realPath(binary));
    expect(Bun.spawnSync([binary, "rm", "bincedar"], { env, timeout: 60_000 }).exitCode).toBe(0);
    const deadline = Date.now() + 20_000;
    while (evaluators().length > 0 && Date.now() < deadline) await Bun.sleep(100);
    expect(evaluators()).toEqual([]);
  } finally {
    removeLeftover(env, "bincedar");
    await rm(home, { recursive: true, force: true });
  }
}, 120_000);

test("the binary configures AI clients: Codex's TOML through the embedded WebAssembly editor, Claude Desktop with its own path", async () => {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-clients-"));
  const env = { ...process.env, NO_COLOR: "1", HOME: home, MCPMGR_HOME: join(home, ".mcpmgr"), XDG_CONFIG_HOME: "" };
  try {
    await mkdir(join(home, ".codex"));
    // client register refuses a client that is not installed: Claude Desktop's folder says it is.
    await mkdir(join(home, ".config", "Claude"), { recursive: true });
    await writeFile(join(home, ".codex", "config.toml"), '# mine\nmodel = "gpt-5" # keep\n');
    const run = Bun.spawnSync([binary, "run", fixture.url, "--name", "bin-remote"], { env, timeout: 120_000 });
    expect(run.exitCode).toBe(0);
    const url = run.stdout.toString().trim();
    expect(Bun.spawnSync([binary, "client", "register", "codex"], { env }).exitCode).toBe(0);
    expect(await readFile(join(home, ".codex", "config.toml"), "utf8")).toBe(
      `# mine\nmodel = "gpt-5" # keep\n\n[mcp_servers.bin-remote]\nurl = "${url}"\n`,
    );
    expect(Bun.spawnSync([binary, "client", "register", "claude-desktop"], { env }).exitCode).toBe(0);
    const desktop = JSON.parse(
      await readFile(join(home, ".config", "Claude", "claude_desktop_config.json"), "utf8"),
    ) as { mcpServers: Record<string, { command: string; args: string[] }> };
    expect(desktop.mcpServers["bin-remote"]).toMatchObject({ command: binary, args: ["proxy", "stdio", "bin-remote"] });
    expect(Bun.spawnSync([binary, "rm", "bin-remote"], { env, timeout: 60_000 }).exitCode).toBe(0);
  } finally {
    removeLeftover(env, "bin-remote"); // a failed expectation above must not leave its supervisor running
    await rm(home, { recursive: true, force: true });
  }
}, 120_000);

test("the binary edits a JSON client file that has content, and says where a JSON option file breaks", async () => {
  // jsonc-parser's CommonJS build loads its parts with require() calls the bundler cannot see: once a
  // require("jsonc-parser") brought it into the executable, every JSON client file with content failed
  // ('Cannot find module ./impl/format'), and so did the JSON option-file error.
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-e2e-json-"));
  const env = { ...process.env, NO_COLOR: "1", HOME: home, MCPMGR_HOME: join(home, ".mcpmgr"), XDG_CONFIG_HOME: "" };
  try {
    await writeFile(join(home, ".claude.json"), '{"numStartups": 3, "mcpServers": {"mine": {"command": "mine"}}}\n');
    const run = Bun.spawnSync([binary, "run", fixture.url, "--name", "bin-json"], { env, timeout: 120_000 });
    expect(run.exitCode).toBe(0);
    const url = run.stdout.toString().trim();
    const register = Bun.spawnSync([binary, "client", "register", "claude-code"], { env });
    expect(register.stderr.toString()).not.toContain("cannot update");
    expect(register.exitCode).toBe(0);
    const written = JSON.parse(await readFile(join(home, ".claude.json"), "utf8"));
    expect(written).toEqual({
      numStartups: 3,
      mcpServers: { mine: { command: "mine" }, "bin-json": { type: "http", url } },
    });
    await writeFile(join(home, "overrides.json"), '{"toolsOverride": {\n  "a": {"name": b}}}\n');
    const broken = Bun.spawnSync(
      [binary, "run", fixture.url, "--name", "bin-broken", "--tools-override", join(home, "overrides.json")],
      { env, timeout: 60_000 },
    );
    expect(broken.exitCode).toBe(2);
    expect(broken.stderr.toString()).toContain("line 2, column");
    expect(Bun.spawnSync([binary, "rm", "bin-json"], { env, timeout: 60_000 }).exitCode).toBe(0);
  } finally {
    removeLeftover(env, "bin-json"); // a failed expectation above must not leave its supervisor running
    await rm(home, { recursive: true, force: true });
  }
}, 120_000);

test("the binary builds and runs the network isolation helper from itself (BUN_BE_BUN): egress is filtered", async () => {
  const { fixtureImages, networkGateway } = await import("../support/docker-fixtures.ts");
  const images = await fixtureImages();
  const target = Bun.serve({ hostname: "0.0.0.0", port: 0, fetch: () => new Response("reached") });
  // A helper image an earlier version of this home built: building this binary's helper removes it.
  const { installId } = await import("../../src/state/install-id.ts");
  const { resolvePaths } = await import("../../src/state/paths.ts");
  const install = await installId(resolvePaths(process.env));
  const stale = `mcpmgr-egress:stale-e2e-${process.pid}`;
  const staleBuild = Bun.spawnSync(
    [
      "docker",
      "build",
      "-q",
      "-t",
      stale,
      ...["--label", "mcpmgr=true", "--label", "mcpmgr.role=egress-image", "--label", `mcpmgr.install=${install}`],
      "-",
    ],
    { stdin: Buffer.from(`FROM ${images.probe}\n`), stdout: "pipe", stderr: "pipe" },
  );
  expect(staleBuild.exitCode).toBe(0);
  const run = await spawnUntil(
    [binary, "run", "--foreground", images.probe, "--name", "e2e-isolated", "--isolate-network"],
    /^(http:\/\/\S+)$/m,
    {
      cwd: workdir,
      env: { MCPMGR_RUNTIME: "docker" },
      timeoutMs: 120_000,
    },
  );
  const client = new Client({ name: "e2e-isolated", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(run.match[1] as string)));
    // The host gateway is blocked by default: the helper answered (403), so it runs.
    const result = (await client.callTool({
      name: "http_get",
      arguments: { url: `http://${networkGateway()}:${target.port}/` },
    })) as { content: { text: string }[] };
    expect(result.content[0]?.text).toStartWith("status 403");
    await client.close();
  } finally {
    await run.stop();
    await target.stop(true);
  }
  expect(run.output()).not.toContain("error");
  expect(run.output()).toContain("building the network isolation helper image");
  expect(
    Bun.spawnSync(["docker", "image", "inspect", stale], { stdout: "ignore", stderr: "ignore" }).exitCode,
  ).not.toBe(0);
}, 240_000);

/** `mcpmgr rm NAME`, whatever it answers: cleanup after a test that may have stopped half way. */
async function readlinkExe(pid: number): Promise<string> {
  return (await import("node:fs/promises")).readlink(`/proc/${pid}/exe`);
}

async function realPath(path: string): Promise<string> {
  return (await import("node:fs/promises")).realpath(path);
}

function removeLeftover(env: Record<string, string | undefined>, name: string): void {
  Bun.spawnSync([binary, "rm", name], { env, timeout: 60_000, stdout: "ignore", stderr: "ignore" });
}
