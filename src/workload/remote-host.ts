/**
 * A remote workload counts as running without a probe of its server (which may want a login
 * first: supervisor-control.ts `confirmAnswers`), so a host name that does not resolve would
 * show only as every request failing (-32603, ENOTFOUND). `run` looks the host up once and
 * warns. Not where a proxy from the environment reaches the remote: that proxy resolves it.
 */
import { isIP } from "node:net";
import type { OutgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { usesEnvironmentProxy } from "../proxy/upstream/proxy-env.ts";
import { errnoCode } from "../state/atomic-file.ts";
import type { WorkloadContext } from "./context.ts";

/** Long enough for a slow resolver; a lookup that takes longer is itself worth the warning. */
const LOOKUP_TIMEOUT_MS = 5_000;

export async function warnIfRemoteHostUnresolved(
  name: string,
  url: URL,
  ctx: Pick<WorkloadContext, "log" | "env">,
  options: { readonly askedAtStart?: boolean } = {},
): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0 || usesEnvironmentProxy(url, ctx.env)) return;
  const why = await lookupFailure(host);
  if (why === undefined) return;
  // --remote-auth without a named authorization server asks the remote at start whether it
  // wants a login: that start would fail, so "it runs" would be untrue.
  if (options.askedAtStart) {
    throw new McpmgrError(
      "UPSTREAM_UNREACHABLE",
      `the remote's host ${host} does not resolve (${why}); --remote-auth asks the remote at start whether it needs a login`,
      {
        hint: "check the URL, your network and DNS, or name its authorization server with --remote-auth-issuer",
      },
    );
  }
  ctx.log.warn(
    `${name}: the remote's host ${host} does not resolve (${why}); it runs, but every request to it fails until it does (hint: check the URL, your network and DNS)`,
  );
}

/** Whether starting the remote asks it something (OAuth discovery from its 401) before it counts as running. */
export function remoteAskedAtStart(auth: OutgoingAuthSpec): boolean {
  return auth.mode.kind === "oauth" && auth.mode.oauth.issuer === undefined && auth.mode.oauth.endpoints === undefined;
}

/** Why `host` does not resolve, or undefined when it does. */
async function lookupFailure(host: string): Promise<string | undefined> {
  const { lookup } = await import("node:dns/promises");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${LOOKUP_TIMEOUT_MS / 1000} s`), LOOKUP_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      lookup(host).then(
        () => undefined,
        (err: unknown) => errnoCode(err) ?? errorMessage(err),
      ),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
