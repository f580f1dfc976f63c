/**
 * Outgoing-authentication options in argv.test.ts's style: conflicts and requirements
 * reported as usage errors, --thv-ca-bundle on its own, the scopes a login asks for, and how
 * long `run` waits for a supervisor that may be logging in.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requestedScopes } from "../../src/auth/outgoing/discovery.ts";
import type { ServerInfo } from "../../src/auth/outgoing/oauth-client.ts";
import { supervisorReadyTimeoutMs } from "../../src/workload/supervisor-control.ts";
import { buildProxySpec } from "../../src/config/proxy-spec.ts";
import { parseArgv } from "../../src/config/argv.ts";
import { PLAIN_HTTP_MARKER, plainHttpWarning } from "../../src/config/outgoing-auth-spec.ts";
import { proxyStdioOptions } from "../../src/config/proxy-stdio-options.ts";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import { usageError } from "../support/errors.ts";
import { specFor } from "../support/workload-context.ts";

const TARGET = ["--target-uri", "http://127.0.0.1:9/mcp"];
const scratch = mkdtempSync(join(tmpdir(), "mcpmgr-auth-options-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("a bearer token excludes the OAuth client options", () => {
  const tokenFile = join(scratch, "token");
  writeFileSync(tokenFile, "t\n");
  const bearers = [
    ["--remote-auth-bearer-token", "t"],
    ["--remote-auth-bearer-token-file", tokenFile],
  ];
  const oauth = [
    ["--remote-auth-client-id", "c"],
    ["--remote-auth-client-secret", "s"],
    ["--remote-auth-client-secret-file", tokenFile],
    ["--remote-auth-scopes", "a"],
    ["--remote-auth-resource", "https://r.example"],
  ];
  const rows = bearers.flatMap((bearer) =>
    oauth.map((other) => [[...bearer, ...other].join(" "), [...bearer, ...other]] as const),
  );

  test.each(rows)("proxy %s is CONFLICTING_OPTIONS naming both", (_label, options) => {
    const err = usageError(() => buildProxySpec(["x", ...TARGET, ...options]), "CONFLICTING_OPTIONS");
    expect(err.message).toContain(options[0] as string);
    expect(err.message).toContain(options[2] as string);
    expect(err.message).not.toContain("\n");
  });

  test.each(rows)("run %s is CONFLICTING_OPTIONS", (_label, options) => {
    usageError(() => parseRunArgv(["https://remote.example/mcp", ...options]), "CONFLICTING_OPTIONS");
  });
});

test("a token-exchange secret needs --token-exchange-client-id", () => {
  const base = ["x", ...TARGET, "--oidc-issuer=https://idp.example", "--token-exchange-url=https://sts.example/token"];
  usageError(() => buildProxySpec([...base, "--token-exchange-client-secret", "s"]), "MISSING_OPTION");
  usageError(() => buildProxySpec([...base, "--token-exchange-client-secret-file", "f"]), "MISSING_OPTION");
  const exchange = buildProxySpec([...base, "--token-exchange-client-id", "c", "--token-exchange-client-secret", "s"])
    .outgoingAuth.tokenExchange;
  expect(exchange?.clientId).toBe("c");
  expect(buildProxySpec(base).outgoingAuth.tokenExchange?.clientId).toBeUndefined();
});

describe("--thv-ca-bundle", () => {
  const pem = join(scratch, "ca.pem");
  writeFileSync(pem, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");

  test("is accepted without --oidc-issuer and reaches the outgoing-auth spec (proxy and run)", () => {
    const proxy = buildProxySpec(["x", ...TARGET, "--remote-auth-client-id", "c", "--thv-ca-bundle", pem]);
    expect(proxy.incomingAuth).toBeUndefined();
    expect(proxy.outgoingAuth.caBundle).toContain("BEGIN CERTIFICATE");
    expect(parseRunArgv(["https://remote.example/mcp", "--thv-ca-bundle", pem]).values["thv-ca-bundle"]).toBe(pem);
  });

  test("reaches the incoming-auth spec too", () => {
    expect(
      buildProxySpec(["x", ...TARGET, "--oidc-issuer=https://idp.example", "--thv-ca-bundle", pem]).incomingAuth
        ?.caBundle,
    ).toContain("BEGIN CERTIFICATE");
  });

  test("an unreadable file or one without a PEM certificate is INVALID_OPTION", () => {
    usageError(
      () => buildProxySpec(["x", ...TARGET, "--thv-ca-bundle", join(scratch, "missing.pem")]),
      "INVALID_OPTION",
    );
    const notPem = join(scratch, "not.pem");
    writeFileSync(notPem, "hello\n");
    usageError(() => buildProxySpec(["x", ...TARGET, "--thv-ca-bundle", notPem]), "INVALID_OPTION");
  });
});

describe("the scopes a login asks for (MCP scope selection)", () => {
  const oidc: ServerInfo = { as: { issuer: "https://as.example" }, oidc: true, issuerValidated: true };
  const oauth2: ServerInfo = { as: { issuer: "https://as.example" }, oidc: false, issuerValidated: true };
  const found = (scopes?: string[]) => ({ issuer: new URL("https://as.example"), ...(scopes ? { scopes } : {}) });

  test("--remote-auth-scopes wins over everything", () => {
    expect(requestedScopes(["mine"], found(["challenge"]), oidc)).toEqual(["mine"]);
  });

  test("then what the remote asked for (challenge scope, else scopes_supported), even from an OIDC server", () => {
    expect(requestedScopes(undefined, found(["mcp:read"]), oidc)).toEqual(["mcp:read"]);
    expect(requestedScopes(undefined, found(["mcp:read"]), oauth2)).toEqual(["mcp:read"]);
  });

  test("then openid,profile,email for OIDC, else nothing", () => {
    expect(requestedScopes(undefined, found(), oidc)).toEqual(["openid", "profile", "email"]);
    expect(requestedScopes(undefined, undefined, oidc)).toEqual(["openid", "profile", "email"]);
    expect(requestedScopes(undefined, undefined, oauth2)).toEqual([]);
  });

  test("a chosen set gains offline_access when the authorization server lists it; given or empty sets do not", () => {
    const offline: ServerInfo = {
      as: { issuer: "https://as.example", scopes_supported: ["mcp:basic", "offline_access"] },
      oidc: false,
      issuerValidated: true,
    };
    expect(requestedScopes(undefined, found(["mcp:basic"]), offline)).toEqual(["mcp:basic", "offline_access"]);
    expect(requestedScopes(undefined, found(["mcp:basic"]), oauth2)).toEqual(["mcp:basic"]);
    expect(requestedScopes(["mine"], found(["mcp:basic"]), offline)).toEqual(["mine"]);
    expect(requestedScopes(undefined, undefined, offline)).toEqual([]);
  });
});

describe("how long run waits for a supervisor", () => {
  test("covers --remote-auth-timeout (twice: it may wait for another login's callback port) plus a margin", () => {
    const wait = supervisorReadyTimeoutMs([
      "https://remote.example/mcp",
      "--remote-auth",
      "--remote-auth-timeout",
      "5m",
    ]);
    expect(wait).toBeGreaterThanOrEqual(2 * 5 * 60_000 + 60_000);
  });

  test("keeps the usual wait when the login is short, and when the options cannot be read", () => {
    const usual = supervisorReadyTimeoutMs(["npx://server"]);
    expect(usual).toBeGreaterThanOrEqual(200_000);
    expect(supervisorReadyTimeoutMs(["https://remote.example/mcp", "--remote-auth-timeout", "30s"])).toBe(usual);
    expect(supervisorReadyTimeoutMs(["--bogus"])).toBe(usual);
  });
});

test("OAuth endpoints are https://, http:// on loopback only; a name that merely begins with 127. is no loopback", () => {
  const base = ["x", ...TARGET, "--oidc-issuer=https://idp.example", "--token-exchange-client-id", "c"];
  const exchange = (url: string) => buildProxySpec([...base, `--token-exchange-url=${url}`]).outgoingAuth.tokenExchange;
  expect(exchange("http://127.0.0.1:8080/token")?.url.href).toBe("http://127.0.0.1:8080/token");
  expect(exchange("http://localhost:8080/token")?.url.href).toBe("http://localhost:8080/token");
  for (const url of ["http://sts.example/token", "http://127.attacker.example/token"]) {
    expect(usageError(() => exchange(url), "INVALID_OPTION").message).toBe(
      `--token-exchange-url ${url}: OAuth endpoints must be https:// (http:// only on loopback)`,
    );
  }
});

describe("mcpmgr's credentials go to the remote over https:// only (http:// on loopback)", () => {
  const tokenFile = join(scratch, "plain-http-token");
  writeFileSync(tokenFile, "t\n");
  const credentials = [
    ["--remote-auth-bearer-token-file", tokenFile],
    ["--remote-auth", "--remote-auth-issuer", "https://as.example"],
    ["--remote-forward-headers-secret", "X-Api-Key=api-key"],
    ["--remote-forward-headers", "Authorization=Basic dTpw"],
  ];
  test.each(credentials.map((options) => [options.join(" "), options] as const))(
    "proxy --target-uri http://…elsewhere %s is INVALID_OPTION, naming the credential",
    (_label, options) => {
      const err = usageError(
        () => buildProxySpec(["x", "--target-uri", "http://mcp.example/mcp", ...options]),
        "INVALID_OPTION",
      );
      expect(err.message).toContain("http://mcp.example is plain http://");
      expect(err.message).toContain(
        options[0] === "--remote-auth" ? "--remote-auth" : (options[0] as string).slice(0, 20),
      );
      // The same remote over https, or on loopback over http: accepted.
      buildProxySpec(["x", "--target-uri", "https://mcp.example/mcp", ...options]);
      buildProxySpec(["x", "--target-uri", "http://127.0.0.1:9/mcp", ...options]);
      buildProxySpec(["x", "--target-uri", "http://localhost:9/mcp", ...options]);
    },
  );

  test("a token exchange's token too; a plain header that is no credential goes over http as before", () => {
    const exchange = ["--oidc-issuer", "https://idp.example", "--token-exchange-url", "https://sts.example/token"];
    const err = usageError(
      () => buildProxySpec(["x", "--target-uri", "http://mcp.example/mcp", ...exchange]),
      "INVALID_OPTION",
    );
    expect(err.message).toContain("--token-exchange-url");
    buildProxySpec(["x", "--target-uri", "http://mcp.example/mcp", "--remote-forward-headers", "X-Tenant=acme"]);
  });

  test("the refusal's hint names --remote-insecure-allow-http last, after https:// and a loopback tunnel", () => {
    const err = usageError(
      () =>
        buildProxySpec(["x", "--target-uri", "http://mcp.example/mcp", "--remote-auth-bearer-token-file", tokenFile]),
      "INVALID_OPTION",
    );
    const hint = err.hint ?? "";
    expect(hint.indexOf("https://")).toBeGreaterThanOrEqual(0);
    expect(hint.indexOf("tunnel on loopback")).toBeGreaterThan(hint.indexOf("https://"));
    expect(hint.indexOf("--remote-insecure-allow-http")).toBeGreaterThan(hint.indexOf("tunnel on loopback"));
  });
});

describe("a refusal names the option the user gave, not a sibling", () => {
  const tokenFile = join(scratch, "named-token");
  writeFileSync(tokenFile, "t\n");
  const elsewhere = ["x", "--target-uri", "http://mcp.example/mcp"];
  /** The options that send a credential, and the option the refusal must name. */
  const credentials: [string[], string][] = [
    [["--remote-auth-bearer-token-file", tokenFile], "(--remote-auth-bearer-token-file)"],
    [["--remote-auth-bearer-token", "t"], "(--remote-auth-bearer-token)"],
    [["--remote-auth"], "(--remote-auth)"],
    [["--remote-auth-issuer", "https://as.example"], "(--remote-auth-issuer)"],
    [["--remote-auth-client-id", "c"], "(--remote-auth-client-id)"],
  ];
  test.each(credentials.map(([options, named]) => [options.join(" "), options, named] as const))(
    "plain http:// elsewhere with %s names the option given",
    (_label, options, named) => {
      const err = usageError(() => buildProxySpec([...elsewhere, ...options]), "INVALID_OPTION");
      expect(err.message).toContain(named);
    },
  );

  test("a bad bearer token names its option, and only the file's refusal speaks of a file", () => {
    const spaced = join(scratch, "spaced-token");
    writeFileSync(spaced, "two words\n");
    const fromFile = usageError(
      () => buildProxySpec(["x", ...TARGET, "--remote-auth-bearer-token-file", spaced]),
      "INVALID_OPTION",
    );
    expect(fromFile.message).toContain("--remote-auth-bearer-token-file");
    expect(fromFile.hint).toContain("file");
    const fromFlag = usageError(
      () => buildProxySpec(["x", ...TARGET, "--remote-auth-bearer-token", "two words"]),
      "INVALID_OPTION",
    );
    expect(fromFlag.message).toContain("--remote-auth-bearer-token:");
    expect(fromFlag.hint).not.toContain("file");
  });

  test("an Authorization header, and a token exchange, name the option that already authenticates", () => {
    const header = ["--remote-forward-headers", "Authorization=Basic dTpw"];
    for (const [options, named] of [
      [["--remote-auth-bearer-token-file", tokenFile], "--remote-auth-bearer-token-file"],
      [["--remote-auth-issuer", "https://as.example"], "--remote-auth-issuer"],
      [
        ["--oidc-issuer", "https://idp.example", "--token-exchange-url", "https://sts.example/token"],
        "--token-exchange-url",
      ],
    ] as const) {
      const err = usageError(() => buildProxySpec(["x", ...TARGET, ...options, ...header]), "CONFLICTING_OPTIONS");
      expect(err.message).toContain(`conflicts with ${named},`);
    }
    const exchange = ["--oidc-issuer", "https://idp.example", "--token-exchange-url", "https://sts.example/token"];
    const err = usageError(
      () => buildProxySpec(["x", ...TARGET, ...exchange, "--remote-auth-bearer-token-file", tokenFile]),
      "CONFLICTING_OPTIONS",
    );
    expect(err.message).toContain("cannot be combined with --remote-auth-bearer-token-file");
  });
});

