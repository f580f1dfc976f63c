/**
 * Two homes on one engine (real dockerd). Homes at the same path (two dev containers with the
 * host's docker.sock, parallel CI jobs): each is bound at one path in a mount namespace of its own
 * (bwrap), as the real cases are. Before the install id was stored per home they had the same one,
 * and the second home's start removed the first one's same-named container as a leftover of its own.
 * And two homes at different paths that both want one workload name: the container name is shared,
 * and the second is told so in one line.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, fixtureImages, leftovers } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, spawnCollect } from "../support/processes.ts";
import { takenNameError } from "../../src/runtime/docker/container-name.ts";
import { detectEngine } from "../../src/runtime/docker/engine.ts";

setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), "mcpmgr-install-id-"));
/** The one path both twin homes are at, each in its own mount namespace. */
const shared = join(root, "home");
const tag = `${process.pid}`;
const names = [
  `hid-twin-${tag}`,
  `hid-other-${tag}`,
  `hid-same-${tag}`,
  `hid-iso-${tag}`,
  `hid-old-${tag}`,
  `hid-net-${tag}`,
  `hid-race-${tag}`,
  `hid-fg-${tag}`,
  `hid-own-${tag}`,
  `hid-start-${tag}`,
  `hid-start-${tag}-b`,
];
let probe: string;

beforeAll(async () => {
  probe = (await fixtureImages()).probe;
  for (const dir of ["A", "B", "home", "P1", "P2", "OLD", "P3", "S1", "S2", "S3"]) mkdirSync(join(root, dir));
}, 300_000);

afterAll(async () => {
  for (const name of names) docker("rm", "-f", `others-${name}`);
  for (const home of ["A", "B"]) for (const name of names) await twin(home, "rm", name);
  for (const home of ["P1", "P2", "OLD", "P3", "S1", "S2", "S3"])
    for (const name of names) await mcpmgr(join(root, home), "rm", name);
  for (const name of names) for (const id of leftovers(name).containers) docker("rm", "-f", id);
  for (const name of names) for (const id of leftovers(name).networks) docker("network", "rm", id);
  rmSync(root, { recursive: true, force: true });
});

