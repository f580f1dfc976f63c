/**
 * Fixture images for the container-runtime tests, built on top of the offline base images
 * (docker-images.ts) and tagged by a hash of their contents, so an edited fixture is
 * rebuilt and an unchanged one is reused across test files and runs.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ensureTestImages, NODE_BASE_IMAGE } from "./docker-images.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "./processes.ts";
import { ipamGateways } from "../../src/runtime/docker/network-isolation.ts";

export interface FixtureImages {
  /** The stdio sandbox probe (test/fixtures/sandbox-probe). */
  readonly probe: string;
  /** The stdio conformance server (2025-11-25), bundled, run by this Bun. */
  readonly conformance: string;
  /** The stdio conformance server that speaks 2026-07-28 itself, the same way. */
  readonly conformance2026: string;
  /** The streamable-http probe (test/fixtures/http-probe). */
  readonly httpProbe: string;
  /** The stdio server that misbehaves as its first argument says (test/fixtures/unruly-stdio). */
  readonly unruly: string;
}

export function docker(...args: string[]): { code: number; out: string; err: string } {
  const result = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: result.exitCode, out: result.stdout.toString().trim(), err: result.stderr.toString().trim() };
}

async function buildImage(
  name: string,
  files: Record<string, string | Uint8Array>,
  entrypoint: string[],
): Promise<string> {
  const dockerfile = [
    `FROM ${NODE_BASE_IMAGE}`,
    ...Object.keys(files).map((file) => `COPY ${file} /app/${file}`),
    `ENTRYPOINT ${JSON.stringify(entrypoint)}`,
    "",
  ].join("\n");
  const hash = createHash("sha256").update(dockerfile);
  for (const [file, content] of Object.entries(files)) hash.update(file).update(content);
  const tag = `mcpmgr-test/${name}:${hash.digest("hex").slice(0, 12)}`;
  if (docker("image", "inspect", tag).code === 0) return tag;
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-fixture-image-"));
  try {
    writeFileSync(join(dir, "Dockerfile"), dockerfile);
    for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content, { mode: 0o755 });
    const built = docker("build", "-q", "-t", tag, dir);
    if (built.code !== 0) throw new Error(`docker build ${tag} failed: ${built.err}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return tag;
}

let cached: Promise<FixtureImages> | undefined;

export function fixtureImages(): Promise<FixtureImages> {
  cached ??= (async () => {
    await ensureTestImages();
    // The fixtures use Bun APIs, so their images carry this Bun (node-base has the libraries it loads).
    const bundled = async (fixture: string) => {
      const bundle = await Bun.build({ entrypoints: [join(REPO_ROOT, fixture)], target: "bun", format: "esm" });
      if (!bundle.success) throw new Error(`bundling ${fixture} failed: ${bundle.logs.join("\n")}`);
      return (bundle.outputs[0] as Blob).text();
    };
    const conformanceJs = await bundled("test/fixtures/conformance-server.ts");
    const conformance2026Js = await bundled("test/fixtures/conformance-server-2026.ts");
    return {
      probe: await buildImage(
        "probe",
        { "probe.mjs": readFileSync(join(REPO_ROOT, "test/fixtures/sandbox-probe/probe.mjs")) },
        ["node", "/app/probe.mjs"],
      ),
      conformance: await buildImage(
        "conformance",
        { "server.mjs": conformanceJs, bun: readFileSync(process.execPath) },
        ["/app/bun", "/app/server.mjs", "stdio"],
      ),
      conformance2026: await buildImage(
        "conformance-2026",
        { "server.mjs": conformance2026Js, bun: readFileSync(process.execPath) },
        ["/app/bun", "/app/server.mjs", "stdio"],
      ),
      httpProbe: await buildImage(
        "http-probe",
        { "server.mjs": readFileSync(join(REPO_ROOT, "test/fixtures/http-probe/server.mjs")) },
        ["node", "/app/server.mjs"],
      ),
      unruly: await buildImage(
        "unruly-stdio",
        { "main.mjs": readFileSync(join(REPO_ROOT, "test/fixtures/unruly-stdio/main.mjs")) },
        ["node", "/app/main.mjs"],
      ),
    };
  })();
  return cached;
}

/**
 * The gateway of an engine network (the host's address on it). Debian's docker.io 20.10
 * reports only the subnet for the default bridge, and the bridge then takes the subnet's
 * first host address, so that is the answer when IPAM names no Gateway.
 */
export function networkGateway(network = "bridge"): string {
  const inspected = docker("network", "inspect", network, "--format", "{{json .IPAM.Config}}");
  if (inspected.code !== 0) throw new Error(`docker network inspect ${network} failed: ${inspected.err}`);
  const configs = (JSON.parse(inspected.out) ?? []) as { Subnet?: string; Gateway?: string }[];
  // The engine may record no Gateway (Debian's docker.io): the first address of the subnet, as mcpmgr works it out.
  const [gateway] = ipamGateways(configs.filter((c) => /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(c.Subnet ?? "")));
  if (gateway === undefined) throw new Error(`network ${network} has no IPv4 subnet: ${inspected.out}`);
  return gateway;
}

/** Containers and networks mcpmgr made for a workload (by label), for cleanliness checks. */
export function leftovers(workload: string): { containers: string[]; networks: string[] } {
  const filter = ["--filter", "label=mcpmgr=true", "--filter", `label=mcpmgr.workload=${workload}`];
  const containers = docker("ps", "-a", "-q", ...filter).out;
  const networks = docker("network", "ls", "-q", ...filter).out;
  return { containers: containers ? containers.split("\n") : [], networks: networks ? networks.split("\n") : [] };
}

/** `mcpmgr run --foreground ARGS` with the Docker runtime, and an SDK client connected to it. */
export async function runInDocker(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
) {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    env: { MCPMGR_RUNTIME: "docker", ...options.env },
    timeoutMs: options.timeoutMs ?? 240_000,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  const client = new Client({ name: "docker-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as {
      content: { text: string }[];
      isError?: boolean;
    };
    return { text: result.content[0]?.text ?? "", isError: result.isError === true };
  };
  return { ...running, client, call };
}

/**
 * `mcpmgr run --foreground ARGS` with the Docker runtime, expected to exit: its code and
 * output. A run that wrongly succeeds would serve forever: it is killed after `timeoutMs`.
 */
export async function runInDockerFails(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000) {
  const proc = Bun.spawn([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], {
    env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGINT"), timeoutMs);
  const [code, out, err] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]).finally(() => clearTimeout(timer));
  return { code, out, err };
}
