/**
 * Groups: named collections of workloads (`run --group`, `list --group`, AI clients registered
 * per group). Layout under stateDir:
 *
 *   groups.json     {"schema_version": 1, "groups": {"<name>": {"createdAt": "..."}}}
 *   .groups.lock    held while groups.json is rewritten
 *
 * `default` always exists and is never stored or removed. A group that an existing workload
 * names exists too, even if groups.json does not list it: workloads recorded before groups
 * were a thing of their own keep working, and a group with members can never vanish under
 * them. Group names follow the workload-name rules (a DNS label), so they are safe in file
 * names, container labels and client configuration keys alike.
 */
import { join } from "node:path";
import * as v from "valibot";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import { namedRecord } from "../config/named-record.ts";
import { readJsonFile, writeJsonFile } from "./atomic-file.ts";
import { withLock } from "./lock.ts";
import type { McpmgrPaths } from "./paths.ts";
import { assertGroupName } from "./workload-name.ts";
import { WorkloadStore } from "./workloads.ts";

export { assertGroupName };

export const DEFAULT_GROUP = "default";

const groupsFileSchema = v.object({
  schema_version: v.optional(v.literal(1, "must be 1 (this file was written by a different version of mcpmgr)"), 1),
  groups: v.optional(
    namedRecord(
      v.pipe(v.string(), v.nonEmpty("must not be empty")),
      v.object({ createdAt: v.pipe(v.string(), v.isoTimestamp("must be an ISO 8601 timestamp")) }),
    ),
    {},
  ),
});
type GroupsFile = v.InferOutput<typeof groupsFileSchema>;

export interface GroupInfo {
  readonly name: string;
  /** Absent for `default` and for groups known only because a workload names them. */
  readonly createdAt?: string;
  /** Workloads whose record names this group. */
  readonly workloads: readonly string[];
}

export class GroupStore {
  readonly #file: string;
  readonly #lockPath: string;
  readonly #workloads: WorkloadStore;
  readonly #now: () => Date;

  constructor(paths: McpmgrPaths, options: { now?: () => Date; workloads?: WorkloadStore } = {}) {
    this.#file = join(paths.stateDir, "groups.json");
    this.#lockPath = join(paths.stateDir, ".groups.lock");
    this.#workloads = options.workloads ?? new WorkloadStore(paths);
    this.#now = options.now ?? (() => new Date());
  }

