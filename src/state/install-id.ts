/**
 * Which installation of mcpmgr a home is: the `mcpmgr.install` label on its containers and
 * networks, so that cleaning up one home never removes another's objects on a shared engine.
 *
 * It was a hash of the state folder's path alone, which two homes at the same path share: two dev
 * containers with the host's docker.sock mounted, parallel CI jobs on one Docker host, two machines
 * using one DOCKER_HOST. Each then removed the other's same-named workload's containers. Now a
 * home draws a random secret once, kept in `<stateDir>/install-id.json` (0600), and its id is the
 * hash of its path and that secret: a twin at the same path has another secret, and a `cp -r` of
 * the home to another path has another path, so both differ.
 *
 * A home that was in use before (workload records, foreground claims or logs, and no file yet)
 * keeps the path hash, recorded as `{"kind": "path"}`: its running containers carry that label and
 * must stay recognised (and cleaned up) after an upgrade. The file is decided under the workload
 * store's lock, before the home's first record or foreground claim is written (WorkloadStore
 * `create`, `claimForegroundName`), so a new home never mistakes its own first record for an old
 * one, and two first commands agree. It is read once per process: the id is asked for at every
 * container start, stop and removal.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { readJsonFile, STATE_SCHEMA_VERSION, writeJsonFile } from "./atomic-file.ts";
import { withLock } from "./lock.ts";
import type { McpmgrPaths } from "./paths.ts";

const FILE = "install-id.json";

const fileSchema = v.variant("kind", [
  v.object({
    schema_version: v.optional(v.number()),
    kind: v.literal("random"),
    secret: v.pipe(v.string(), v.regex(/^[0-9a-f]{32}$/)),
  }),
  v.object({ schema_version: v.optional(v.number()), kind: v.literal("path") }),
]);
type IdFile = v.InferOutput<typeof fileSchema>;

/** Per state folder, this process's answer: the file never changes once written. */
const known = new Map<string, string>();

function hash(text: string): string {
  // Bun's own hasher: node:crypto is a start-up cost every command would pay.
  return new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 16);
}

/** The id every home had before the stored one: a hash of its state folder's path. */
export function pathInstallId(paths: McpmgrPaths): string {
  return hash(paths.stateDir);
}

function idOf(paths: McpmgrPaths, file: IdFile): string {
  return file.kind === "path" ? pathInstallId(paths) : hash(`${paths.stateDir}\0${file.secret}`);
}

function filePath(paths: McpmgrPaths): string {
  return join(paths.stateDir, FILE);
}

/** The workload store's lock (WorkloadStore `lockPath`): records and this file change under one lock. */
export function storeLockPath(paths: McpmgrPaths): string {
  return join(paths.stateDir, "workloads", ".lock");
}

const hint = (paths: McpmgrPaths) =>
  `restore ${filePath(paths)} from a backup; deleting it gives this home a new id, and its running containers are then no longer recognised as its own`;

async function readIdFile(paths: McpmgrPaths): Promise<IdFile | undefined> {
  return readJsonFile(filePath(paths), fileSchema, { hint: hint(paths) });
}

/** Anything a home in use before the stored id leaves behind: its containers carry the path hash. */
function usedBefore(paths: McpmgrPaths): boolean {
  const entries = (dir: string, keep: (name: string) => boolean) => {
    try {
      return readdirSync(dir).some(keep);
    } catch {
      return false;
    }
  };
  return (
    entries(join(paths.stateDir, "workloads"), (name) => !name.startsWith(".")) ||
    entries(join(paths.stateDir, "foreground"), (name) => name.endsWith(".json")) ||
    entries(paths.logDir, (name) => name.endsWith(".log"))
  );
}

/**
 * Makes sure the home's id is decided. Called with the store's lock held, before the first
 * record or foreground claim is written; cheap once decided (one small read per process).
 */
export async function settleInstallIdLocked(paths: McpmgrPaths): Promise<string> {
  const cached = known.get(paths.stateDir);
  if (cached !== undefined) return cached;
  let file = await readIdFile(paths);
  if (file === undefined) {
    file = usedBefore(paths)
      ? { schema_version: STATE_SCHEMA_VERSION, kind: "path" }
      : {
          schema_version: STATE_SCHEMA_VERSION,
          kind: "random",
          secret: Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex"),
        };
    await writeJsonFile(filePath(paths), file, { mode: 0o600 });
  }
  const id = idOf(paths, file);
  known.set(paths.stateDir, id);
  return id;
}

/**
 * This home's installation id. Read once per process; a home without the file yet (one in use
 * before this version, asked first by `start`, `stop` or `rm`) has it decided under the store's
 * lock. Never call it with that lock held (the lock is not re-entrant).
 */
export async function installId(paths: McpmgrPaths): Promise<string> {
  const cached = known.get(paths.stateDir);
  if (cached !== undefined) return cached;
  // Without the lock first: the file exists in every home but a brand-new or a pre-upgrade one.
  const file = await readIdFile(paths);
  if (file !== undefined) {
    const id = idOf(paths, file);
    known.set(paths.stateDir, id);
    return id;
  }
  try {
    return await withLock(storeLockPath(paths), () => settleInstallIdLocked(paths));
  } catch (err) {
    // A read-only or full state folder: the file cannot be written, but a home with records and no
    // file can only be one from before it (a new home writes the file before its first record), so
    // its id is the path hash all the same, and `stop` still removes a dead supervisor's containers.
    // The evidence is read before the file: a first record seen here was written after its file.
    if (!usedBefore(paths)) throw err;
    const written = await readIdFile(paths);
    const id = written === undefined ? pathInstallId(paths) : idOf(paths, written);
    known.set(paths.stateDir, id);
    return id;
  }
}
