/**
 * The network-isolation helper's images (`mcpmgr-egress:<hash>`) do not pile up, and removing them never
 * pulls one from under someone else: each installation gets its own tag, labelled with its id, and after a
 * build only this installation's other helper images go; not another installation's, not one labelled
 * before images carried the installation, not an image mcpmgr did not build, and never one a container
 * (here a stopped one) uses. Real Docker; the helper is built from this Bun, as on a Linux host.
 *
 * The image lock (network-isolation.ts) spans only finding (or building) the image to creating the helper
 * from it: the networks are made before it, so a `start --all` of several isolated workloads is not
 * serialised on them.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureEgressImage } from "../../src/runtime/docker/egress-image.ts";
import { type ContainerEngine, detectEngine } from "../../src/runtime/docker/engine.ts";
import { createIsolation } from "../../src/runtime/docker/network-isolation.ts";
import { acquireLock } from "../../src/state/lock.ts";
import { docker, fixtureImages } from "../support/docker-fixtures.ts";

setDefaultTimeout(60_000);

const suffix = `${process.pid}-${randomBytes(4).toString("hex")}`;
const install = `egress-test-${suffix}`;
const otherInstall = `egress-other-${suffix}`;
const made: string[] = [];
const containers: string[] = [];
let engine: ContainerEngine;
let base: string;

beforeAll(async () => {
  base = (await fixtureImages()).probe;
  const found = await detectEngine({ want: "docker" });
  if (!found) throw new Error("no Docker engine");
  engine = found;
}, 300_000);

afterAll(() => {
  for (const container of containers) docker("rm", "-f", container);
  for (const tag of made) docker("rmi", tag);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const dirs: string[] = [];

/** A helper image tagged as an earlier version's, with these labels (and a distinct one, so each is its own image). */
function planted(name: string, labels: Record<string, string>): string {
  const tag = `mcpmgr-egress:${name}-${suffix}`;
  const args = Object.entries({ ...labels, "test.which": name }).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
  const built = Bun.spawnSync(["docker", "build", "-q", "-t", tag, ...args, "-"], {
    stdin: Buffer.from(`FROM ${base}\n`),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (built.exitCode !== 0) throw new Error(built.stderr.toString());
  made.push(tag);
  return tag;
}

function exists(tag: string): boolean {
  return docker("image", "inspect", tag).code === 0;
}

test("a build removes only this installation's unused helper images, and each installation has its own", async () => {
  const ours = { mcpmgr: "true", "mcpmgr.role": "egress-image", "mcpmgr.install": install };
  const superseded = planted("superseded", ours);
  const used = planted("used", ours);
  const created = docker("create", "--name", `egress-images-${suffix}`, used);
  expect(created.code).toBe(0);
  containers.push(`egress-images-${suffix}`);
  const another = planted("another", { ...ours, "mcpmgr.install": otherInstall });
  const unlabelled = planted("old", { mcpmgr: "true", "mcpmgr.role": "egress-image" });
  const notMcpmgr = planted("user", {});

  const progress: string[] = [];
  const tag = await ensureEgressImage(engine, install, (line) => progress.push(line));
  made.push(tag);
  expect(progress.join("\n")).toContain(`building the network isolation helper image ${tag}`);
  const labels = JSON.parse(docker("image", "inspect", "--format", "{{json .Config.Labels}}", tag).out);
  expect(labels).toMatchObject(ours);

  expect({
    superseded: exists(superseded),
    used: exists(used),
    another: exists(another),
    unlabelled: exists(unlabelled),
    notMcpmgr: exists(notMcpmgr),
  }).toEqual({ superseded: false, used: true, another: true, unlabelled: true, notMcpmgr: true });

  // Another installation on the same engine, same runtime: its own tag, and ours stays for our next start.
  const theirs = await ensureEgressImage(engine, otherInstall, () => {});
  made.push(theirs);
  expect(theirs).not.toBe(tag);
  expect(exists(tag)).toBe(true);
  // Its build removed its own superseded image, not ours.
  expect(exists(another)).toBe(false);
  // Found again, not rebuilt.
  const again: string[] = [];
  expect(await ensureEgressImage(engine, install, (line) => again.push(line))).toBe(tag);
  expect(again).toEqual([]);
}, 240_000);

test("same installation, two versions: a build waits while an older process goes from finding its image to its helper", async () => {
  // An upgrade of this installation while a supervisor of the older version runs: that supervisor has found
  // its helper image (under the image lock) and is about to create its helper container from it.
  const raceInstall = `egress-race-${suffix}`;
  const older = planted("older", { mcpmgr: "true", "mcpmgr.role": "egress-image", "mcpmgr.install": raceInstall });
  const stateDir = mkdtempSync(join(tmpdir(), "mcpmgr-egress-lock-"));
  dirs.push(stateDir);
  const imageLock = join(stateDir, "builds", "mcpmgr-egress.lock");
  const olderHolds = await acquireLock(imageLock);

  // The newer version starts an isolated workload: it must not build and remove the older image meanwhile.
  let sawWait = (): void => {};
  const waited = new Promise<"waited">((resolve) => {
    sawWait = () => resolve("waited");
  });
  const newer = createIsolation(engine, {
    workload: `egress-race-${suffix}`,
    labels: (role) => ({ mcpmgr: "true", "mcpmgr.install": raceInstall, "mcpmgr.role": role }),
    profile: {
      read: [],
      write: [],
      network: {
        outbound: { insecure_allow_all: false, allow_host: ["example.com"], allow_port: [443] },
        inbound: { allow_host: [] },
      },
      privileged: false,
    },
    allowGateway: false,
    onProgress: (line) => {
      if (line.startsWith("waiting for another mcpmgr")) sawWait();
    },
    imageLock,
  });
  const first = await Promise.race([
    waited,
    newer.then(
      () => "finished" as const,
      (err: unknown) => String(err),
    ),
  ]);

  // What needs no lock was done meanwhile (the networks): several workloads starting at once wait for
  // each other only for the image's find-or-build and the helper's create. No helper yet.
  const ofRace = ["--filter", `label=mcpmgr.install=${raceInstall}`, "--format", "{{.Name}}"];
  const whileWaiting = {
    networks: docker("network", "ls", ...ofRace)
      .out.split("\n")
      .filter(Boolean).length,
    helpers: docker("ps", "-a", ...ofRace)
      .out.split("\n")
      .filter(Boolean).length,
  };

  // The older process creates its helper from the image it found, then lets go of the lock.
  const helper = `egress-race-helper-${suffix}`;
  const created = docker("create", "--name", helper, older);
  containers.push(helper);
  await olderHolds.release();
  const isolation = await newer;
  await isolation.remove();
  const newTags = docker(
    "images",
    "--filter",
    `label=mcpmgr.install=${raceInstall}`,
    "--format",
    "{{.Repository}}:{{.Tag}}",
  );
  made.push(...newTags.out.split("\n").filter((tag) => tag !== "" && tag !== older));

  expect({ first, created: created.code, olderKept: exists(older), whileWaiting }).toEqual({
    first: "waited",
    created: 0,
    olderKept: true,
    whileWaiting: { networks: 2, helpers: 0 },
  });
}, 240_000);
