/**
 * AI clients follow groups: once a client is registered for a group, every workload of that
 * group that runs has an entry in the client's configuration, under the workload's name,
 * with its current URL and transport; the entry goes when the workload stops or is removed.
 *
 * A client reaches each group it follows one of two ways: an entry per workload, or one entry
 * for the group's background gateway (`client register --gateway`); a workload that starts
 * goes to the clients that reach its group its way.
 *
 * This is the API the workload lifecycle and the CLI call. It knows nothing of processes or
 * argv: the caller says which workload started or stopped (and, when registering, which
 * workloads of the group run now; when pruning, which entries are still live). Every change holds the registrations lock from reading
 * them to writing them back, client files included, so concurrent mcpmgr processes queue up.
 *
 * Entries mcpmgr did not write are never touched: an existing entry with the workload's name
 * that mcpmgr has no record of writing, or one whose values were changed since, is left alone
 * with a warning. Warnings are one line each, through ctx.log; nothing here throws for a
 * client file that cannot be updated (a `run` must not fail because an editor's settings
 * file has a typo), only for mcpmgr's own state.
 */
import {
  ClientRegistrationStore,
  groupsOf,
  type OwnedEntry,
  ownedIn,
  pruneOwned,
  type Registrations,
  viaGateway,
} from "../state/client-registrations.ts";
import { assertGroupExists } from "../state/groups.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { allClients, clientById, isClientId } from "./catalog.ts";
import { uninstalled } from "./config-file.ts";
import { brokenFileProblem, removeEntry, skipped, type SyncReport, upsertEntry } from "./entry-edits.ts";
import { forgetKept, keepAddedKeys, passOnEmptyCollection } from "./entry-memory.ts";
import { onlyGateway, otherGatewayEntry } from "./gateway-rules.ts";
import { isInstalled } from "./installed.ts";
import type { ClientContext, ClientId, WorkloadEndpoint } from "./types.ts";

export type { SyncAction, SyncReport } from "./entry-edits.ts";

export interface ClientStatus {
  readonly id: ClientId;
  readonly displayName: string;
  readonly installed: boolean;
  readonly configPath: string;
  readonly groups: readonly string[];
  /** The groups of `groups` it reaches through their background gateway (one entry each) instead of per workload. */
  readonly viaGateway: readonly string[];
  /** Workloads mcpmgr has entries for in the client's configuration. */
  readonly entries: readonly string[];
  /** Why its file cannot be read (a syntax error, not UTF-8): mcpmgr leaves it alone until it is fixed. */
  readonly problem?: string;
}

export class ClientConfigSync {
  readonly #ctx: ClientContext;
  readonly #store: ClientRegistrationStore;

  constructor(ctx: ClientContext) {
    this.#ctx = ctx;
    this.#store = new ClientRegistrationStore(ctx.paths);
  }

  /**
   * A workload of `group` runs (run, start, restart, a supervisor's restart): clients following
   * the group get it, those that reach the group through its gateway only when it is a gateway.
   */
  onWorkloadStarted(workload: WorkloadEndpoint): Promise<readonly SyncReport[]> {
    return this.#change(async (registrations, save) => {
      const reports: SyncReport[] = [];
      for (const [id, record] of Object.entries(registrations.clients)) {
        if (!isClientId(id) || !record.groups.includes(workload.group)) continue;
        if (viaGateway(registrations, id, workload.group) !== (workload.gateway === true)) continue;
        const client = clientById(id);
        const other = workload.gateway === true ? otherGatewayEntry(registrations, id, workload) : undefined;
        const refusal =
          uninstalled(this.#ctx, client) ??
          (other === undefined
            ? undefined
            : `it reaches group ${workload.group} through the gateway ${other} already, and a client gets one gateway of a group (stop one of them with 'mcpmgr stop NAME'; the client follows whichever runs)`);
        if (refusal !== undefined) {
          reports.push(skipped(this.#ctx, client, workload.name, client.configPath(this.#ctx), refusal));
          continue;
        }
        reports.push(await upsertEntry(this.#ctx, registrations, save, client, workload));
      }
      return reports;
    });
  }

  /**
   * A workload stopped or was removed: every entry mcpmgr wrote for it goes, in every client.
   * With `pid`, a foreground run's entries only (those it wrote); without, a recorded workload's.
   */
  onWorkloadStopped(workload: { readonly name: string; readonly pid?: number }): Promise<readonly SyncReport[]> {
    return this.#change((registrations) =>
      this.#removeWhere(registrations, (_client, name, entry) => name === workload.name && entry.pid === workload.pid, {
        remember: true,
      }),
    );
  }

