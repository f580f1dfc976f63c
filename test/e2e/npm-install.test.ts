/**
 * The npm packages as users get them. The real binaries are compiled (this machine's target
 * and one other, as `bun run compile` does for a release) and packed (`bun run pack`); a
 * local registry serves the tarballs, so `npm install mcpmgr` resolves the platform packages
 * as optional dependencies by name, version, os and cpu, exactly as from npmjs.com. Then:
 *   - with Node and npm on PATH and no Bun: npm installs the launcher and only this machine's
 *     binary, `npx mcpmgr --version` works, `mcpmgr proxy` serves an MCP client and stops on
 *     SIGTERM, and a missing or unfitting binary gets a one-line explanation;
 *   - with Bun on PATH and no Node: `bunx mcpmgr` does the same.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, realpathSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import pkg from "../../package.json" with { type: "json" };
import { hostTarget, type ReleaseTarget, releaseTargets } from "../../scripts/lib/release-targets.ts";
import { type RunningFixture, startConformanceServer } from "../support/conformance.ts";
import { type LocalRegistry, startLocalRegistry } from "../support/npm-registry.ts";
import { freePort, REPO_ROOT, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const host = hostTarget() as ReleaseTarget;
// Same OS, other CPU where there is one: npm must skip it on the cpu field alone.
const other = (releaseTargets.find((t) => t.os === host?.os && t.cpu !== host?.cpu) ??
  releaseTargets.find((t) => t !== host)) as ReleaseTarget;

let work: string;
let registry: LocalRegistry;
let fixture: RunningFixture;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end without blocking this process (the registry answers from it). */
async function run(cmd: string[], options: { cwd: string; env: Record<string, string> }): Promise<Result> {
  const proc = Bun.spawn(cmd, { ...options, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** A folder of symlinks to exactly these commands (and sh, which npm and bunx run bins through). */
async function toolbox(name: string, commands: readonly string[]): Promise<string> {
  const dir = join(work, name);
  await mkdir(dir, { recursive: true });
  for (const command of [...commands, "sh"]) {
    const found = Bun.which(command);
    if (found === null) throw new Error(`this test needs ${command} on PATH`);
    await symlink(realpathSync(found), join(dir, command));
  }
  return dir;
}

async function project(name: string): Promise<string> {
  const dir = join(work, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true }));
  return dir;
}

/** Starts `cmd` (mcpmgr proxy through a launcher), talks MCP through it, stops it with SIGTERM. */
async function proxyRoundTrip(cmd: string[], env: Record<string, string>, cwd: string): Promise<void> {
  const port = await freePort();
  const proxy = await spawnUntil(
    [...cmd, "proxy", "npm-e2e", "--target-uri", fixture.url, "--port", String(port)],
    /^(http:\/\/\S+)$/m,
    {
      cwd,
      env,
      timeoutMs: 60_000,
    },
  );
  try {
    const client = new Client({ name: "npm-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.match[1] as string)));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("test_simple_text");
    await client.close();
  } finally {
    expect(await proxy.stop("SIGTERM")).toBe(0);
  }
  // The executable behind the launcher stopped too: nothing listens on the port any more.
  expect(await fetch(`http://127.0.0.1:${port}/health`).catch(() => "closed")).toBe("closed");
}

beforeAll(async () => {
  if (host === undefined) throw new Error(`no release target for ${process.platform}-${process.arch}`);
  work = await mkdtemp(join(tmpdir(), "mcpmgr-npm-e2e-"));
  const dist = join(work, "dist");
  const bun = { cwd: REPO_ROOT, env: process.env as Record<string, string> };
  const compile = await run(
    [process.execPath, "scripts/compile.ts", "--target", `${host.id},${other.id}`, "--outdir", dist],
    bun,
  );
  if (compile.code !== 0) throw new Error(`compile failed:\n${compile.stderr}`);
  const packed = await run(
    [process.execPath, "scripts/pack.ts", "--dist", dist, "--only", `${host.id},${other.id}`],
    bun,
  );
  if (packed.code !== 0) throw new Error(`pack failed:\n${packed.stderr}`);
  const tarballs = (await readdir(join(dist, "npm")))
    .filter((f) => f.endsWith(".tgz"))
    .map((f) => join(dist, "npm", f));
  expect(tarballs.map((t) => t.split("/").at(-1)).sort()).toEqual(
    [
      `mcpmgr-${pkg.version}.tgz`,
      `${host.npmPackage}-${pkg.version}.tgz`,
      `${other.npmPackage}-${pkg.version}.tgz`,
    ].sort(),
  );
  registry = await startLocalRegistry(tarballs);
  fixture = await startConformanceServer();
}, 600_000);

afterAll(async () => {
  await fixture?.stop();
  await registry?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe("npm, on a machine with Node and no Bun", () => {
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    const bin = await toolbox("node-only", ["node", "npm", "npx"]);
    env = {
      HOME: work,
      PATH: bin,
      npm_config_registry: registry.url,
      npm_config_cache: join(work, "npm-cache"),
      npm_config_update_notifier: "false",
      npm_config_audit: "false",
      npm_config_fund: "false",
    };
    dir = await project("with-npm");
  });

  test("bun is not on PATH, node is", async () => {
    expect((await run(["sh", "-c", "command -v bun"], { cwd: dir, env })).code).not.toBe(0);
    expect((await run(["sh", "-c", "command -v node"], { cwd: dir, env })).code).toBe(0);
  });

  test("npm install mcpmgr installs the launcher and only this machine's binary package", async () => {
    const install = await run(["npm", "install", `mcpmgr@${pkg.version}`], { cwd: dir, env });
    expect(install.stderr).not.toContain("ERR");
    expect(install.code).toBe(0);
    expect(existsSync(join(dir, "node_modules/mcpmgr/bin/mcpmgr.cjs"))).toBe(true);
    expect(existsSync(join(dir, "node_modules", host.npmPackage, host.npmBinary))).toBe(true);
    // npm looked the other platform up and left it out on its cpu/os fields.
    expect(registry.requests).toContain(`/${other.npmPackage}`);
    expect(existsSync(join(dir, "node_modules", other.npmPackage))).toBe(false);
  }, 180_000);

  test("npx mcpmgr --version and node_modules/.bin/mcpmgr --version run the binary", async () => {
    for (const cmd of [
      ["npx", "mcpmgr", "--version"],
      [join(dir, "node_modules/.bin/mcpmgr"), "--version"],
    ]) {
      const result = await run(cmd, { cwd: dir, env });
      expect(result.stderr).toBe("");
      expect(result.stdout.trim()).toMatch(new RegExp(`^${pkg.version.replaceAll(".", "\\.")}(\\+[0-9a-f]+)?$`));
      expect(result.code).toBe(0);
    }
  }, 60_000);

  test("mcpmgr proxy through the launcher serves an MCP client and stops on SIGTERM", async () => {
    await proxyRoundTrip([join(dir, "node_modules/.bin/mcpmgr")], env, dir);
  }, 90_000);

  test("without its platform package the launcher names the package and how to install it", async () => {
    const bare = await project("without-optional");
    const install = await run(["npm", "install", "--omit=optional", `mcpmgr@${pkg.version}`], { cwd: bare, env });
    expect(install.code).toBe(0);
    expect(existsSync(join(bare, "node_modules", host.npmPackage))).toBe(false);
    const result = await run([join(bare, "node_modules/.bin/mcpmgr"), "--version"], { cwd: bare, env });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`the package ${host.npmPackage}`);
    expect(result.stderr).toContain(`npm install ${host.npmPackage}@${pkg.version}`);
  }, 180_000);

  test("a global install without its platform package: the launcher's advice for a global mcpmgr works", async () => {
    const prefix = join(work, "global-without-platform");
    const global = { cwd: work, env: { ...env, npm_config_prefix: prefix } };
    expect((await run(["npm", "install", "-g", `mcpmgr@${pkg.version}`], global)).code).toBe(0);
    // npm -g installs optional dependencies whatever --omit says; one whose download failed (a
    // registry mirror without it, a dropped connection) is skipped, which leaves this.
    await rm(join(prefix, "lib", "node_modules", "mcpmgr", "node_modules", host.npmPackage), { recursive: true });
    const launcher = join(prefix, "bin", "mcpmgr");
    const missing = await run([launcher, "--version"], global);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    const advice = `npm install -g ${host.npmPackage}@${pkg.version}`;
    expect(missing.stderr).toContain(`'${advice}' for a global mcpmgr`);
    // Followed word for word (the project form would install it where this launcher never looks).
    expect((await run(advice.split(" "), global)).code).toBe(0);
    const fixed = await run([launcher, "--version"], global);
    expect(fixed.stderr).toBe("");
    expect(fixed.code).toBe(0);
  }, 180_000);

  test("on a platform without a prebuilt binary the launcher says so in one line", async () => {
    const fakeArch = join(work, "fake-arch.cjs");
    await writeFile(fakeArch, 'Object.defineProperty(process, "arch", { value: "s390x" });\n');
    const launcher = join(dir, "node_modules/mcpmgr/bin/mcpmgr.cjs");
    const result = await run(["node", "--require", fakeArch, launcher, "--version"], { cwd: dir, env });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`there is no prebuilt mcpmgr for ${host.id.split("-")[0]}-s390x`);
    expect(result.stderr).toContain(host.id);
  }, 60_000);
});

describe("bunx, on a machine with Bun and no Node", () => {
  let env: Record<string, string>;
  let dir: string;
  let bunx: string;

  beforeAll(async () => {
    const bin = await toolbox("bun-only", ["bun"]);
    bunx = join(bin, "bunx");
    await symlink(join(bin, "bun"), bunx);
    env = {
      HOME: work,
      PATH: bin,
      TMPDIR: join(work, "bunx-tmp"),
      BUN_INSTALL_CACHE_DIR: join(work, "bun-cache"),
      NPM_CONFIG_REGISTRY: registry.url,
    };
    await mkdir(env.TMPDIR as string, { recursive: true });
    dir = await project("with-bunx");
  });

  test("node is not on PATH, bun is", async () => {
    expect((await run(["sh", "-c", "command -v node"], { cwd: dir, env })).code).not.toBe(0);
    expect((await run(["sh", "-c", "command -v bun"], { cwd: dir, env })).code).toBe(0);
  });

  test("bunx mcpmgr --version installs and runs this machine's binary", async () => {
    const result = await run([bunx, `mcpmgr@${pkg.version}`, "--version"], { cwd: dir, env });
    expect(result.stdout.trim()).toMatch(new RegExp(`^${pkg.version.replaceAll(".", "\\.")}(\\+[0-9a-f]+)?$`));
    expect(result.code).toBe(0);
  }, 180_000);

  test("bunx mcpmgr proxy serves an MCP client and stops on SIGTERM", async () => {
    await proxyRoundTrip([bunx, `mcpmgr@${pkg.version}`], env, dir);
  }, 90_000);
});
