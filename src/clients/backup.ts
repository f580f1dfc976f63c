/**
 * The first version of a client's file that mcpmgr changed, kept once in
 * <dataDir>/client-backups/<client>/<file name> (private: these files hold tokens). It is written
 * whole or not at all: a copy cut short by a full disk was kept for good, the user's only backup
 * of their file a part of it that every later change took for done.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { link, open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { ensureDir, errnoCode, ownerAsRootOf, removeLeftTemps, stateIoError } from "../state/atomic-file.ts";
import type { ClientContext, ClientDefinition } from "./types.ts";

export function backupPath(ctx: ClientContext, client: ClientDefinition, path: string): string {
  return join(ctx.paths.dataDir, "client-backups", client.id, basename(path));
}

/**
 * The first version mcpmgr touched, kept once: later changes never overwrite it. A file mcpmgr
 * creates has no earlier version; `<backup>.created` records that instead, so a later change
 * does not mistake mcpmgr's own first write for the user's file.
 */
export async function backupOnce(
  ctx: ClientContext,
  client: ClientDefinition,
  path: string,
  text: string | undefined,
): Promise<void> {
  const backup = backupPath(ctx, client, path);
  const created = `${backup}.created`;
  // A copy an mcpmgr killed mid-write left (tokens included) stays otherwise for good: gone first, under the
  // client file's lock, which every writer of its backup holds.
  await removeLeftTemps(backup);
  await removeLeftTemps(created);
  if (existsSync(backup) || existsSync(created)) return;
  await ensureDir(dirname(backup));
  const written = await writeOnce(
    text === undefined ? created : backup,
    text ?? `mcpmgr created ${path}; there was no earlier version to keep\n`,
  ).catch((err) => {
    // Said as mcpmgr's own file: a full disk there is not the client's.
    throw stateIoError("save its backup", backup, err);
  });
  if (written && text !== undefined) ctx.log.info(`saved ${path} as it was before mcpmgr's first change: ${backup}`);
}

/**
 * Writes a new private file, whole: beside it first, then linked to its name (which a link never
 * replaces), so a write that fails leaves no part of it there. False if it exists already
 * (another mcpmgr got there first).
 */
async function writeOnce(path: string, text: string): Promise<boolean> {
  // Named as writeFileAtomic names its own, so that removeLeftTemps finds one a killed writer left.
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const handle = await open(temp, "wx", 0o600);
    try {
      // Root with a user's HOME: the user's backup stays the user's to read.
      const owner = await ownerAsRootOf(handle, path);
      if (owner !== undefined) await handle.chown(owner.uid, owner.gid);
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(temp, path).catch(async (err) => {
      // A filesystem without hard links (as lock.ts falls back for): renamed, the name checked free just before.
      if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"].includes(errnoCode(err) ?? "") || existsSync(path)) throw err;
      await rename(temp, path);
    });
    return true;
  } catch (err) {
    if (errnoCode(err) === "EEXIST") return false;
    throw err;
  } finally {
    await unlink(temp).catch(() => {});
  }
}
