/** Every option of `mcpmgr proxy`, in the order help shows them. */
import { caBundleOptions } from "./flags/ca-bundle.ts";
import { incomingAuthOptions } from "./flags/incoming-auth.ts";
import { outgoingAuthOptions } from "./flags/outgoing-auth.ts";
import { policyOptions } from "./flags/policy.ts";
import { proxyListenOptions } from "./flags/proxy-listen.ts";
import { telemetryOptions } from "./flags/telemetry.ts";

export const proxyOptions = {
  ...proxyListenOptions,
  ...incomingAuthOptions,
  ...outgoingAuthOptions,
  ...caBundleOptions,
} as const;

/**
 * `run`'s options that `proxy` lacks, with where to find them: the policies and telemetry (docs/proxy.md
 * sends a user who wants them in front of a remote to `run URL`), and `run`'s name for the port.
 */
export const proxyElsewhere: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    [...Object.keys({ ...policyOptions, ...telemetryOptions }), "tools", "tools-override", "webhook-config"].map(
      (name) => [
        name,
        `--${name} is an option of 'mcpmgr run', not of proxy: to have it in front of a remote, run the remote as a workload, 'mcpmgr run URL --name NAME --${name} …' (docs/proxy.md)`,
      ],
    ),
  ),
  "proxy-port": "did you mean --port? (run calls it --proxy-port)",
};
