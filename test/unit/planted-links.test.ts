/**
 * Links a server may have planted in a writable mount (review H2): refused on the way to a
 * mount source; links elsewhere (the host's /var/run, the user's own) are followed.
 * Real directories and symbolic links.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpmgrError } from "../../src/errors.ts";
import { assertNoPlantedLinks } from "../../src/runtime/planted-links.ts";

let dir: string;

beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), "mcpmgr-planted-unit-")));
  await mkdir(join(dir, "proj/real-cache"), { recursive: true });
  await mkdir(join(dir, "elsewhere/data"), { recursive: true });
  await symlink(join(dir, "elsewhere"), join(dir, "proj/cache"));
  await symlink(join(dir, "elsewhere"), join(dir, "user-link"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const refusal = (mounts: { hostPath: string; readOnly: boolean }[]) => {
  try {
    assertNoPlantedLinks(mounts);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(McpmgrError);
    return `${(err as McpmgrError).code}: ${(err as McpmgrError).message}`;
  }
};

test("a source that goes through a link inside a writable mount is refused, however deep", () => {
  const writable = { hostPath: join(dir, "proj"), readOnly: false };
  expect(refusal([writable, { hostPath: join(dir, "proj/cache"), readOnly: true }])).toBe(
    `UNSAFE_MOUNT: mount source ${join(dir, "proj/cache")} goes through the symbolic link ${join(dir, "proj/cache")}, inside the writable mount ${join(dir, "proj")}: the server may have put it there to reach other host files`,
  );
  expect(refusal([writable, { hostPath: join(dir, "proj/cache/data"), readOnly: false }])).toContain(
    `the symbolic link ${join(dir, "proj/cache")}`,
  );
});

test("the same link inside a read-only mount, a nested directory without links, and links outside are followed", () => {
  expect(
    refusal([
      { hostPath: join(dir, "proj"), readOnly: true },
      { hostPath: join(dir, "proj/cache"), readOnly: true },
    ]),
  ).toBeUndefined();
  expect(
    refusal([
      { hostPath: join(dir, "proj"), readOnly: false },
      { hostPath: join(dir, "proj/real-cache"), readOnly: false },
    ]),
  ).toBeUndefined();
  expect(
    refusal([
      { hostPath: join(dir, "proj"), readOnly: false },
      { hostPath: join(dir, "user-link/data"), readOnly: true },
    ]),
  ).toBeUndefined();
  expect(
    refusal([
      { hostPath: join(dir, "proj"), readOnly: false },
      { hostPath: "/var/run", readOnly: true },
    ]),
  ).toBeUndefined();
});