  /** Every group: `default` first, then the rest by name, each with its workloads. */
  async list(): Promise<readonly GroupInfo[]> {
    const stored = (await this.#read()).groups;
    const members = new Map<string, string[]>();
    // Another workload's broken record must not stop every command that asks whether a group exists.
    for (const record of (await this.#workloads.listReadable()).records) {
      members.set(record.group, [...(members.get(record.group) ?? []), record.name]);
    }
    const names = new Set([DEFAULT_GROUP, ...Object.keys(stored), ...members.keys()]);
    return [...names]
      .sort((a, b) => (a === DEFAULT_GROUP ? -1 : b === DEFAULT_GROUP ? 1 : a < b ? -1 : a > b ? 1 : 0))
      .map((name) => ({
        name,
        ...(stored[name] ? { createdAt: stored[name].createdAt } : {}),
        workloads: members.get(name) ?? [],
      }));
  }

  async get(name: string): Promise<GroupInfo | undefined> {
    return (await this.list()).find((group) => group.name === name);
  }

  async exists(name: string): Promise<boolean> {
    return (await this.get(name)) !== undefined;
  }

  /** Refuses an invalid name (INVALID_ARGUMENT) or one that exists already (GROUP_EXISTS). */
  async create(name: string): Promise<GroupInfo> {
    assertGroupName(name);
    return withLock(this.#lockPath, async () => {
      if (await this.exists(name)) {
        throw new McpmgrError("GROUP_EXISTS", `a group named ${name} already exists`, {
          hint: "see the groups with: mcpmgr group list",
        });
      }
      const file = await this.#read();
      const createdAt = this.#now().toISOString();
      await this.#write({ ...file, groups: { ...file.groups, [name]: { createdAt } } });
      return { name, createdAt, workloads: [] };
    });
  }

  /**
   * The group `group rm` may remove: not `default`, an existing one (GROUP_NOT_FOUND), and an
   * empty one unless its workloads are to be removed with it (GROUP_NOT_EMPTY).
   */
  async removable(name: string, options: { withWorkloads: boolean }): Promise<GroupInfo> {
    if (name === DEFAULT_GROUP) {
      throw new McpmgrError("INVALID_ARGUMENT", "the default group cannot be removed", {
        hint: "to empty it, remove its workloads: 'mcpmgr rm --group default'",
      });
    }
    // Nothing to remove: creating it is no advice here.
    const groups = await this.list();
    const group =
      groups.find((known) => known.name === name) ??
      groupNotFound(name, "'mcpmgr group list' shows the groups", groups);
    // A member whose record cannot be read (a newer mcpmgr's) is in no list: forgetting its group would leave it
    // running, out of its AI clients, in a group that comes back once the record can be read.
    const hidden = await this.#workloads.unreadableIn(name);
    if (hidden.length > 0) {
      throw new McpmgrError(
        "GROUP_NOT_EMPTY",
        `group ${name} may still have ${hidden.join(", ")}, whose record cannot be read ('mcpmgr list' says why)`,
        {
          hint: `remove the group with the mcpmgr that wrote that record, or remove the workload first: mcpmgr rm ${hidden[0]}`,
        },
      );
    }
    if (group.workloads.length > 0 && !options.withWorkloads) {
      throw new McpmgrError(
        "GROUP_NOT_EMPTY",
        `group ${name} still has ${group.workloads.length} workload(s): ${group.workloads.join(", ")}`,
        { hint: `remove them with the group: mcpmgr group rm ${name} --with-workloads` },
      );
    }
    return group;
  }

  /** Forgets a group once it is empty (the CLI removes the workloads first for --with-workloads). */
  async remove(name: string): Promise<void> {
    await withLock(this.#lockPath, async () => {
      await this.removable(name, { withWorkloads: false });
      const file = await this.#read();
      if (file.groups[name] === undefined) return;
      const { [name]: _removed, ...rest } = file.groups;
      await this.#write({ ...file, groups: rest });
    });
  }

  async #read(): Promise<GroupsFile> {
    const file = await readJsonFile(this.#file, groupsFileSchema, {
      hint: `fix ${this.#file} by hand, or delete it to forget the groups you created (workloads keep theirs)`,
    });
    return file ?? { schema_version: 1, groups: {} };
  }

  async #write(file: GroupsFile): Promise<void> {
    await writeJsonFile(this.#file, file);
  }
}

/**
 * For `run --group`: a workload may only join a group that exists. A name no group can have is
 * refused as such first (it may come from a shared `--from-config` file), so that no hint ever
 * offers it as a command to paste.
 */
export async function assertGroupExists(paths: McpmgrPaths, name: string): Promise<void> {
  assertGroupName(name);
  if (name === DEFAULT_GROUP) return;
  const groups = await new GroupStore(paths).list();
  if (groups.some((group) => group.name === name)) return;
  groupNotFound(name, undefined, groups);
}

/**
 * GROUP_NOT_FOUND, whose hint names the command that creates the group: only for a valid name.
 * A mistyped name is offered the nearest of the `known` groups instead: a near name is far likelier
 * meant than a new group, and offering to create the typo beside it invites making it.
 */
function groupNotFound(
  name: string,
  hint = `create it with 'mcpmgr group create ${name}', or pick one from 'mcpmgr group list'`,
  known: readonly { readonly name: string }[] = [],
): never {
  assertGroupName(name);
  const near = didYouMean(
    closeMatches(
      name,
      known.map((group) => group.name),
      { nearestOnly: true },
    ),
  );
  throw new McpmgrError("GROUP_NOT_FOUND", `no group named ${name}`, {
    hint: near ? `${near} ('mcpmgr group list' shows the groups)` : hint,
  });
}
