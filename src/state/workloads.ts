/**
 * The workload store. Layout under stateDir:
 *
 *   workloads/.lock              one lock for every change (they are rare and fast, and one
 *                                lock makes "names are unique" and "ports are unique" checkable)
 *   workloads/<name>/workload.json   the record (also the exported configuration)
 *   workloads/<name>/status.json     state, supervisor pid, restarts, last error
 *   <logDir>/<name>.log, <name>.proxy.log, and each one's rotated part (`.1`, state/log-files.ts)
 *
 * Reads take no lock: every file is replaced by an atomic rename, so a reader sees a whole
 * old or a whole new file. Writes happen under the lock and re-read what they depend on
 * inside it, so two mcpmgr commands cannot both create "fetch" or both claim port 8080.
 */
import { join } from "node:path";
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";
import { deepFreeze } from "../objects.ts";
import { describeIssues, ensureDir, errnoCode, readJsonFile, stateIoError, writeJsonFile } from "./atomic-file.ts";
import { releaseForegroundClaim, writeForegroundClaim } from "./foreground-runs.ts";
import { assertNoForegroundRun, workloadNotFound } from "./workload-lookup.ts";
import { settleInstallIdLocked, storeLockPath } from "./install-id.ts";
import { withLock, type LockOptions } from "./lock.ts";
import type { McpmgrPaths } from "./paths.ts";
import { workloadFolderNames, workloadsRoot } from "./workload-folders.ts";
import { proxyLogPathIn } from "./supervisor-identity.ts";
import { assertWorkloadName } from "./workload-name.ts";
import {
  workloadRecordSchema,
  workloadStatusSchema,
  type WorkloadInput,
  type WorkloadRecord,
  type WorkloadStatus,
  type WorkloadStatusInput,
} from "./workload-record.ts";

/** node:fs/promises only for changes: listing and reading workloads (`list`) do without it (start-up). */
const fsp = () => import("node:fs/promises");

// What most callers need besides the store, so they import this module alone: the name helpers, the
// record's types and readers (the record's schemas and constants stay in workload-record.ts).

export {
  assertWorkloadName,
  deriveWorkloadName,
  isValidWorkloadName,
  sanitizeWorkloadName,
} from "./workload-name.ts";
export { assertNoForegroundRun } from "./workload-lookup.ts";
export {
  isGatewayRecord,
  reconcileStatus,
  type WorkloadInput,
  type WorkloadRecord,
  type WorkloadStatus,
} from "./workload-record.ts";

export interface WorkloadStoreOptions {
  /** Clock for createdAt/updatedAt; tests pass their own. */
  readonly now?: () => Date;
  /** Passed to withLock (timeoutMs, staleMs). */
  readonly lock?: Omit<LockOptions, "now">;
}

const RECORD_FILE = "workload.json";
const STATUS_FILE = "status.json";

export class WorkloadStore {
  readonly paths: McpmgrPaths;
  readonly #root: string;
  readonly #now: () => Date;
  readonly #lock: Omit<LockOptions, "now">;

  constructor(paths: McpmgrPaths, options: WorkloadStoreOptions = {}) {
    this.paths = paths;
    this.#root = workloadsRoot(paths);
    this.#now = options.now ?? (() => new Date());
    this.#lock = options.lock ?? {};
  }