  /**
   * `client register CLIENT --group GROUP [--gateway]`: the client follows the group from now on,
   * per workload or through the group's background gateway, and gets what of the group runs at
   * once (`running` may list others: of those, only the client's entries in the other groups it follows
   * are brought up to date, as an executable that moved needs). A function is called under the lock, so
   * a workload starting meanwhile is either in its list or sees the registration. Switching
   * between the two ways takes the other way's entries out. The gateway way needs one gateway
   * that runs (GATEWAY_NOT_RUNNING otherwise, GATEWAY_AMBIGUOUS for two or more; nothing changes
   * then). A client has one gateway entry per group: another gateway of the group that starts
   * while it has one is skipped with a warning.
   */
  async registerClient(
    client: ClientId,
    group: string,
    running: readonly WorkloadEndpoint[] | (() => Promise<readonly WorkloadEndpoint[]>),
    options: { readonly gateway?: boolean } = {},
  ): Promise<readonly SyncReport[]> {
    await assertGroupExists(this.#ctx.paths, group);
    const gateway = options.gateway === true;
    return this.#change(async (registrations, save) => {
      const all = typeof running === "function" ? await running() : running;
      const endpoints = all.filter((workload) => workload.group === group && (workload.gateway === true) === gateway);
      if (gateway) onlyGateway(group, endpoints);
      const record = (registrations.clients[client] ??= { groups: [] });
      const switched = record.groups.includes(group) && viaGateway(registrations, client, group) !== gateway;
      if (!record.groups.includes(group)) record.groups.push(group);
      const others = (record.viaGateway ?? []).filter((name) => name !== group);
      record.viaGateway = gateway ? [...others, group] : others;
      const reports: SyncReport[] = [];
      if (switched) {
        reports.push(
          ...(await this.#removeWhere(registrations, (id, _name, entry) => id === client && entry.group === group)),
        );
      }
      for (const workload of endpoints) {
        reports.push(await upsertEntry(this.#ctx, registrations, save, clientById(client), workload));
      }
      // Its entries of the other groups it follows are brought up to date too: after an upgrade that
      // moved mcpmgr's executable, registering again is how Claude Desktop's entries get the new path.
      for (const workload of this.#ownedElsewhere(registrations, client, group, all)) {
        const report = await upsertEntry(this.#ctx, registrations, save, clientById(client), workload);
        if (report.action === "updated") reports.push({ ...report, otherGroup: true });
      }
      return reports;
    });
  }

  /** The running workloads of groups other than `group` that `client` follows and has mcpmgr's entry for. */
  #ownedElsewhere(
    registrations: Registrations,
    client: ClientId,
    group: string,
    running: readonly WorkloadEndpoint[],
  ): WorkloadEndpoint[] {
    const followed = registrations.clients[client]?.groups ?? [];
    const owned = ownedIn(registrations, client, clientById(client).configPath(this.#ctx));
    return running.filter(
      (workload) =>
        workload.group !== group &&
        followed.includes(workload.group) &&
        viaGateway(registrations, client, workload.group) === (workload.gateway === true) &&
        owned[workload.name]?.group === workload.group &&
        owned[workload.name]?.pid === workload.pid,
    );
  }

  /**
   * Takes out the entries whose workload no longer runs (a supervisor killed with SIGKILL, a
   * foreground run that died, the machine going down): `live` is asked, under the lock, about
   * each entry mcpmgr wrote.
   */
  pruneEntries(live: (name: string, entry: OwnedEntry) => Promise<boolean>): Promise<readonly SyncReport[]> {
    return this.#change(async (registrations) => {
      const stale = new Set<OwnedEntry>();
      for (const files of Object.values(registrations.owned)) {
        for (const entries of Object.values(files)) {
          for (const [name, entry] of Object.entries(entries)) if (!(await live(name, entry))) stale.add(entry);
        }
      }
      if (stale.size === 0) return [];
      return this.#removeWhere(registrations, (_client, _name, entry) => stale.has(entry), { remember: true });
    });
  }

  /** `client remove CLIENT [--group GROUP]`: stops following the group (all groups without one); its entries go. */
  removeClient(client: ClientId, group?: string): Promise<readonly SyncReport[]> {
    return this.#change(async (registrations) => {
      const record = registrations.clients[client];
      const dropped = group === undefined ? [...(record?.groups ?? [])] : [group];
      if (record !== undefined) record.groups = record.groups.filter((name) => !dropped.includes(name));
      forgetKept(registrations, (id, kept) => id === client && dropped.includes(kept.group));
      return this.#removeWhere(
        registrations,
        (id, _name, entry) => id === client && (group === undefined || dropped.includes(entry.group)),
      );
    });
  }

  /** The group is going away (`group rm`): no client follows it any more, and its entries go. */
  forgetGroup(group: string): Promise<readonly SyncReport[]> {
    return this.#change(async (registrations) => {
      for (const record of Object.values(registrations.clients)) {
        record.groups = record.groups.filter((name) => name !== group);
      }
      forgetKept(registrations, (_id, kept) => kept.group === group);
      return this.#removeWhere(registrations, (_client, _name, entry) => entry.group === group);
    });
  }

  /** Every supported client: installed or not, the groups it follows, its file, mcpmgr's entries in it. */
  /** A recorded workload was removed (`rm`): the keys kept for its entries go with it (entry-memory.ts). */
  forgetWorkload(name: string): Promise<void> {
    return this.#change(async (registrations) => {
      forgetKept(registrations, (_client, _kept, entry) => entry === name);
    });
  }

  async status(): Promise<readonly ClientStatus[]> {
    const registrations = await this.#store.read();
    return Promise.all(
      allClients().map(async (client) => {
        const configPath = client.configPath(this.#ctx);
        // Shown at every status, where start and stop warn about a broken file once (broken-file-notice.ts).
        const problem = await brokenFileProblem(client, configPath);
        return {
          id: client.id,
          displayName: client.displayName,
          installed: isInstalled(this.#ctx, client),
          configPath,
          groups: groupsOf(registrations, client.id),
          viaGateway: registrations.clients[client.id]?.viaGateway ?? [],
          entries: Object.values(registrations.owned[client.id] ?? {})
            .flatMap((entries) => Object.keys(entries))
            .sort(),
          ...(problem !== undefined ? { problem } : {}),
        };
      }),
    );
  }

  async #change<T>(fn: (registrations: Registrations, save: () => Promise<void>) => Promise<T>): Promise<T> {
    return this.#store.change(async (registrations, save) => {
      const result = await fn(registrations, save);
      pruneOwned(registrations);
      return result;
    });
  }

  /** Removes every owned entry `matches` picks, in whichever file it was written to. */
  async #removeWhere(
    registrations: Registrations,
    matches: (client: ClientId, name: string, entry: OwnedEntry) => boolean,
    options: { readonly remember?: boolean } = {},
  ): Promise<SyncReport[]> {
    const reports: SyncReport[] = [];
    for (const [id, files] of Object.entries(registrations.owned)) {
      if (!isClientId(id)) continue;
      for (const [file, entries] of Object.entries(files)) {
        for (const [name, entry] of Object.entries(entries)) {
          if (!matches(id, name, entry)) continue;
          const { report, keep, added } = await removeEntry(this.#ctx, clientById(id), file, name, entry);
          reports.push(report);
          if (!keep) passOnEmptyCollection(entries, name, entry);
          if (options.remember && added !== undefined)
            keepAddedKeys(registrations, id, file, name, await this.#withCreatedAt(name, entry), added);
          // A file that could not be read keeps the record: the entry goes once the file is fixed.
          if (!keep) delete entries[name];
        }
      }
    }
    return reports;
  }

  /**
   * An entry recorded by an mcpmgr from before entries named their workload's `createdAt` (an upgrade
   * with workloads running): the workload's record, still there on a stop or a prune, names it, so the
   * keys added to the entry are kept as for an entry this version wrote.
   */
  async #withCreatedAt(name: string, entry: OwnedEntry): Promise<OwnedEntry> {
    if (entry.createdAt !== undefined || entry.pid !== undefined) return entry;
    const record = await new WorkloadStore(this.#ctx.paths).get(name).catch(() => undefined);
    return record?.group === entry.group ? { ...entry, createdAt: record.createdAt } : entry;
  }
}
