/**
 * A running gateway for one group: membership → catalog → front end → policies → server.
 * Shaped like `startWorkload` (`{ url, exited, stop() }`) so a supervisor can host a
 * gateway in the background the way it hosts a workload. In search mode (`spec.toolSearch`)
 * the catalog also feeds the search index (search.ts), and call_tool is rewritten before the
 * policies (call-tool-rewrite.ts); both are loaded only then.
 */
import type { GatewaySpec } from "../config/gateway-spec.ts";
import { errorMessage } from "../errors.ts";
import type { AuditOptions } from "../middleware/audit.ts";
import type { SpanSecrets } from "../middleware/telemetry.ts";
import { policyChain } from "../middleware/policy-chain.ts";
import type { Middleware } from "../proxy/handler.ts";
import { LiveStreams } from "../proxy/live-streams.ts";
import { serve } from "../proxy/serve.ts";
import { clientUrl } from "../state/workload-url.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { GroupCatalog } from "./catalog.ts";
import { GATEWAY_PATH, gatewayFrontEnd } from "./front-end.ts";
import { followMembership, type Member, secretHolders } from "./membership.ts";
import { DIRECT_CLIENTS_MARKER, unguardedMemberCheck } from "./unguarded-members.ts";
import { prefixed } from "./names.ts";
import { clientsFollowingDirectly } from "../state/client-registrations.ts";
import { gatewayKey, gatewayRegisterAdvice, groupGateways, guardGroup, pruneGuards } from "../state/gateway-guard.ts";
import type { NameAliases } from "../middleware/cedar-decider.ts";

export interface GatewayContext {
  readonly store: WorkloadStore;
  readonly log: (level: "info" | "warn" | "error", text: string) => void;
  readonly requestTimeoutMs: number;
  readonly sessionIdleMs: number;
  /** Client sessions open at once (MCPMGR_MAX_SESSIONS). */
  readonly maxSessions?: number;
  readonly maxBodyBytes: number;
  /** The largest answer held from a member (MCPMGR_MAX_MESSAGE_BYTES; default 64 MiB). */
  readonly maxMessageBytes?: number;
  /**
   * Prepared by the caller, which owns exporters and files: telemetry middleware (built with the
   * gateway's `withhold`, so its spans hold no member's key in a resource URI), where audit lines go,
   * and authentication for an endpoint path. The policies run in the chain every endpoint has
   * (middleware/policy-chain.ts), on the gateway's names.
   */
  readonly telemetry?: ((secrets: SpanSecrets) => Middleware) | undefined;
  readonly audit?: AuditOptions | undefined;
  readonly authentication?: (endpointPath: string) => readonly Middleware[];
  /** How often the workload store is re-read (fs.watch makes most changes show sooner). */
  readonly membershipPollMs?: number;
  /** Called after every membership change is applied (tests, the background form's status). */
  readonly onMembers?: (members: readonly Member[]) => void;
  /** The embeddings endpoint's API key (`--tool-search-embeddings-key-secret`), resolved by the caller. */
  readonly embeddingsApiKey?: string | undefined;
}

export interface RunningGateway {
  readonly url: string;
  /** A gateway only stops when asked; kept for the supervisor's `startWorkload`-shaped contract. */
  readonly exited: Promise<string>;
  stop(): Promise<void>;
}

/** The names Cedar decides a gateway tool or prompt under besides its gateway name (see NameAliases). */
function aliasesOf(catalog: GroupCatalog, kind: "tool" | "prompt", name: string): NameAliases | undefined {
  const owned = (kind === "tool" ? catalog.view.toolNames : catalog.view.promptNames).byGatewayName.get(name);
  if (owned === undefined) return undefined;
  const stable = prefixed(owned.workload, owned.name);
  // A permit names the tool itself (either spelling); a forbid also catches its bare name, whoever else offers it.
  return { permit: [name, stable], forbid: [name, stable, owned.name] };
}

/**
 * AI clients registered with the group's workloads directly are refused by them while a gateway with
 * policies runs: one warning names them and the command that moves each to the gateway. A registrations
 * file that cannot be read only loses the warning (the `client` commands report what is wrong with it).
 */
