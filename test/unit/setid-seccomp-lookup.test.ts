/**
 * The engine's profile looked up through a real Engine API exchange: a libpod-style `info` served on
 * a Unix socket (as Podman's is), read by dockerode. A failed look-up is asked again after a short
 * back-off (a long-lived supervisor must not keep the engine's default for good), and the profile
 * files Podman is handed are pruned once no start has used them for a day.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import type { ContainerEngine } from "../../src/runtime/docker/engine.ts";
import {
  RETRY_AFTER_MS,
  setIdSeccompOption,
  setIdSeccompProfile,
  UNUSED_PROFILE_MS,
} from "../../src/runtime/docker/setid-seccomp.ts";

const dir = mkdtempSync(join(tmpdir(), "mcpmgr-seccomp-lookup-"));
const servers: ReturnType<typeof Bun.serve>[] = [];
afterAll(() => {
  for (const server of servers) server.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/** A Podman-like engine whose default profile is the file `profile` names (served once `serve()` is called). */
function podman(label: string, syscalls: object[]) {
  const socket = join(dir, `${label}.sock`);
  const profilePath = join(dir, `${label}-default.json`);
  writeFileSync(profilePath, JSON.stringify({ defaultAction: "SCMP_ACT_ERRNO", syscalls }));
  const engine: ContainerEngine = { kind: "podman", endpoint: socket, docker: new Docker({ socketPath: socket }) };
  const serve = () => {
    servers.push(
      Bun.serve({
        unix: socket,
        fetch: (req) =>
          new URL(req.url).pathname.endsWith("/libpod/info")
            ? Response.json({ host: { security: { seccompEnabled: true, seccompProfilePath: profilePath } } })
            : new Response("not found", { status: 404 }),
      }),
    );
  };
  return { engine, serve };
}

test("a failed look-up is asked again after the back-off, not kept for the process; an answer is kept", async () => {
  const { engine, serve } = podman("late", [{ names: ["chmod"], action: "SCMP_ACT_ALLOW" }]);
  const t0 = 1_000_000;
  // Nothing listens yet: the engine's default (undefined).
  expect(await setIdSeccompProfile(engine, t0)).toBeUndefined();
  serve();
  // Within the back-off: not asked again (each container start of a crash loop would ask).
  expect(await setIdSeccompProfile(engine, t0 + RETRY_AFTER_MS - 1)).toBeUndefined();
  // The back-off counts from the failure, which came within moments of t0.
  const profile = await setIdSeccompProfile(engine, t0 + RETRY_AFTER_MS + 1_000);
  expect(profile).toBeDefined();
  expect(profile).toContain("SCMP_CMP_MASKED_EQ");
  // The engine's answer stays for the process, also when the engine is gone later.
  servers.pop()?.stop(true);
  expect(await setIdSeccompProfile(engine, t0 + 100 * RETRY_AFTER_MS)).toBe(profile as string);
});

test("profile files no start used for a day are pruned; the one just used, recent ones and others' files stay", async () => {
  const state = join(dir, "seccomp");
  const now = Date.now();
  const a = podman("a", [{ names: ["chmod"], action: "SCMP_ACT_ALLOW" }]);
  const b = podman("b", [{ names: ["mkdir"], action: "SCMP_ACT_ALLOW" }]);
  a.serve();
  b.serve();
  // b's file, written two days ago and then used again by another start an hour ago (its option touches it).
  const bOption = await setIdSeccompOption(b.engine, state, now - 2 * UNUSED_PROFILE_MS);
  const bFile = (bOption as string).slice("seccomp=".length);
  expect(await setIdSeccompOption(b.engine, state, now - 3_600_000)).toBe(bOption as string);
  const aged = (file: string, at: number) => {
    writeFileSync(file, "{}");
    utimesSync(file, at / 1000, at / 1000);
  };
  const old = now - UNUSED_PROFILE_MS - 60_000;
  aged(join(state, "0123456789abcdef.json"), old); // an earlier engine version's profile
  aged(join(state, "fedcba9876543210.json.4242.partial"), old); // a killed writer's copy
  aged(join(state, "notes.txt"), old); // not a name mcpmgr writes
  const aOption = await setIdSeccompOption(a.engine, state, now);
  const aFile = (aOption as string).slice("seccomp=".length);
  expect(readFileSync(aFile, "utf8")).toBe((await setIdSeccompProfile(a.engine)) as string);
  const left = readdirSync(state).filter((entry) => !entry.startsWith(".lock"));
  expect(left.sort()).toEqual([aFile, bFile, join(state, "notes.txt")].map((f) => f.slice(state.length + 1)).sort());
  // Its own file, however old, is touched, not removed; one with other content under its name is rewritten.
  aged(aFile, old);
  expect(await setIdSeccompOption(a.engine, state, now + 1000)).toBe(aOption as string);
  expect(readFileSync(aFile, "utf8")).toBe((await setIdSeccompProfile(a.engine)) as string);
  expect(existsSync(bFile)).toBe(true);
});

test("the back-off counts from when a look-up failed, not from when it was asked", async () => {
  const socket = join(dir, "slow.sock");
  let asked = 0;
  servers.push(
    Bun.serve({
      unix: socket,
      // An engine under load: it takes a while, then fails.
      fetch: async () => {
        asked++;
        await Bun.sleep(300);
        return new Response("busy", { status: 500 });
      },
    }),
  );
  const engine: ContainerEngine = { kind: "podman", endpoint: socket, docker: new Docker({ socketPath: socket }) };
  const t0 = 5_000_000;
  expect(await setIdSeccompProfile(engine, t0)).toBeUndefined();
  expect(asked).toBe(1);
  // Past the back-off from the question, within it from the failure (which came 300 ms later).
  expect(await setIdSeccompProfile(engine, t0 + RETRY_AFTER_MS + 100)).toBeUndefined();
  expect(asked).toBe(1);
  expect(await setIdSeccompProfile(engine, t0 + RETRY_AFTER_MS + 2_000)).toBeUndefined();
  expect(asked).toBe(2);
});
