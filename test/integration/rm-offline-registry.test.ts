/**
 * `rm` of a workload started from a registry entry's remote, with the registry (given by URL) no
 * longer answering, as on a machine gone offline: the workload is removed at once, and the line
 * about the OAuth login it keeps says where to look instead of waiting the 15 s a registry fetch
 * may take at a start. The registry is a real HTTP server in this process that stops answering;
 * the workload waits for its OAuth login (authorization endpoints given, nobody logs in).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "../support/protected-remote.ts";
import { CLI_ENTRY, freePort, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let silent = false;
let registry: ReturnType<typeof Bun.serve>;
let home: string;

beforeAll(async () => {
  registry = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      // Offline: the request is taken, and never answered.
      if (silent) await new Promise(() => {});
      return Response.json({
        servers: [
          {
            name: "far-remote",
            description: "A remote server, for rm offline",
            transport: "streamable-http",
            source: { remote: "http://127.0.0.1:9/mcp" },
            permissions: "network",
            tools: ["t"],
          },
        ],
      });
    },
  });
  home = await mkdtemp(join(tmpdir(), "mcpmgr-rm-offline-"));
});

afterAll(async () => {
  registry.stop(true);
  await rm(home, { recursive: true, force: true });
});

test("rm of a registry entry's remote does not wait for a registry that does not answer", async () => {
  const env = {
    ...process.env,
    NO_COLOR: "1",
    MCPMGR_HOME: home,
    MCPMGR_REGISTRY: `${registry.url.href}registry.json`,
  };
  const run = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "far-remote",
      "--remote-auth",
      "--remote-auth-client-id",
      "offline-client",
      "--remote-auth-authorize-url",
      "http://127.0.0.1:9/authorize",
      "--remote-auth-token-url",
      "http://127.0.0.1:9/token",
      "--remote-auth-skip-browser",
      "--remote-auth-callback-port",
      String(await freePort()),
      "--remote-auth-timeout",
      "60s",
    ],
    { cwd: REPO_ROOT, env, stdout: "ignore", stderr: "pipe" },
  );
  let runOutput = "";
  void (async () => {
    for await (const chunk of run.stderr) runOutput += new TextDecoder().decode(chunk);
  })();
  try {
    // The workload is recorded and waits for its login.
    await until(() => (runOutput.includes("Authorize mcpmgr at:") ? true : undefined), "the login prompt");
    silent = true;
    const startedAt = performance.now();
    const removed = Bun.spawnSync([process.execPath, CLI_ENTRY, "rm", "far-remote"], { cwd: REPO_ROOT, env });
    const took = performance.now() - startedAt;
    const said = removed.stderr.toString();
    expect(removed.exitCode).toBe(0);
    expect(said).toContain("removed far-remote");
    // Bounded by rm's 2 s for the registry, not the 15 s a start waits (a loaded machine: a margin).
    expect(took).toBeLessThan(8_000);
    expect(said).toContain(
      "the OAuth login of registry entry far-remote's remote may be kept in the secrets store; which remote that is could not be read from the registry",
    );
    expect(said).toContain("no answer within 2 s");
    expect(await run.exited).not.toBe(0);
  } finally {
    run.kill("SIGKILL");
  }
});