  /**
   * Every workload, sorted by name. A corrupt record fails the whole call with STATE_CORRUPT naming it:
   * commands read across workloads with listReadable instead, so one bad file does not stop them all.
   */
  async list(): Promise<readonly WorkloadRecord[]> {
    const records = await Promise.all(this.#names().map((name) => this.#read(name)));
    // A folder without a record is a create that crashed before writing it: not a workload.
    return records
      .filter((r): r is WorkloadRecord => r !== undefined)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Every record that can be read, sorted by name, and the names of those that cannot with why (a
   * file broken by hand, one a newer mcpmgr wrote): for everything that reads across workloads, which
   * must not stop on another workload's record (`list` names them, `start` of another one goes on).
   */
  async listReadable(): Promise<{ records: WorkloadRecord[]; unreadable: string[]; errors: unknown[] }> {
    const records: WorkloadRecord[] = [];
    const unreadable: string[] = [];
    const errors: unknown[] = [];
    for (const name of this.#names().sort()) {
      try {
        const record = await this.#read(name);
        if (record !== undefined) records.push(record);
      } catch (err) {
        unreadable.push(name);
        errors.push(err);
      }
    }
    return { records, unreadable, errors };
  }

  /**
   * The proxy port each workload keeps, also one a record that cannot be read still names (a newer mcpmgr's,
   * readable again after the upgrade): given to another workload, two records would keep one port for good.
   */
  async keptPorts(): Promise<{ name: string; proxyPort: number }[]> {
    const { records, unreadable } = await this.listReadable();
    const kept = records.map(({ name, proxyPort }) => ({ name, proxyPort }));
    for (const name of unreadable) {
      const port = (await this.#rawRecord(name))?.proxyPort;
      if (Number.isInteger(port) && (port as number) > 0 && (port as number) < 65_536)
        kept.push({ name, proxyPort: port as number });
    }
    return kept;
  }

  /** The records that cannot be read whose file names `group`, or no group (broken JSON): `group rm` must wait. */
  async unreadableIn(group: string): Promise<string[]> {
    const names: string[] = [];
    for (const name of (await this.listReadable()).unreadable) {
      const recorded = (await this.#rawRecord(name))?.group;
      if (typeof recorded !== "string" || recorded === group) names.push(name);
    }
    return names;
  }

  /** A record's file read leniently (as JSON, nothing checked), for what a record that cannot be read still says. */
  async #rawRecord(name: string): Promise<{ proxyPort?: unknown; group?: unknown } | undefined> {
    try {
      const raw = JSON.parse(await (await fsp()).readFile(this.#recordPath(name), "utf8")) as unknown;
      return typeof raw === "object" && raw !== null ? raw : undefined;
    } catch {
      return undefined;
    }
  }

  /** The names of the workload folders (a folder may still lack its record). */
  #names(): string[] {
    try {
      return workloadFolderNames(this.#root);
    } catch (err) {
      throw stateIoError("list", this.#root, err);
    }
  }

  async get(name: string): Promise<WorkloadRecord | undefined> {
    assertWorkloadName(name);
    return this.#read(name);
  }

  /** Like get, but a missing workload is WORKLOAD_NOT_FOUND. */
  async getExisting(name: string): Promise<WorkloadRecord> {
    return (await this.get(name)) ?? workloadNotFound(this.paths, name, this.#names());
  }

  /** Validates and stores a new record. Refuses a taken name (WORKLOAD_EXISTS) or proxy port (PORT_IN_USE). */
  async create(input: WorkloadInput): Promise<WorkloadRecord> {
    const record = this.#validate({
      ...input,
      schema_version: 1,
      createdAt: input.createdAt ?? this.#now().toISOString(),
    });
    return this.#locked(async () => {
      if ((await this.#read(record.name)) !== undefined) {
        throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${record.name} already exists`, {
          hint: `choose another --name, or remove the old one first: mcpmgr rm ${record.name}`,
        });
      }
      assertNoForegroundRun(this.paths, record.name);
      await this.#assertPortFree(record);
      // Before the home's first record: what is here already tells an old home from a new one.
      await settleInstallIdLocked(this.paths);
      await ensureDir(this.paths.logDir);
      await writeJsonFile(this.#recordPath(record.name), record);
      return record;
    });
  }

  /**
   * Takes `name` for a foreground run (state/foreground-runs.ts) until the returned function is
   * called: refused (WORKLOAD_EXISTS) while a record or another live foreground run has it.
   */
  async claimForegroundName(name: string): Promise<() => Promise<void>> {
    assertWorkloadName(name);
    await this.#locked(async () => {
      if ((await this.#read(name)) !== undefined) {
        throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${name} already exists`, {
          hint: `'mcpmgr list' shows it; start it with 'mcpmgr start ${name}' if it is stopped, remove it with 'mcpmgr rm ${name}', or give this run another --name`,
        });
      }
      assertNoForegroundRun(this.paths, name);
      await settleInstallIdLocked(this.paths);
      await writeForegroundClaim(this.paths, name);
    });
    return () => releaseForegroundClaim(this.paths, name);
  }

  /**
   * Read-modify-write under the lock: `fn` gets the current record and returns the new one.
   * The name cannot change (it is the folder name); createdAt is kept unless fn changes it.
   */
  async update(name: string, fn: (current: WorkloadRecord) => WorkloadInput | WorkloadRecord): Promise<WorkloadRecord> {
    assertWorkloadName(name);
    return this.#locked(async () => {
      const current = (await this.#read(name)) ?? workloadNotFound(this.paths, name, this.#names());
      const next = fn(current);
      if (next.name !== name) {
        throw new McpmgrError("INVALID_ARGUMENT", `a workload cannot be renamed (from ${name} to ${next.name})`, {
          hint: "export it, remove it, and run it again under the new name",
        });
      }
      const record = this.#validate({ ...next, schema_version: 1, createdAt: next.createdAt ?? current.createdAt });
      if (record.proxyPort !== current.proxyPort) await this.#assertPortFree(record);
      await writeJsonFile(this.#recordPath(name), record);
      return record;
    });
  }

  /** Deletes the record, status and logs. Stopping the workload first is the caller's job. */
  async remove(name: string): Promise<void> {
    assertWorkloadName(name);
    await this.#locked(async () => {
      // Renamed away first (atomic), deleted second: a crash in between leaves a hidden
      // folder that the next remove sweeps, never a half-deleted workload in `list`.
      const trash = join(this.#root, `.trash-${name}-${process.pid}-${Date.now()}`);
      try {
        await (await fsp()).rename(this.#dir(name), trash);
      } catch (err) {
        if (errnoCode(err) === "ENOENT") workloadNotFound(this.paths, name, this.#names());
        throw stateIoError("remove", this.#dir(name), err);
      }
      await this.#sweepTrash();
      const { rm } = await fsp();
      await rm(this.logPath(name), { force: true });
      await rm(this.rotatedLogPath(name), { force: true });
      await rm(this.proxyLogPath(name), { force: true });
      await rm(this.rotatedProxyLogPath(name), { force: true });
    });
  }

  /** The last status written, or undefined if the workload never started (or does not exist). */
  async readStatus(name: string): Promise<WorkloadStatus | undefined> {
    assertWorkloadName(name);
    const status = await readJsonFile(join(this.#dir(name), STATUS_FILE), workloadStatusSchema, {
      hint: `delete ${join(this.#dir(name), STATUS_FILE)}; it is rewritten when the workload next starts`,
    });
    return status === undefined ? undefined : deepFreeze(status);
  }

  /**
   * Replaces the status (updatedAt defaults to now). WORKLOAD_NOT_FOUND if the workload was removed meanwhile.
   * With `onlyIf`, only when it holds for the status there now (under the lock): false leaves that one.
   */
  async writeStatus(
    name: string,
    input: WorkloadStatusInput,
    options: { readonly onlyIf?: (current: WorkloadStatus | undefined) => boolean } = {},
  ): Promise<WorkloadStatus> {
    assertWorkloadName(name);
    const parsed = v.safeParse(workloadStatusSchema, {
      ...input,
      updatedAt: input.updatedAt ?? this.#now().toISOString(),
    });
    if (!parsed.success) {
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `invalid status for workload ${name}: ${describeIssues(parsed.issues)}`,
      );
    }
    const status = deepFreeze(parsed.output);
    await this.#locked(async () => {
      // Without this check a supervisor exiting after `rm` would bring back a ghost folder.
      if ((await this.#read(name)) === undefined) workloadNotFound(this.paths, name, this.#names());
      if (options.onlyIf !== undefined && !options.onlyIf(await this.readStatus(name).catch(() => undefined))) return;
      await writeJsonFile(join(this.#dir(name), STATUS_FILE), status);
    });
    return status;
  }

  /** Takes the lock every change takes, and changes nothing: its error when changes cannot be made now. */
  async assertChangeable(): Promise<void> {
    await this.#locked(async () => {});
  }

  /** The MCP server's own output (stderr of a stdio server, container logs). */
  logPath(name: string): string {
    assertWorkloadName(name);
    return join(this.paths.logDir, `${name}.log`);
  }

  /** The older part of the server's output, once its log passed the size cap (MCPMGR_MAX_LOG_BYTES). */
  rotatedLogPath(name: string): string {
    return `${this.logPath(name)}.1`;
  }

  /** The proxy's log. ".proxy" cannot clash with another workload's name, which has no dots. */
  proxyLogPath(name: string): string {
    assertWorkloadName(name);
    return proxyLogPathIn(this.paths, name);
  }

  /** Where the proxy's log is copied when it reaches the size cap, before it is emptied in place (state/log-files.ts `inPlace`). */
  rotatedProxyLogPath(name: string): string {
    return `${this.proxyLogPath(name)}.1`;
  }

  /** The server's log (or with `proxy`, the proxy's) and its rotated part, as `mcpmgr logs` reads them. */
  logFiles(name: string, which: "server" | "proxy"): { path: string; rotated: string } {
    return which === "proxy"
      ? { path: this.proxyLogPath(name), rotated: this.rotatedProxyLogPath(name) }
      : { path: this.logPath(name), rotated: this.rotatedLogPath(name) };
  }

  get lockPath(): string {
    return storeLockPath(this.paths);
  }

  #dir(name: string): string {
    return join(this.#root, name);
  }

  #recordPath(name: string): string {
    return join(this.#dir(name), RECORD_FILE);
  }

  async #read(name: string): Promise<WorkloadRecord | undefined> {
    const file = this.#recordPath(name);
    const record = await readJsonFile(file, workloadRecordSchema, {
      hint: `fix ${file} by hand, or remove the workload: mcpmgr rm ${name}`,
    });
    if (record === undefined) return undefined;
    if (record.name !== name) {
      throw new McpmgrError(
        "STATE_CORRUPT",
        `${file} is not a valid mcpmgr file: name: is ${JSON.stringify(record.name)} but the folder is ${name}`,
        {
          hint: `set "name" back to ${JSON.stringify(name)}, or remove the workload: mcpmgr rm ${name}`,
        },
      );
    }
    return deepFreeze(record);
  }

  #validate(input: unknown): WorkloadRecord {
    const parsed = v.safeParse(workloadRecordSchema, input);
    if (!parsed.success) {
      throw new McpmgrError("INVALID_ARGUMENT", `invalid workload: ${describeIssues(parsed.issues)}`, {
        hint: "check the options (or the --from-config file) the workload was built from",
      });
    }
    return deepFreeze(parsed.output);
  }

  /**
   * A stopped workload keeps its port (it is reused on restart), so a new workload may not
   * take it even though nothing listens there right now. Hosts are not compared: 127.0.0.1
   * and 0.0.0.0 on one port conflict anyway.
   */
  async #assertPortFree(record: WorkloadRecord): Promise<void> {
    const holder = (await this.keptPorts()).find(
      (other) => other.name !== record.name && other.proxyPort === record.proxyPort,
    );
    if (holder === undefined) return;
    throw new McpmgrError(
      "PORT_IN_USE",
      `proxy port ${record.proxyPort} is already reserved by workload ${holder.name}`,
      {
        hint: `choose another --proxy-port (or leave it out to get a free one), or remove the other workload: mcpmgr rm ${holder.name}`,
      },
    );
  }

  async #sweepTrash(): Promise<void> {
    const { readdir, rm } = await fsp();
    const entries = await readdir(this.#root).catch(() => [] as string[]);
    await Promise.all(
      entries
        .filter((e) => e.startsWith(".trash-"))
        .map((e) => rm(join(this.#root, e), { recursive: true, force: true })),
    );
  }

  #locked<T>(fn: () => Promise<T>): Promise<T> {
    return withLock(this.lockPath, fn, this.#lock);
  }
}
