/**
 * The installation id (state/install-id.ts): unique per home, not per path, and kept as the path
 * hash for a home in use before it was stored. Each id is asked for in a fresh process, as every
 * command does (the id is read once per process).
 */
import { afterAll, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathInstallId } from "../../src/state/install-id.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { REPO_ROOT } from "../support/processes.ts";

const root = mkdtempSync(join(tmpdir(), "mcpmgr-install-id-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const script = `import { installId } from "./src/state/install-id.ts"; import { resolvePaths } from "./src/state/paths.ts"; console.log(await installId(resolvePaths()));`;

/** The id a command in this home would use, asked by a process of its own. */
async function idIn(home: string): Promise<string> {
  const proc = Bun.spawn([process.execPath, "-e", script], {
    cwd: REPO_ROOT,
    env: { ...process.env, MCPMGR_HOME: home },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  return out.trim();
}

const idFile = (home: string) => JSON.parse(readFileSync(join(home, "state", "install-id.json"), "utf8"));
const legacy = (home: string) => pathInstallId(resolvePaths({ MCPMGR_HOME: home }));

test("two homes made one after the other at the same path get different ids, and each keeps its own", async () => {
  const home = join(root, "twin");
  const first = await idIn(home);
  expect(first).toMatch(/^[0-9a-f]{16}$/);
  expect(await idIn(home)).toBe(first);
  expect(idFile(home).kind).toBe("random");
  expect(statSync(join(home, "state", "install-id.json")).mode & 0o777).toBe(0o600);
  rmSync(home, { recursive: true });
  const second = await idIn(home);
  expect(second).not.toBe(first);
  expect([first, second]).not.toContain(legacy(home));
});

test("a copy of a home at another path has another id", async () => {
  const home = join(root, "original");
  const id = await idIn(home);
  cpSync(home, join(root, "copy"), { recursive: true });
  expect(await idIn(join(root, "copy"))).not.toBe(id);
  expect(await idIn(home)).toBe(id);
});

test("a home with workloads from before the stored id keeps its path hash, and stores that", async () => {
  const home = join(root, "upgraded");
  mkdirSync(join(home, "state", "workloads", "fetch"), { recursive: true });
  writeFileSync(join(home, "state", "workloads", "fetch", "workload.json"), "{}");
  expect(await idIn(home)).toBe(legacy(home));
  expect(idFile(home)).toEqual({ schema_version: 1, kind: "path" });
  // Decided once: removing the workload later does not change it.
  rmSync(join(home, "state", "workloads", "fetch"), { recursive: true });
  expect(await idIn(home)).toBe(legacy(home));
});

test("a new home's first workload record does not make it look like an old one", async () => {
  const home = join(root, "first-record");
  await new WorkloadStore(resolvePaths({ MCPMGR_HOME: home })).create({
    name: "fetch",
    source: { kind: "package", ref: "npx://@modelcontextprotocol/server-fetch" },
    transport: "stdio",
    proxyPort: 45_901,
    runtime: "docker",
  });
  expect(idFile(home).kind).toBe("random");
  expect(await idIn(home)).not.toBe(legacy(home));
});

test("first commands started together in a new home agree on its id", async () => {
  const home = join(root, "together");
  const ids = await Promise.all([idIn(home), idIn(home), idIn(home)]);
  expect(new Set(ids).size).toBe(1);
});
