/**
 * Review H2, against both runtimes (real bwrap, real Docker) and real detached workloads: a
 * server with a writable volume replaces a path in it by a symbolic link and crashes, so the
 * supervisor starts it again. Before the fix the restart bound the link's target into the
 * server's view: `.mcpmgrignore` (bound read-only over itself) as a link to a host file, or a
 * nested volume's directory as a link to another host directory. Now nothing new becomes
 * visible: the start is refused and the workload says why.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const SECRET = "host secret outside every mount 5c1e";
let home: string;
let scratch: string;
let project: string | undefined;

function mcpmgr(runtime: string, ...args: string[]) {
  return mcpmgrIn(undefined, runtime, ...args);
}

function mcpmgrIn(cwd: string | undefined, runtime: string, ...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: runtime },
    timeout: 240_000,
    ...(cwd ? { cwd } : {}),
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

interface Row {
  name: string;
  status: string;
  restarts: number;
  lastError?: string;
}

async function call(url: string, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const client = new Client({ name: "planted-links", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const result = (await client.callTool({ name, arguments: args })) as { content: { text: string }[] };
    return result.content[0]?.text ?? "";
  } catch (err) {
    return `call failed: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    await client.close().catch(() => {});
  }
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-planted-home-"));
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-planted-"));
  await mkdir(join(scratch, "outside"));
  await writeFile(join(scratch, "outside/secret.txt"), SECRET);
  // Beside the volumes: the link's parent directory exists in the sandbox too, so bwrap binds it.
  await writeFile(join(scratch, "secret.txt"), SECRET);
});

afterAll(async () => {
  for (const runtime of ["process", "docker"]) {
    for (const name of ["h2-ignore", "h2-nested"]) mcpmgr(runtime, "rm", `${name}-${runtime}`);
  }
  mcpmgr("process", "rm", "h2-cwd");
  await rm(scratch, { recursive: true, force: true });
  if (project) await rm(project, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

for (const runtime of ["process", "docker"] as const) {
  describe(`${runtime}: links planted in a writable volume are not followed on restart`, () => {
    let source: string;
    beforeAll(async () => {
      source = runtime === "process" ? `npx://${REPO_ROOT}/test/fixtures/sandbox-probe` : (await fixtureImages()).probe;
    }, 300_000);

    /** Runs a detached workload, lets the server plant a link and crash, and returns what the restart did. */
    async function attack(name: string, volumes: string[], plant: { target: string; path: string }) {
      const started = mcpmgr(runtime, "run", source, "--name", name, "--permission-profile", "none", ...volumes);
      expect(`${started.code} ${started.stderr}`).toStartWith("0 ");
      const url = started.stdout.trim();
      expect(await call(url, "plant_link", plant)).toBe("planted");
      await call(url, "crash");
      const row = () =>
        (JSON.parse(mcpmgr(runtime, "list", "--format", "json").stdout) as Row[]).find((r) => r.name === name);
      // Polls until the supervisor has tried again: a refused start, or a server running again.
      const deadline = Date.now() + 90_000;
      let seen = row();
      while (Date.now() < deadline && !(seen?.lastError?.includes("UNSAFE") || seen?.lastError?.includes("link"))) {
        if (seen?.status === "running" && (seen.restarts ?? 0) >= 1) break;
        await Bun.sleep(200);
        seen = row();
      }
      return { url, row: seen };
    }

    test(".mcpmgrignore replaced by a link to a host file: the restart is refused, the file never shown", async () => {
      const name = `h2-ignore-${runtime}`;
      const volume = join(scratch, `vol-${runtime}`);
      await mkdir(volume);
      // bwrap makes the bind target at the server's path: the common `-v /srv/x:/srv/x` lets
      // the relative link resolve on the host (the review's reproduction); Docker resolves any.
      const target = runtime === "process" ? volume : "/data";
      const { url, row } = await attack(name, ["-v", `${volume}:${target}`], {
        target: "../secret.txt",
        path: join(target, ".mcpmgrignore"),
      });
      expect(await call(url, "read_file", { path: join(target, ".mcpmgrignore") })).not.toContain(SECRET);
      expect(mcpmgr(runtime, "logs", name).stdout + mcpmgr(runtime, "logs", name, "--proxy").stdout).not.toContain(
        SECRET,
      );
      expect(`${row?.status} ${row?.lastError}`).toContain(".mcpmgrignore is a symbolic link");
    }, 240_000);

    test("a nested volume's directory replaced by a link to another host directory: the restart is refused", async () => {
      const name = `h2-nested-${runtime}`;
      const volume = join(scratch, `nest-${runtime}`);
      await mkdir(join(volume, "cache"), { recursive: true });
      const { url, row } = await attack(
        name,
        ["-v", `${volume}:/nest`, "-v", `${join(volume, "cache")}:/cache`],
        // An absolute host path: the link is followed on the host, where mcpmgr resolves it.
        { target: join(scratch, "outside"), path: "/nest/cache" },
      );
      expect(await call(url, "read_file", { path: "/cache/secret.txt" })).not.toContain(SECRET);
      expect(`${row?.status} ${row?.lastError}`).toContain(
        `goes through the symbolic link ${join(volume, "cache")}, inside the writable mount ${volume}`,
      );
    }, 240_000);
  });
}

test("process: a working directory inside the writable volume, replaced by a link: start refuses instead of showing the link's target", async () => {
  // The link's target must be a directory the sandbox would show (not in /tmp): a project.
  await mkdir(join(REPO_ROOT, ".tmp"), { recursive: true });
  project = await mkdtemp(join(REPO_ROOT, ".tmp", "planted-cwd-"));
  await writeFile(join(project, "secret.txt"), SECRET);
  const volume = join(scratch, "cwd-volume");
  await mkdir(join(volume, "proj"), { recursive: true });
  const source = `npx://${REPO_ROOT}/test/fixtures/sandbox-probe`;
  const started = mcpmgrIn(
    join(volume, "proj"),
    "process",
    "run",
    source,
    "--name",
    "h2-cwd",
    "--permission-profile",
    "none",
    "-v",
    `${volume}:/nest`,
  );
  expect(`${started.code} ${started.stderr}`).toStartWith("0 ");
  const url = started.stdout.trim();
  expect(await call(url, "plant_link", { target: project, path: "/nest/proj" })).toBe("planted");
  expect(mcpmgr("process", "stop", "h2-cwd").code).toBe(0);
  const again = mcpmgr("process", "start", "h2-cwd");
  expect(await call(url, "read_file", { path: join(project, "secret.txt") })).not.toContain(SECRET);
  const row = (JSON.parse(mcpmgr("process", "list", "--format", "json").stdout) as Row[]).find(
    (r) => r.name === "h2-cwd",
  );
  expect(`${again.stderr} ${row?.lastError}`).toContain(
    `the working directory ${join(volume, "proj")} now leads to ${project}`,
  );
}, 120_000);