describe("--remote-insecure-allow-http: the credentials go to a plain http:// remote beyond loopback, said once", () => {
  const tokenFile = join(scratch, "insecure-http-token");
  writeFileSync(tokenFile, "the-secret-token\n");
  const allow = "--remote-insecure-allow-http";
  /** The options that send a credential, and the option the warning names it by. */
  const credentials: [string[], string][] = [
    [["--remote-auth-bearer-token-file", tokenFile], "(--remote-auth-bearer-token-file)"],
    [["--remote-auth", "--remote-auth-issuer", "https://as.example"], "(--remote-auth)"],
    [["--remote-forward-headers-secret", "X-Api-Key=api-key"], "X-Api-Key (--remote-forward-headers-secret)"],
    [["--remote-forward-headers", "Authorization=Basic dTpw"], "Authorization header (--remote-forward-headers)"],
    [
      ["--oidc-issuer", "https://idp.example", "--token-exchange-url", "https://sts.example/token"],
      "(--token-exchange-url)",
    ],
  ];
  test.each(credentials.map(([options, named]) => [options.join(" "), options, named] as const))(
    "proxy --target-uri http://…elsewhere %s is taken with it, and its warning names the credential and the origin",
    (_label, options, named) => {
      const spec = buildProxySpec(["x", "--target-uri", "http://10.1.2.3:8080/mcp", ...options, allow]);
      expect(spec.outgoingAuth.insecureAllowHttp).toBe(true);
      const warning = plainHttpWarning(spec.outgoingAuth, spec.target) ?? "";
      expect(warning).toContain("http://10.1.2.3:8080 over plain http://");
      expect(warning).toContain(PLAIN_HTTP_MARKER);
      expect(warning).toContain(named);
      expect(warning).not.toContain("the-secret-token");
      expect(warning).not.toContain("dTpw");
    },
  );

  test("no warning where nothing goes in clear text: https, loopback, no credential, or without the flag", () => {
    const bearer = ["--remote-auth-bearer-token-file", tokenFile];
    for (const argv of [
      ["--target-uri", "https://mcp.example/mcp", ...bearer, allow],
      ["--target-uri", "http://127.0.0.1:9/mcp", ...bearer, allow],
      ["--target-uri", "http://mcp.example/mcp", "--remote-forward-headers", "X-Tenant=acme", allow],
      ["--target-uri", "http://127.0.0.1:9/mcp", ...bearer],
    ]) {
      const spec = buildProxySpec(["x", ...argv]);
      expect(plainHttpWarning(spec.outgoingAuth, spec.target)).toBeUndefined();
    }
    expect(
      buildProxySpec(["x", "--target-uri", "https://mcp.example/mcp", ...bearer]).outgoingAuth.insecureAllowHttp,
    ).toBe(false);
  });

  test("run with a remote and proxy stdio take it too; a local server refuses it", () => {
    const url = "http://10.1.2.3:8080/mcp";
    const bearer = ["--remote-auth-bearer-token-file", tokenFile];
    const parsed = parseRunArgv(["--foreground", url, ...bearer, allow]);
    expect(parsed.values["remote-insecure-allow-http"]).toBe(true);
    expect(specFor(["--foreground", url, ...bearer, allow]).placement.kind).toBe("remote");
    usageError(() => specFor(["--foreground", url, ...bearer]), "INVALID_OPTION");
    expect(
      parseArgv(["stdio", url, ...bearer, allow], proxyStdioOptions, "proxy stdio", false).values[
        "remote-insecure-allow-http"
      ],
    ).toBe(true);
    const local = usageError(() => specFor(["--foreground", "npx://some-server", allow]), "INVALID_OPTION");
    expect(local.message).toContain("--remote-insecure-allow-http");
  });
});