function run(argv: string[], home: string) {
  return spawnCollect(argv, { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker" });
}

/** mcpmgr with MCPMGR_HOME at `shared`, where folder `which` is bound. */
const twin = (which: string, ...args: string[]) =>
  run(
    ["bwrap", "--dev-bind", "/", "/", "--bind", join(root, which), shared, process.execPath, CLI_ENTRY, ...args],
    shared,
  );

const mcpmgr = (home: string, ...args: string[]) => run([process.execPath, CLI_ENTRY, ...args], home);

const container = (name: string) => docker("inspect", "--format", "{{.Id}} {{.State.Running}}", `mcpmgr-${name}`).out;

const takenLine = (name: string) =>
  `the container name mcpmgr-${name} is taken on this docker engine by another mcpmgr installation's workload ${name}`;

test("a home at the same path as another, on one engine, leaves the other's running workload of the same name alone and says the name is taken", async () => {
  const [name, other] = names as [string, string];
  const first = await twin("A", "run", probe, "--name", name);
  expect({ code: first.code, failure: first.code === 0 ? "" : first.stderr }).toEqual({ code: 0, failure: "" });
  const before = container(name);
  expect(before).toEndWith(" true");
  const second = await twin("B", "run", probe, "--name", name);
  expect(second.code).not.toBe(0);
  expect(second.stderr).toContain(takenLine(name));
  expect(second.stderr).toContain("choose another --name");
  expect(second.stderr).not.toContain("rm -f");
  // The same container, still running: never removed as the second home's leftover.
  expect(container(name)).toBe(before);
  // The second home's other workloads start and stop without touching it either.
  expect((await twin("B", "run", probe, "--name", other)).code).toBe(0);
  expect((await twin("B", "rm", other)).code).toBe(0);
  expect(container(name)).toBe(before);
  expect((await twin("A", "list")).stdout).toMatch(new RegExp(`${name}\\s+running`));
});

test("two homes at different paths wanting one workload name: the second is told the name is another installation's", async () => {
  const name = names[2] as string;
  const first = await mcpmgr(join(root, "P1"), "run", probe, "--name", name);
  expect({ code: first.code, failure: first.code === 0 ? "" : first.stderr }).toEqual({ code: 0, failure: "" });
  const before = container(name);
  const second = await mcpmgr(join(root, "P2"), "run", probe, "--name", name);
  expect(second.code).not.toBe(0);
  expect(second.stderr).toContain(takenLine(name));
  expect(
    second.stderr
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("[error]")),
  ).toHaveLength(1);
  // In the foreground too: not taken for a foreground run of this home (whose hint is to remove it).
  const foreground = await mcpmgr(join(root, "P2"), "run", "--foreground", probe, "--name", name);
  expect(foreground.code).not.toBe(0);
  expect(foreground.stderr).toContain(takenLine(name));
  expect(foreground.stderr).not.toContain("rm -f");
  expect(container(name)).toBe(before);
});

test("with --isolate-network (networks named after the workload too) the second home is told the same, and nothing of the first is touched", async () => {
  const name = names[3] as string;
  const first = await mcpmgr(join(root, "P1"), "run", probe, "--isolate-network", "--name", name);
  expect({ code: first.code, failure: first.code === 0 ? "" : first.stderr }).toEqual({ code: 0, failure: "" });
  const before = { container: container(name), networks: leftovers(name).networks.sort() };
  const second = await mcpmgr(join(root, "P2"), "run", probe, "--isolate-network", "--name", name);
  expect(second.code).not.toBe(0);
  expect(second.stderr).toContain(takenLine(name));
  expect({ container: container(name), networks: leftovers(name).networks.sort() }).toEqual(before);
});

test("a home from before the stored id, its state folder read-only: stop of a workload whose supervisor died still removes its container", async () => {
  const name = names[4] as string;
  const home = join(root, "OLD");
  const state = join(home, "state");
  // A home made by the release before: its containers carry the hash of its path, and it has no file.
  mkdirSync(state, { recursive: true, mode: 0o700 });
  writeFileSync(join(state, "install-id.json"), JSON.stringify({ schema_version: 1, kind: "path" }), { mode: 0o600 });
  const started = await mcpmgr(home, "run", probe, "--name", name);
  expect({ code: started.code, failure: started.code === 0 ? "" : started.stderr }).toEqual({ code: 0, failure: "" });
  rmSync(join(state, "install-id.json"));
  // Its supervisor dies (OOM killer, kill -9): the container runs on, and only stop removes it.
  const { pid } = JSON.parse(readFileSync(join(state, "workloads", name, "status.json"), "utf8")) as { pid: number };
  process.kill(pid, "SIGKILL");
  expect(container(name)).toEndWith(" true");
  for (const argv of [
    ["mount", "--bind", state, state],
    ["mount", "-o", "remount,bind,ro", state],
  ]) {
    const done = Bun.spawnSync(argv);
    if (done.exitCode !== 0) throw new Error(`a read-only bind mount (root only) is needed: ${done.stderr.toString()}`);
  }
  try {
    const stopped = await mcpmgr(home, "stop", name);
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).not.toContain("cannot create the lock file");
  } finally {
    Bun.spawnSync(["umount", state]);
  }
  expect(leftovers(name).containers).toEqual([]);
});

/** Labels of an object another installation's mcpmgr made for workload `name`. */
const othersLabels = (name: string) =>
  ["mcpmgr=true", "mcpmgr.install=0123456789abcdef", `mcpmgr.workload=${name}`].flatMap((l) => ["--label", l]);

test("another installation's isolation networks made before its container (it is starting too): told the name is taken, its networks left", async () => {
  const name = names[5] as string;
  expect(docker("network", "create", ...othersLabels(name), `mcpmgr-${name}.internal`).code).toBe(0);
  const before = leftovers(name).networks;
  const second = await mcpmgr(join(root, "P2"), "run", probe, "--isolate-network", "--name", name);
  expect(second.code).not.toBe(0);
  const errors = second.stderr.split("\n").filter((line) => line.startsWith("[error]"));
  expect(errors).toHaveLength(1);
  expect(errors[0]).toContain(
    `the network name mcpmgr-${name}.internal is taken on this docker engine by another mcpmgr installation's workload ${name}`,
  );
  expect(errors[0]).not.toContain("engine is healthy");
  expect(leftovers(name).networks).toEqual(before);
});

test("a name conflict (409, real dockerd) on a container another installation holds gives the same one line; its own or another failure does not", async () => {
  const name = names[6] as string;
  expect(docker("create", "--name", `mcpmgr-${name}`, ...othersLabels(name), probe).code).toBe(0);
  const engine = await detectEngine({ want: "docker" });
  if (engine === undefined) throw new Error("dockerd is needed");
  const conflict = await engine.docker.createContainer({ name: `mcpmgr-${name}`, Image: probe }).then(
    () => undefined,
    (err: unknown) => err,
  );
  const refusal = await takenNameError(engine, "container", `mcpmgr-${name}`, "fedcba9876543210", conflict);
  expect(refusal?.code).toBe("WORKLOAD_EXISTS");
  expect(refusal?.message).toContain(
    `the container name mcpmgr-${name} is taken on this docker engine by another mcpmgr installation's workload ${name}`,
  );
  // Its own install id, or a failure other than a name conflict: not this refusal.
  expect(await takenNameError(engine, "container", `mcpmgr-${name}`, "0123456789abcdef", conflict)).toBeUndefined();
  expect(
    await takenNameError(engine, "container", `mcpmgr-${name}`, "fedcba9876543210", new Error("x")),
  ).toBeUndefined();
});