async function warnDirectClients(
  store: WorkloadStore,
  group: string,
  log: (level: "warn", text: string) => void,
): Promise<void> {
  const clients = await clientsFollowingDirectly(store.paths, group).catch(() => []);
  if (clients.length === 0) return;
  // Only advice that gives each a gateway with the group's policies (not --gateway alone beside a foreground one).
  const gateways = await groupGateways(store, group);
  const commands = clients.map((client) => gatewayRegisterAdvice(client, group, gateways));
  log(
    "warn",
    `${clients.length === 1 ? "an AI client" : "AI clients"} ${DIRECT_CLIENTS_MARKER} (${clients.join(", ")}) ` +
      `${clients.length === 1 ? "is" : "are"} refused by them while it runs; ` +
      `switch ${clients.length === 1 ? "it" : "each"} to the gateway: ${commands.join(", ")}`,
  );
}

export async function startGateway(spec: GatewaySpec, ctx: GatewayContext): Promise<RunningGateway> {
  let frontEnd: ReturnType<typeof gatewayFrontEnd> | undefined;
  let previous = new Set<string>();
  // Text from workloads (names, error messages) reaches these lines: a line feed in it must not start a
  // line that reads as the gateway's own.
  const log = (level: "info" | "warn", text: string) =>
    ctx.log(level, `gateway '${spec.group}': ${text.replace(/\r?\n|\r/g, "\\n")}`);
  // Search mode's modules are loaded only with --tool-search.
  const searching = spec.toolSearch
    ? { ...(await import("./search.ts")), ...(await import("./call-tool-rewrite.ts")) }
    : undefined;
  // With when-needed names a tool's name changes when another workload offers the same one: Cedar
  // decides on its stable name and its own bare name too, so a forbid keeps applying (names.ts).
  const aliases =
    spec.prefixMode === "when-needed"
      ? (kind: "tool" | "prompt", name: string) => aliasesOf(catalog, kind, name)
      : undefined;
  const search =
    searching && spec.toolSearch
      ? await searching.GatewaySearch.create(spec.toolSearch, {
          tools: spec.tools,
          authz: spec.authz,
          apiKey: ctx.embeddingsApiKey,
          aliases,
          log,
        })
      : undefined;
  // Which members hold secrets, and which did lately: the audit's data is withheld meanwhile, and resource
  // URIs lose their userinfo, query and fragment in the audit, the spans and the catalog's log lines.
  const holders = secretHolders();
  const catalog: GroupCatalog = new GroupCatalog({
    withhold: holders.withhold,
    prefixMode: spec.prefixMode,
    timeoutMs: Math.min(ctx.requestTimeoutMs, 30_000),
    ...(ctx.maxMessageBytes !== undefined ? { maxAnswerBytes: ctx.maxMessageBytes } : {}),
    log,
    onChange: (kinds) => {
      if (kinds.has("tools")) search?.update(catalog.view);
      frontEnd?.listsChanged(kinds);
    },
    onJoin: (name) => frontEnd?.workloadJoined(name),
  });
  frontEnd = gatewayFrontEnd({
    group: spec.group,
    catalog,
    timeoutMs: ctx.requestTimeoutMs,
    sessionIdleMs: ctx.sessionIdleMs,
    search,
    ...(ctx.maxSessions !== undefined ? { maxSessions: ctx.maxSessions } : {}),
  });
  // The members admit the gateway with the installation's key; while this gateway has policies, members
  // without authentication of their own admit nobody else. The key stands in for a member's own --oidc-*
  // only when this gateway authenticates its callers: otherwise anyone who reaches the gateway would be
  // let into that member, so such a member is left out (and would refuse the key anyway: the marker says
  // whether this gateway authenticates).
  const paths = ctx.store.paths;
  const credential = await gatewayKey(paths);
  const authenticates = spec.incomingAuth !== undefined;
  const hasPolicies = Boolean(spec.incomingAuth || spec.tools || spec.authz || spec.audit);
  await pruneGuards(paths, spec.group);
  const releaseGuard = hasPolicies ? await guardGroup(paths, spec.group, { authenticates }) : undefined;
  const warnedLeftOut = new Set<string>();
  const unguarded = releaseGuard ? unguardedMemberCheck((text) => log("warn", text)) : undefined;
  /** The question to the members found at the start; a background gateway answers it before it reports ready. */
  let firstCheck: Promise<void> | undefined;
  if (releaseGuard) {
    log(
      "info",
      "its workloads answer only this gateway (and their own authentication) while it runs: " +
        "'mcpmgr proxy stdio WORKLOAD' and other direct callers are refused; give them this gateway's URL",
    );
    await warnDirectClients(ctx.store, spec.group, log);
  }
  const membership = await followMembership({
    store: ctx.store,
    group: spec.group,
    pollMs: ctx.membershipPollMs,
    onChange: (found) => {
      holders.see(found);
      const served = authenticates ? found : found.filter((member) => !member.ownAuthentication);
      for (const member of found) {
        if (served.includes(member) || warnedLeftOut.has(member.name)) continue;
        warnedLeftOut.add(member.name);
        log("warn", `workload '${member.name}' has its own --oidc-*; give the gateway --oidc-* to serve it`);
      }
      const checked = unguarded?.check(served);
      firstCheck ??= checked;
      const members = served.map((member) => ({ ...member, credential }));
      const names = new Set(members.map((m) => m.name));
      for (const name of previous) {
        if (names.has(name)) continue;
        ctx.log("info", `gateway '${spec.group}': workload '${name}' left`);
        frontEnd?.workloadLeft(name);
      }
      previous = names;
      catalog.setMembers(members);
      ctx.onMembers?.(served);
    },
    onError: (err) => ctx.log("warn", `gateway '${spec.group}': reading the workloads failed: ${errorMessage(err)}`),
  });
  catalog.rereadWith(membership.readBack);
  // The first client should see the whole group, not whichever workloads answered first.
  await catalog.settled(10_000);
  if (search) log("info", `tool search: ${search.toolCount} tools indexed; clients see find_tool and call_tool`);
  const live = new LiveStreams();
  let server: ReturnType<typeof serve>;
  try {
    const handler = await policyChain(
      frontEnd.handler,
      {
        serverName: `gateway-${spec.group}`,
        listenHost: spec.listen.host,
        trustProxyHeaders: spec.trustProxyHeaders,
        allowedHosts: spec.listen.allowedHosts,
        maxBodyBytes: ctx.maxBodyBytes,
        ...(ctx.maxMessageBytes !== undefined ? { maxMessageBytes: ctx.maxMessageBytes } : {}),
      },
      {
        telemetry: ctx.telemetry?.({ withhold: holders.withhold }),
        audit: ctx.audit && { ...ctx.audit, withhold: holders.withhold },
        authentication: ctx.authentication?.(GATEWAY_PATH) ?? [],
        tools: spec.tools,
        authz: spec.authz,
        authzWarning: (text) => log("warn", text),
        authzEndpoint: {
          aliases,
          hiddenAsUnknown: search && searching ? { instead: searching.callToolOf(search.calls) } : {},
        },
        ...(search && searching
          ? {
              rewrite: searching.callToolRewrite((name) => search.isTool(name), search.calls),
              ownTools: searching.SEARCH_TOOLS,
            }
          : {}),
      },
    );
    server = serve({
      host: spec.listen.host,
      port: spec.listen.port,
      live,
      handler,
      onError: (err) => ctx.log("error", `request failed inside the gateway: ${errorMessage(err)}`),
    });
  } catch (err) {
    membership.close();
    unguarded?.close();
    await Promise.all([frontEnd.close(), catalog.close()]);
    await releaseGuard?.();
    throw err;
  }
  // Served already; a background gateway's command (`gateway --detach`, `start`, `restart`) shows what its
  // proxy log says until the gateway reports ready: a member that bypasses the policies is named there
  // too, not only in the log (cli/start-relay.ts). At most the members' guard cache and one question.
  if (spec.detach) await firstCheck;
  const front = frontEnd;
  return {
    url: clientUrl(spec.listen.host, server.port, GATEWAY_PATH),
    exited: new Promise(() => {}),
    async stop() {
      membership.close();
      unguarded?.close();
      // Sessions first: closing them ends their streams, so the server has nothing left to wait for. The
      // catalog's member sessions end meanwhile, within the same bound (MEMBER_SESSION_END_MS) as theirs.
      await Promise.all([front.close(), catalog.close()]);
      await server.shutdown(5_000);
      await releaseGuard?.();
    },
  };
}
