/**
 * mcpmgr's directories out of other users' reach (review 7): a folder on the way that another
 * user owns, or that every user may write without the sticky bit, is refused before anything is
 * read from it; /tmp-like sticky folders, group-writable folders and missing ones are fine.
 * Real folders, chowned to another uid (the tests run as root).
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, chownSync, lchownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { assertPrivateDirectories } from "../../src/state/private-dirs.ts";
import { oauthLockDir } from "../../src/workload/oauth-callback.ts";

const root = mkdtempSync(join(tmpdir(), "mcpmgr-private-dirs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const OTHER = 61234;
const paths = (home: string) => resolvePaths({ MCPMGR_HOME: home });
const refusal = (home: string, userHome?: string) => {
  try {
    assertPrivateDirectories(paths(home), 0, userHome);
  } catch (err) {
    return err as { code?: string; message: string; hint?: string };
  }
  return undefined;
};

test("a home another user made first is refused, naming the folder and its owner", () => {
  const home = join(root, "theirs");
  mkdirSync(join(home, "state"), { recursive: true });
  chownSync(home, OTHER, OTHER);
  const err = refusal(home);
  expect(err?.code).toBe("STATE_UNSAFE");
  expect(err?.message).toContain(`${home} belongs to uid ${OTHER}`);
  expect(err?.hint).toContain("MCPMGR_HOME");
});

test("a folder every user may write is refused, unless it is sticky", () => {
  const open = join(root, "open");
  mkdirSync(join(open, "home"), { recursive: true });
  chmodSync(open, 0o777);
  expect(refusal(join(open, "home"))?.message).toContain(`${open} can be written by every user`);
  const sticky = join(root, "sticky");
  mkdirSync(join(sticky, "home"), { recursive: true, mode: 0o700 });
  chmodSync(sticky, 0o1777);
  expect(refusal(join(sticky, "home"))).toBeUndefined();
  // Within it, a home of another user is still theirs.
  mkdirSync(join(sticky, "planted"));
  chownSync(join(sticky, "planted"), OTHER, OTHER);
  expect(refusal(join(sticky, "planted"))?.code).toBe("STATE_UNSAFE");
});

test("a link on the way counts as its owner's", () => {
  const target = join(root, "real-home");
  mkdirSync(target, { mode: 0o700 });
  const sticky = join(root, "links");
  mkdirSync(sticky);
  chmodSync(sticky, 0o1777);
  symlinkSync(target, join(sticky, "mine"));
  expect(refusal(join(sticky, "mine"))).toBeUndefined();
  symlinkSync(target, join(sticky, "theirs"));
  lchownSync(join(sticky, "theirs"), OTHER, OTHER);
  expect(refusal(join(sticky, "theirs"))?.message).toContain(
    `the link ${join(sticky, "theirs")} belongs to uid ${OTHER}`,
  );
});

test("group-writable and missing folders are fine", () => {
  const group = join(root, "group");
  mkdirSync(group);
  chmodSync(group, 0o770);
  expect(refusal(join(group, "not-made-yet"))).toBeUndefined();
});

test("root with a user's HOME (sudo -E) trusts that user's folders, and nobody else's", () => {
  const userHome = join(root, "user-home");
  mkdirSync(join(userHome, ".mcpmgr"), { recursive: true });
  chownSync(userHome, OTHER, OTHER);
  chownSync(join(userHome, ".mcpmgr"), OTHER, OTHER);
  expect(refusal(join(userHome, ".mcpmgr"), userHome)).toBeUndefined();
  expect(refusal(join(userHome, ".mcpmgr"), root)?.code).toBe("STATE_UNSAFE");
  const third = join(root, "third");
  mkdirSync(third);
  chownSync(third, OTHER + 1, OTHER + 1);
  expect(refusal(third, userHome)?.message).toContain(`belongs to uid ${OTHER + 1}`);
});

test("a link's target is walked up too: a folder every user may write above it is refused", () => {
  // Review 8: only the link's own way up was checked, so a home linked into an open folder passed.
  const open = join(root, "open-target");
  mkdirSync(join(open, "real"), { recursive: true, mode: 0o700 });
  chmodSync(open, 0o777);
  const mine = join(root, "mine-links");
  mkdirSync(mine, { mode: 0o700 });
  symlinkSync(join(open, "real"), join(mine, "home"));
  expect(refusal(join(mine, "home"))?.message).toContain(`${open} can be written by every user`);
  // Even when the home is still to be made, under a linked folder.
  expect(refusal(join(mine, "home", "not-made-yet"))?.message).toContain(`${open} can be written by every user`);
});

test("a home through a file or an unsearchable folder is left to the command, which says what is wrong", () => {
  // Review 8: lstat's ENOTDIR escaped as 'unexpected error' on every command.
  const file = join(root, "a-file");
  writeFileSync(file, "");
  expect(refusal(join(file, "home"))).toBeUndefined();
});

test("the OAuth lock folder (XDG_RUNTIME_DIR/mcpmgr, outside MCPMGR_HOME) is refused when another user made it", () => {
  // Another user's folder: they could hold the callback port's lock (no login for the whole
  // timeout) or a grant's refresh lock, or delete either.
  const runtime = join(root, "shared-runtime");
  mkdirSync(join(runtime, "mcpmgr"), { recursive: true });
  chownSync(join(runtime, "mcpmgr"), OTHER, OTHER);
  chmodSync(join(runtime, "mcpmgr"), 0o777);
  let err: { code?: string; message: string } | undefined;
  try {
    oauthLockDir({ XDG_RUNTIME_DIR: runtime });
  } catch (caught) {
    err = caught as { code?: string; message: string };
  }
  expect(err?.code).toBe("STATE_UNSAFE");
  expect(err?.message).toContain(`${join(runtime, "mcpmgr")} belongs to uid ${OTHER}`);
  expect(err?.message).toContain("OAuth login and token refresh locks");
  // The user's own folder is used as before.
  const own = join(root, "own-runtime");
  mkdirSync(own, { mode: 0o700 });
  expect(oauthLockDir({ XDG_RUNTIME_DIR: own })).toBe(join(own, "mcpmgr"));
});
