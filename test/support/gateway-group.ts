/**
 * A group of real workloads for gateway tests: stdio fixture servers started with
 * `mcpmgr run` (detached, process runtime, their own MCPMGR_HOME), wrapped as local npm
 * packages whose bin starts the fixture under Bun, and `mcpmgr gateway` processes over them.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY, REPO_ROOT, spawnUntil, type Running } from "./processes.ts";

export const PROBE_FIXTURE = join(REPO_ROOT, "test/fixtures/bridge-probe-server.ts");
export const CONFORMANCE_FIXTURE = join(REPO_ROOT, "test/fixtures/conformance-server.ts");

export interface TestGroup {
  readonly home: string;
  /** `npx://DIR` of a package that starts the fixture. */
  packageOf(fixture: string): Promise<string>;
  mcpmgr(...args: string[]): { code: number; stdout: string; stderr: string };
  /** `mcpmgr run SOURCE --name NAME --group GROUP -- stdio`-style start; returns the workload URL. */
  run(source: string, name: string, group: string, ...serverArgs: string[]): string;
  gateway(group: string, ...args: string[]): Promise<Running & { url: string }>;
  /** The same with extra environment variables (a secrets provider, say). */
  gatewayWithEnv(env: Record<string, string>, group: string, ...args: string[]): Promise<Running & { url: string }>;
  cleanup(): Promise<void>;
}

export async function createTestGroup(): Promise<TestGroup> {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-gateway-"));
  const dirs: string[] = [];
  const gateways: Running[] = [];
  const packages = new Map<string, string>();
  const groups = new Set<string>();
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "process" };
  const mcpmgr = (...args: string[]) => {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], { cwd: REPO_ROOT, env, timeout: 120_000 });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  };
  const gatewayWithEnv = async (extra: Record<string, string>, group: string, ...args: string[]) => {
    const running = await spawnUntil([process.execPath, CLI_ENTRY, "gateway", group, ...args], /^(http:\/\/\S+)$/m, {
      env: { ...extra, MCPMGR_HOME: home, MCPMGR_RUNTIME: "process" },
      timeoutMs: 30_000,
    });
    gateways.push(running);
    return { ...running, url: running.match[1] as string };
  };
  return {
    home,
    mcpmgr,
    async packageOf(fixture) {
      const known = packages.get(fixture);
      if (known) return known;
      const dir = await mkdtemp(join(tmpdir(), "mcpmgr-gateway-pkg-"));
      dirs.push(dir);
      await writeFile(join(dir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${fixture} "$@"\n`);
      await writeFile(
        join(dir, "package.json"),
        JSON.stringify({ name: "gateway-fixture", version: "1.0.0", bin: { "gateway-fixture": "server.sh" } }),
      );
      packages.set(fixture, `npx://${dir}`);
      return `npx://${dir}`;
    },
    run(source, name, group, ...serverArgs) {
      // `run --group` refuses a group that does not exist; the default group always does.
      if (group !== "default" && !groups.has(group)) {
        const created = mcpmgr("group", "create", group);
        if (created.code !== 0) throw new Error(`mcpmgr group create ${group} failed:\n${created.stderr}`);
        groups.add(group);
      }
      // A remote URL runs no server of ours: no sandbox to choose a profile for.
      const remote = /^https?:\/\//.test(source);
      const args = [
        "run",
        source,
        "--name",
        name,
        "--group",
        group,
        ...(remote ? [] : ["--permission-profile", "none"]),
      ];
      const started = mcpmgr(...args, ...(serverArgs.length > 0 ? ["--", ...serverArgs] : []));
      if (started.code !== 0) {
        const logs = mcpmgr("logs", name);
        throw new Error(`mcpmgr run ${name} failed:\n${started.stderr}\n${logs.stdout}${logs.stderr}`);
      }
      return started.stdout.trim();
    },
    gateway: (group, ...args) => gatewayWithEnv({}, group, ...args),
    gatewayWithEnv,
    async cleanup() {
      await Promise.allSettled(gateways.map((g) => g.stop()));
      const listed = mcpmgr("list", "--format", "json");
      for (const row of JSON.parse(listed.stdout || "[]") as { name: string }[]) mcpmgr("rm", row.name);
      await Promise.all([home, ...dirs].map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}

/**
 * Whether a workload's update of `uri` reaches a gateway client (`updates`: the URIs of those it got):
 * polls `send`, which makes the workload announce one, until the client has `uri`'s, twice over. The
 * gateway announces each URI it follows again on a new member session itself (upstream-pool.ts
 * `changed-maybe.ts`), once per new session or reopened stream: that one can pass for one round, not for
 * both (unless the stream is reopened again meanwhile), so at least one came from the workload.
 */
export async function receivesUpdate(
  updates: string[],
  uri: string,
  send: () => unknown,
  ms = 20_000,
): Promise<boolean> {
  for (const _round of [1, 2]) {
    updates.length = 0;
    const got = await until(async () => {
      await send();
      return updates.includes(uri);
    }, ms);
    if (!got) return false;
  }
  return true;
}

/** Polls until the predicate holds (or fails the caller's expectation after `ms`). */
export async function until(predicate: () => boolean | Promise<boolean>, ms = 20_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await Bun.sleep(50);
  }
  return predicate();
}

/** An SDK client of a gateway, in its own session, with the transport that ends that session. */
export interface FollowingClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

/** A client of the gateway at `url` that records the URI of every `resources/updated` it gets in `updates`. */
export async function followingClient(url: string, name: string, updates: string[]): Promise<FollowingClient> {
  const client = new Client({ name, version: "1.0.0" });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

/** Ends the client's gateway session (a session already gone is fine) and closes the client. */
export async function endFollowingClient({ client, transport }: FollowingClient): Promise<void> {
  await transport.terminateSession().catch(() => {});
  await client.close();
}
