/**
 * The set-ID guard (src/runtime/docker/setid-guard/guard.c, src/runtime/docker/setid-guard.ts) on this host:
 * rebuilt from its source with gcc, it and the embedded copy install the filter of setid-filter.ts
 * and run the command (through PATH for a bare name), and a set-ID mode is refused through every
 * ABI an x86_64 process can use; the filter's numbers are the kernel headers'; the container's
 * command and mount. The container itself: test/integration/docker-setid-guard.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverContainerOptions } from "../../src/runtime/docker/container-config.ts";
import { extract } from "tar-stream";
import { GUARD_DIR, guardArchive, guardedCommand, refuseMountOverGuard } from "../../src/runtime/docker/setid-guard.ts";
import { SETID_GUARD_X64 } from "../../src/runtime/docker/setid-guard-binary.ts";
import { expandPermissions } from "../../src/config/permission-profile.ts";
import { I386_MODE_CALLS, setIdGuardFilter, UNREADABLE_MODE_CALLS } from "../../src/runtime/setid-filter.ts";

const ROOT = join(import.meta.dir, "../..");
let dir: string;
let rebuilt: string;
let embedded: string;
let abiProbe: string;
let filter: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-guard-"));
  rebuilt = join(dir, "guard");
  const build = Bun.spawnSync(["bash", join(ROOT, "scripts/build-setid-guard.sh"), rebuilt], { stderr: "pipe" });
  if (build.exitCode !== 0) throw new Error(`build.sh: ${build.stderr.toString()}`);
  embedded = join(dir, "embedded-guard");
  writeFileSync(embedded, Buffer.from(SETID_GUARD_X64, "base64"), { mode: 0o755 });
  abiProbe = join(dir, "abi-probe");
  const probe = Bun.spawnSync(
    [
      "gcc",
      ...[
        "-static",
        "-nostdlib",
        "-Os",
        "-ffreestanding",
        "-fno-builtin",
        "-fno-stack-protector",
        "-fno-pie",
        "-no-pie",
      ],
      ...["-o", abiProbe, join(ROOT, "test/fixtures/setid-abi-probe/probe.c")],
    ],
    { stderr: "pipe" },
  );
  if (probe.exitCode !== 0) throw new Error(`gcc: ${probe.stderr.toString()}`);
  filter = join(dir, "filter");
  writeFileSync(filter, setIdGuardFilter());
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function guarded(guard: string, args: string[], env: Record<string, string> = { PATH: "/usr/bin:/bin" }) {
  const run = Bun.spawnSync([guard, ...args], { env, stdout: "pipe", stderr: "pipe" });
  return { code: run.exitCode, out: run.stdout.toString(), err: run.stderr.toString() };
}

/** A file of ours (its owner may set any bit without privilege), mode 0755. */
function target(name: string): string {
  const path = join(dir, name);
  writeFileSync(path, "");
  chmodSync(path, 0o755);
  return path;
}

test("the probe sets a set-user-ID mode through the native and i386 ABIs when nothing refuses it", () => {
  // Its own check: without a filter the modes go through (x32 only where the kernel has it).
  const out = guarded(abiProbe, [target("plain")]).out;
  expect(out).toMatch(/^native=0 i386=0 x32=(0|-38) creat=0\n$/);
});