test("a foreground run's leftovers: the hint's docker rm -f takes this installation's containers only, not another's of the same workload name", async () => {
  const [name, own] = [names[7], names[8]] as [string, string];
  const home = join(root, "P3");
  const first = await mcpmgr(home, "run", probe, "--name", own);
  expect({ code: first.code, failure: first.code === 0 ? "" : first.stderr }).toEqual({ code: 0, failure: "" });
  const install = docker("inspect", "--format", '{{index .Config.Labels "mcpmgr.install"}}', `mcpmgr-${own}`).out;
  // What a killed 'run --foreground' of this home leaves, and another installation's container of that workload name.
  const labels = (id: string) =>
    ["mcpmgr=true", `mcpmgr.install=${id}`, `mcpmgr.workload=${name}`].flatMap((l) => ["--label", l]);
  expect(docker("run", "-d", "-i", "--name", `mcpmgr-${name}`, ...labels(install), probe).code).toBe(0);
  expect(docker("run", "-d", "-i", "--name", `others-${name}`, ...labels("0123456789abcdef"), probe).code).toBe(0);
  const again = await mcpmgr(home, "run", "--foreground", probe, "--name", name);
  expect(again.code).not.toBe(0);
  const removal = /docker rm -f [0-9a-f ]+(?=\))/.exec(again.stderr)?.[0];
  expect(removal).toBeDefined();
  expect(Bun.spawnSync(["sh", "-c", removal ?? "false"]).exitCode).toBe(0);
  expect(leftovers(name).containers).toHaveLength(1);
  expect(docker("inspect", "--format", "{{.State.Running}}", `others-${name}`).out).toBe("true");
});

test("start of a recorded workload whose container name another installation took since: the hint frees or renames it (start has no --name), and the renaming it gives works", async () => {
  const [name, renamed] = [names[9], names[10]] as [string, string];
  const [ours, theirs, third] = ["S1", "S2", "S3"].map((dir) => join(root, dir)) as [string, string, string];
  const first = await mcpmgr(ours, "run", probe, "--name", name);
  expect({ code: first.code, failure: first.code === 0 ? "" : first.stderr }).toEqual({ code: 0, failure: "" });
  const url = first.stdout.trim();
  expect((await mcpmgr(ours, "stop", name)).code).toBe(0);
  // While it is stopped, another installation takes the name on the engine.
  const other = await mcpmgr(theirs, "run", probe, "--name", name);
  expect({ code: other.code, failure: other.code === 0 ? "" : other.stderr }).toEqual({ code: 0, failure: "" });
  for (const command of ["start", "restart"]) {
    const again = await mcpmgr(ours, command, name);
    expect(again.code).toBe(1);
    const errors = again.stderr.split("\n").filter((line) => line.startsWith("[error]"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(takenLine(name));
    expect(errors[0]).not.toContain("--name for this workload");
    expect(errors[0]).toContain(
      `then 'mcpmgr start ${name}' again; or give ${name} another name: mcpmgr export ${name}`,
    );
  }
  // list gives the failed workload the same way out, not "start runs it again".
  const listed = await mcpmgr(ours, "list");
  expect(listed.stderr).toContain(`or give ${name} another name: mcpmgr export ${name}`);
  // run --from-config of its file elsewhere: the way out is the file's name.
  const file = join(root, `${name}.json`);
  expect((await mcpmgr(ours, "export", name, file)).code).toBe(0);
  const copy = await mcpmgr(third, "run", "--from-config", file);
  expect(copy.code).toBe(1);
  expect(copy.stderr).toContain(takenLine(name));
  expect(copy.stderr).toContain(`edit the --name value in "runOptions" of ${file}`);
  expect(copy.stderr).not.toContain("--name for this workload");
  // The renaming the hint gives: the file's name changed, the old record removed, the file run; same URL.
  const exported = JSON.parse(readFileSync(file, "utf8")) as { name: string; runOptions: string[] };
  exported.name = renamed;
  exported.runOptions[exported.runOptions.indexOf("--name") + 1] = renamed;
  writeFileSync(file, JSON.stringify(exported));
  expect((await mcpmgr(ours, "rm", name)).code).toBe(0);
  const moved = await mcpmgr(ours, "run", "--from-config", file);
  expect({ code: moved.code, failure: moved.code === 0 ? "" : moved.stderr }).toEqual({ code: 0, failure: "" });
  expect(moved.stdout.trim()).toBe(url);
  // The other installation's workload was never touched.
  expect(container(name)).toEndWith(" true");
});
