/**
 * What `run --foreground` needs beyond a start: its name must be free (it replaces nothing),
 * and a start it interrupts (Ctrl-C during a pull, a build or the handshake) must leave no
 * container behind (a stdio container keeps its stdin open and would never exit). And no gateway
 * serves it, so it stays out of a group a gateway with policies guards (docs/gateway.md).
 */
import { McpmgrError } from "../errors.ts";
import { MEMBER_GUARD_RECHECK_MS } from "../middleware/gateway-credential.ts";
import type { ForegroundServing } from "../state/foreground-runs.ts";
import { isGroupGuarded } from "../state/gateway-guard.ts";
import { installId } from "../state/install-id.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "./context.ts";
import { assertContainerNameFree, removeContainers } from "./launch-container.ts";
import { foregroundRunClients } from "./client-entries.ts";
import type { RunSpec } from "./run-spec.ts";

/** As for a background start (supervisor-control.ts): minutes without a word read as a hang. */
const STILL_STARTING_AFTER_MS = 15_000;

/**
 * The foreground run's "still starting" notice, once its server is launched (a pull or build says its
 * own progress) and has not answered for a while. Its output goes nowhere but --debug's lines here:
 * `debugging`, the run shows them already, and is not told to run again with --debug.
 */
export function stillStartingNotice(spec: RunSpec, ctx: WorkloadContext, debugging: boolean) {
  const placement = spec.placement;
  const image = placement.kind === "container" && placement.server.transport === "stdio";
  return {
    afterMs: STILL_STARTING_AFTER_MS,
    say: () =>
      ctx.log.info(
        `${spec.name} is still starting: its server has not answered yet (a first start may be downloading its package); ` +
          (debugging
            ? `what it prints shows here as '[debug] ${spec.name} stderr' lines`
            : `run it with --debug to see what it prints`) +
          (image
            ? "; it is spoken to over stdio: if the image serves MCP over HTTP, run it with --transport streamable-http (or sse) and --target-port PORT"
            : ""),
      ),
  };
}

export async function assertForegroundNameFree(spec: RunSpec, ctx: WorkloadContext): Promise<void> {
  if (spec.placement.kind === "container")
    await assertContainerNameFree(spec, spec.placement, new WorkloadStore(ctx.paths));
}

export async function abandonStart(spec: RunSpec, ctx: WorkloadContext): Promise<void> {
  const placement = spec.placement;
  if (placement.kind === "container")
    await installId(ctx.paths)
      .then((install) => removeContainers(placement, spec.name, install))
      .catch(() => {});
}

/**
 * No gateway serves a foreground run (the membership follows workload records, and it has none), while
 * a gateway with policies makes the members of its group refuse every other caller: run there, it would
 * answer nobody. Refused before anything starts, rather than let AI clients reach it past the policies
 * the user put over the group. A run with its own `--oidc-*` decides on its callers itself, as a member
 * does.
 */
export function assertForegroundRunServed(spec: RunSpec, ctx: WorkloadContext): void {
  if (!refusedWhenGuarded(spec) || !isGroupGuarded(ctx.paths, spec.group)) return;
  throw new McpmgrError(
    "WORKLOAD_GUARDED",
    `a gateway with policies serves group ${spec.group}, and it serves no foreground run: ${spec.name} would refuse every caller but that gateway`,
    {
      hint: `run it in the background so the gateway serves it (the same command without --foreground), ${ANOTHER_GROUP}`,
    },
  );
}

const ANOTHER_GROUP = "or put it in another group (--group NAME)";

/** Whether a gateway with policies over its group makes the run refuse every caller: it has no `--oidc-*` of its own. */
export function refusedWhenGuarded(spec: RunSpec): boolean {
  return spec.policies.incomingAuth === undefined;
}

/**
 * `proxy stdio NAME` of a foreground run (Claude Desktop's entry) that refuses every caller now, since a
 * gateway with policies guards its group and none serves a foreground run: refused in one line at start,
 * as for a guarded member, rather than relaying requests that all come back 403. A claim from before
 * the run wrote its group (`serving` undefined) is relayed to as before.
 */
export function assertForegroundRunAnswers(
  paths: McpmgrPaths,
  name: string,
  serving: ForegroundServing | undefined,
): void {
  if (serving === undefined || !serving.refusedWhenGuarded || !isGroupGuarded(paths, serving.group)) return;
  throw new McpmgrError(
    "WORKLOAD_GUARDED",
    `the foreground run ${name} refuses every caller while a gateway with policies serves group ${serving.group}, and no gateway serves a foreground run`,
    {
      hint: `stop it (Ctrl-C in its terminal) and run it in the background so the gateway serves it (the same command without --foreground), then relay to the gateway; ${ANOTHER_GROUP}`,
    },
  );
}

/**
 * A gateway with policies that starts for the group while the run is up makes it refuse every caller
 * (it stays refused: the policies must not be bypassed). Said once, in the run's terminal, with the AI
 * clients whose entries it makes useless and the way out; said again when that gateway is gone (once the
 * run's own guard has seen it go). Checked every `everyMs`; returns what stops the checks.
 */
export function watchForegroundGuard(spec: RunSpec, ctx: WorkloadContext, everyMs = 500): () => void {
  if (!refusedWhenGuarded(spec)) return () => {};
  let guarded = false;
  let unguardedSince: number | undefined;
  let said = Promise.resolve();
  const say = (what: () => Promise<void>) => {
    said = said.then(what).catch(() => {});
  };
  const check = () => {
    if (isGroupGuarded(ctx.paths, spec.group)) {
      unguardedSince = undefined;
      if (!guarded) say(() => sayRefused(spec, ctx));
      guarded = true;
      return;
    }
    if (!guarded) return;
    // The run's member guard may keep its last answer that long: "answers again" only once it does.
    unguardedSince ??= Date.now();
    if (Date.now() - unguardedSince < MEMBER_GUARD_RECHECK_MS) return;
    guarded = false;
    say(() => sayAnswering(spec, ctx));
  };
  check();
  const timer = setInterval(check, everyMs);
  timer.unref?.();
  return () => clearInterval(timer);
}

async function sayRefused(spec: RunSpec, ctx: WorkloadContext): Promise<void> {
  const clients = await foregroundRunClients(spec.name, ctx);
  const entries = clients.length > 0 ? ` (its entries in ${clients.join(", ")} are refused too)` : "";
  ctx.log.warn(
    `${spec.name} answers nobody now: a gateway with policies serves group ${spec.group}, and ${spec.name} refuses every caller but that gateway, which serves no foreground run${entries}; ` +
      `stop it (Ctrl-C) and run it in the background so the gateway serves it (the same command without --foreground), ${ANOTHER_GROUP}`,
  );
}

async function sayAnswering(spec: RunSpec, ctx: WorkloadContext): Promise<void> {
  ctx.log.info(`${spec.name} answers its callers again: no gateway with policies serves group ${spec.group} now`);
}