for (const [which, guard] of [
  ["rebuilt from source", () => rebuilt],
  ["embedded", () => embedded],
] as const) {
  test(`${which}: a set-ID mode is refused through the native, i386 and x32 ABIs, and to a file open creates`, () => {
    const file = target(`abi-${which.length}`);
    const run = guarded(guard(), [filter, abiProbe, file]);
    // EPERM everywhere; x32 is refused by the filter before the kernel would say it has no x32.
    expect(run.out).toBe("native=-1 i386=-1 x32=-1 creat=-1\n");
    expect(lstatSync(file).mode & 0o7777).toBe(0o755);
    // open with O_CREAT and mode 04755: refused, nothing made.
    expect(lstatSync(`${file}.new`, { throwIfNoEntry: false })).toBeUndefined();
  });

  test(`${which}: chmod and mkdir refuse set-ID modes and allow the rest; a bare name is found on PATH`, () => {
    const file = target(`sh-${which.length}`);
    const work = join(dir, `work-${which.length}`);
    mkdirSync(work);
    const script = [
      `chmod 4755 ${file}; echo suid=$?`,
      `chmod g+s ${file}; echo sgid=$?`,
      `chmod 700 ${file}; echo plain=$?`,
      `mkdir -m 2775 ${work}/shared; echo mkdir_sgid=$?`,
      `mkdir -m 755 ${work}/dir; echo mkdir=$?`,
      `echo x > ${work}/new; echo create=$?`,
    ].join("; ");
    // `sh`: a bare name, searched in PATH's entries in order (the first does not hold it).
    const run = guarded(guard(), [filter, "sh", "-c", script], { PATH: `${work}/nothing-here:/usr/bin:/bin` });
    expect(run.out).toBe("suid=1\nsgid=1\nplain=0\nmkdir_sgid=1\nmkdir=0\ncreate=0\n");
    expect(lstatSync(file).mode & 0o7777).toBe(0o700);
  });

  test(`${which}: a script without "#!" runs through /bin/sh, as execvp (Docker's init) ran it; its status passes through`, () => {
    const bin = join(dir, `scripts-${which.length}`);
    mkdirSync(bin);
    writeFileSync(join(bin, "plain-script"), 'echo "ran:$0:$*"; exit 7\n', { mode: 0o755 });
    // A bare name found on PATH, and a path: both were run by the shell before the guard.
    const bare = guarded(guard(), [filter, "plain-script", "a", "b c"], { PATH: `${bin}:/usr/bin:/bin` });
    expect(`${bare.code} ${bare.out}${bare.err}`).toBe(`7 ran:${bin}/plain-script:a b c\n`);
    const path = guarded(guard(), [filter, join(bin, "plain-script"), "x"]);
    expect(`${path.code} ${path.out}${path.err}`).toBe(`7 ran:${bin}/plain-script:x\n`);
  });

  test(`${which}: a command found nowhere fails with 127 and says so; no filter file, nothing runs`, () => {
    const missing = guarded(guard(), [filter, "no-such-server-here", "--stdio"]);
    expect(missing.code).toBe(127);
    expect(missing.err).toContain("no-such-server-here: executable file not found in PATH /usr/bin:/bin");
    const noPath = guarded(guard(), [filter, join(dir, "absent")]);
    expect(noPath.code).toBe(127);
    const marker = join(dir, `ran-${which.length}`);
    const noFilter = guarded(guard(), [join(dir, "no-filter"), "sh", "-c", `touch ${marker}`]);
    expect(noFilter.code).toBe(126);
    expect(noFilter.err).toContain("cannot open the filter");
    expect(lstatSync(marker, { throwIfNoEntry: false })).toBeUndefined();
    // The image's PATH unset: runc's default is searched.
    expect(guarded(guard(), [filter, "true"], {}).code).toBe(0);
  });
}

test("the embedded guard is the source's build when this gcc is the one that built it", () => {
  const generated = readFileSync(join(ROOT, "src/runtime/docker/setid-guard-binary.ts"), "utf8");
  const gcc = Bun.spawnSync(["gcc", "--version"]).stdout.toString().split("\n")[0];
  // Another gcc may lay out the same source differently; this one must give the same bytes.
  if (generated.includes(`// ${gcc};`))
    expect(readFileSync(rebuilt).equals(Buffer.from(SETID_GUARD_X64, "base64"))).toBe(true);
  else expect(generated).toContain("// gcc ");
});

