/** argv of `mcpmgr proxy` → one frozen, validated ProxySpec. */
import { McpmgrError } from "../errors.ts";
import { parseArgv } from "./argv.ts";
import { incomingAuthSpec, type IncomingAuthSpec } from "./incoming-auth-spec.ts";
import {
  assertCredentialsOverHttps,
  assertTokenExchangeHasCaller,
  outgoingAuthSpec,
  type OutgoingAuthSpec,
} from "./outgoing-auth-spec.ts";
import { proxyElsewhere, proxyOptions } from "./proxy-options.ts";
import { checkOutgoingAuthRules } from "./rules.ts";
import { refuseUrlCredentials } from "./url-credentials.ts";

export interface ListenSpec {
  readonly host: string;
  /** undefined: pick a free port. */
  readonly port: number | undefined;
  /** `--allowed-hosts`: host names the listener answers to besides its own (normalized). */
  readonly allowedHosts: readonly string[];
}

export interface ProxySpec {
  readonly serverName: string;
  readonly target: URL;
  readonly listen: ListenSpec;
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  /** Protect the proxy's endpoint with OIDC bearer tokens (`--oidc-*`). */
  readonly incomingAuth: IncomingAuthSpec | undefined;
  /** mcpmgr's own credentials towards the remote (`--remote-auth*`, `--token-exchange-*`, headers). */
  readonly outgoingAuth: OutgoingAuthSpec;
}

export function buildProxySpec(argv: readonly string[]): ProxySpec {
  const { values, given, positionals, passthrough } = parseArgv(argv, proxyOptions, "proxy", false, proxyElsewhere);
  if (passthrough.length > 0) {
    throw new McpmgrError(
      "INVALID_ARGUMENT",
      "'mcpmgr proxy' starts no server, so arguments after -- have nowhere to go",
      {
        hint: "remove the arguments after --",
      },
    );
  }
  const [serverName, ...extra] = positionals;
  if (serverName === undefined) {
    throw new McpmgrError("MISSING_OPTION", "missing SERVER_NAME", {
      hint: "usage: mcpmgr proxy SERVER_NAME --target-uri URL",
    });
  }
  if (extra.length > 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(extra[0])}`, {
      hint: "'mcpmgr proxy' takes one SERVER_NAME; options start with --",
    });
  }
  const target = values["target-uri"];
  if (target === undefined) {
    throw new McpmgrError("MISSING_OPTION", "--target-uri is required", {
      hint: "add --target-uri http://127.0.0.1:8080/mcp (the MCP endpoint to forward to)",
    });
  }
  refuseUrlCredentials(new URL(target), "--target-uri", "INVALID_OPTION");
  checkOutgoingAuthRules(given);
  const incomingAuth = incomingAuthSpec(values, given);
  const outgoingAuth = outgoingAuthSpec(values, given);
  assertTokenExchangeHasCaller(outgoingAuth, incomingAuth !== undefined);
  assertCredentialsOverHttps(outgoingAuth, new URL(target));
  return Object.freeze({
    serverName,
    target: new URL(target),
    listen: Object.freeze({ host: values.host, port: values.port, allowedHosts: values["allowed-hosts"].flat() }),
    endpointPrefix: values["endpoint-prefix"],
    trustProxyHeaders: values["trust-proxy-headers"],
    incomingAuth,
    outgoingAuth,
  });
}