test("i386 numbers of the mode calls are the kernel headers'", () => {
  const header = "/usr/include/x86_64-linux-gnu/asm/unistd_32.h";
  const numbers = new Map(
    [...readFileSync(header, "utf8").matchAll(/^#define __NR_(\w+)\s+(\d+)\s*$/gm)].map((m) => [m[1], Number(m[2])]),
  );
  for (const [name, nr] of Object.entries(I386_MODE_CALLS))
    expect(`${name}=${numbers.get(name)}`).toBe(`${name}=${nr}`);
  for (const [name, nr] of Object.entries(UNREADABLE_MODE_CALLS))
    expect(`${name}=${numbers.get(name) ?? (name === "fchmodat2" ? 452 : undefined)}`).toBe(`${name}=${nr}`);
});

test("the container's command: guard, filter, the image's entrypoint, then run's arguments or the image's Cmd", () => {
  const guard = [`${GUARD_DIR}/guard`, `${GUARD_DIR}/filter`];
  expect(guardedCommand({ entrypoint: ["node", "/app/s.mjs"], cmd: ["--x"] }, [])).toEqual({
    Entrypoint: [...guard, "node", "/app/s.mjs"],
    Cmd: ["--x"],
  });
  expect(guardedCommand({ entrypoint: ["node", "/app/s.mjs"], cmd: ["--x"] }, ["--y"])).toEqual({
    Entrypoint: [...guard, "node", "/app/s.mjs"],
    Cmd: ["--y"],
  });
  expect(guardedCommand({ entrypoint: [], cmd: ["server"] }, [])).toEqual({ Entrypoint: guard, Cmd: ["server"] });
  expect(guardedCommand({ entrypoint: [], cmd: [] }, [])).toBeUndefined();
});

test("the archive copied into the container: the guard 0555 and its filter 0444 in a 0555 folder, root's; the create options", async () => {
  const entries: { name: string; mode: number; uid: number; gid: number; body: Buffer }[] = [];
  const reader = extract();
  reader.on("entry", (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on("end", () => {
      entries.push({
        name: header.name,
        mode: header.mode ?? 0,
        uid: header.uid ?? -1,
        gid: header.gid ?? -1,
        body: Buffer.concat(chunks),
      });
      next();
    });
  });
  const done = new Promise<void>((resolve) => reader.on("finish", () => resolve()));
  reader.end(await guardArchive());
  await done;
  expect(entries.map(({ name, mode, uid, gid }) => `${name} ${mode.toString(8)} ${uid}:${gid}`)).toEqual([
    ".mcpmgr-setid-guard/ 555 0:0",
    ".mcpmgr-setid-guard/guard 555 0:0",
    ".mcpmgr-setid-guard/filter 444 0:0",
  ]);
  expect(entries[1]?.body.equals(Buffer.from(SETID_GUARD_X64, "base64"))).toBe(true);
  expect(entries[2]?.body.equals(Buffer.from(setIdGuardFilter()))).toBe(true);
  const command = guardedCommand({ entrypoint: ["srv"], cmd: [] }, []);
  if (command === undefined) throw new Error("no command");
  const options = serverContainerOptions({
    containerName: "c",
    image: "i",
    args: ["ignored"],
    env: {},
    labels: {},
    stdio: true,
    profile: expandPermissions("none"),
    volumes: [],
    overlays: [],
    networkMode: "none",
    publish: [],
    limits: { memoryBytes: 1, pids: 1 },
    guard: { command },
  });
  expect(options.Entrypoint).toEqual([`${GUARD_DIR}/guard`, `${GUARD_DIR}/filter`, "srv"]);
  expect(options.Cmd).toEqual([]);
  expect(options.HostConfig?.SecurityOpt).toContain("no-new-privileges");
  expect(options.HostConfig?.Init).toBe(true);
});

test("a mount at or inside the guard's folder is refused; a neighbour is not", () => {
  const mount = (containerPath: string) => [{ hostPath: "/h", containerPath }];
  for (const path of [GUARD_DIR, `${GUARD_DIR}/`, `/${GUARD_DIR}`, `${GUARD_DIR}/guard`, "/x/../.mcpmgr-setid-guard"])
    expect(() => refuseMountOverGuard(mount(path))).toThrow(
      `the volume /h:${path} is where mcpmgr puts its set-ID guard`,
    );
  for (const path of [`${GUARD_DIR}-other`, "/data", "/.mcpmgr"])
    expect(() => refuseMountOverGuard(mount(path))).not.toThrow();
});
