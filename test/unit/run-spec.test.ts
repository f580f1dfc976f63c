/**
 * resolveRunSpec: what `mcpmgr run` options mean together, decided before anything starts.
 * Every refusal here used to need the CLI started (and for containers, an engine); the
 * rules are the same for `run --foreground`, the detached pre-flight and the supervisor,
 * because all three resolve the same RunSpec.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import type { ErrorCode } from "../../src/errors.ts";
import { registryEntrySchema, type RegistryEntry } from "../../src/registry/schema.ts";
import { locateServer } from "../../src/workload/locate.ts";
import { serverEnvironment } from "../../src/workload/server-environment.ts";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import type { RunSpec } from "../../src/workload/run-spec.ts";
import { caught } from "../support/errors.ts";
import { specFor, testContext, type RuntimeKind } from "../support/workload-context.ts";

const PROBE = "npx://./test/fixtures/sandbox-probe";
const IMAGE = "ghcr.io/example/probe:1";
const REMOTE = "https://mcp.example.com/mcp";
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-run-spec-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

function refusal(
  args: readonly string[],
  code: ErrorCode,
  text: string,
  options: { runtime?: RuntimeKind; entry?: RegistryEntry } = {},
) {
  let thrown: unknown;
  try {
    specFor(["--foreground", ...args], options);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeDefined();
  expect((thrown as { code?: string }).code).toBe(code);
  expect((thrown as Error).message).toContain(text);
  expect((thrown as { hint?: string }).hint).toBeString();
}

/** The error specFor throws for `argv`, or undefined when it takes them. */
function errorOf(argv: string[], options: { entry?: RegistryEntry; runtime?: RuntimeKind } = {}) {
  try {
    specFor(argv, options);
  } catch (err) {
    return err as { code?: string; message: string; hint?: string };
  }
  return undefined;
}

function entry(fields: Record<string, unknown>): RegistryEntry {
  return v.parse(registryEntrySchema, {
    description: "a test entry",
    transport: "stdio",
    permissions: "network",
    tools: [],
    ...fields,
  });
}

describe("the policies' files are decoded once, with the field at fault named", () => {
  test("audit: a bad field, and a logFile that cannot be written", async () => {
    refusal(
      [PROBE, "--audit-config", await file("audit.json", { eventTypes: ["tool_call"] })],
      "INVALID_OPTION",
      "eventTypes.0: must be one of",
    );
    const unwritable = await file("unwritable.json", { logFile: join(dir, "no-such-dir", "audit.jsonl") });
    refusal([PROBE, "--audit-config", unwritable], "INVALID_OPTION", "cannot be written: ENOENT");
  });

  test("a file that holds a list is refused, not taken for an object with every field left out", async () => {
    const list = await file("list.json", []);
    for (const option of ["--audit-config", "--webhook-config", "--permission-profile", "--authz-config"])
      refusal([PROBE, option, list], "INVALID_OPTION", `${option} ${list}: (root): must be an object, not a list`);
    refusal([PROBE, "--tools-override", list], "INVALID_OPTION", "must be an object, not a list");
  });

  test("a list where a field holds an object is refused too, with the field named; objects still pass", async () => {
    const overrides = await file("overrides-list.json", { toolsOverride: [] });
    refusal(
      [PROBE, "--tools-override", overrides],
      "INVALID_OPTION",
      `${overrides}: toolsOverride: must be an object, not a list`,
    );
    const entry = await file("override-entry-list.json", { toolsOverride: { echo: [] } });
    refusal(
      [PROBE, "--tools-override", entry],
      "INVALID_OPTION",
      `${entry}: toolsOverride.echo: must be an object, not a list`,
    );
    const network = await file("network-list.json", { network: [] });
    refusal(
      [PROBE, "--permission-profile", network],
      "INVALID_OPTION",
      `${network}: network: must be an object, not a list`,
    );
    const outbound = await file("outbound-list.json", { network: { outbound: [] } });
    refusal(
      [PROBE, "--permission-profile", outbound],
      "INVALID_OPTION",
      `${outbound}: network.outbound: must be an object, not a list`,
    );
    // Lists where the format has lists, and objects where it has objects, are read as before.
    const profile = await file("profile-ok.json", { read: [], network: { outbound: { allow_host: [] }, inbound: {} } });
    const hooks = await file("hooks-ok.json", { validating: [], mutating: [] });
    const renamed = await file("overrides-ok.json", { toolsOverride: { echo: { description: "says it back" } } });
    const spec = specFor([
      "--foreground",
      PROBE,
      "--permission-profile",
      profile,
      "--webhook-config",
      hooks,
      "--tools-override",
      renamed,
    ]);
    expect(spec.policies.webhooks).toBeDefined();
    expect(spec.policies.tools).toBeDefined();
  });

  test("authorization: policies that do not parse, a file of the wrong shape", async () => {
    const broken = await file("broken.json", {
      version: "1.0",
      type: "cedarv1",
      cedar: { policies: ["permit(principal, action, resource) when { nope ;"] },
    });
    refusal([PROBE, "--authz-config", broken], "INVALID_OPTION", "do not parse");
    const opa = await file(
      "opa.yaml",
      'version: "1.0"\ntype: opa\ncedar:\n  policies: ["permit(principal, action, resource);"]\n',
    );
    refusal([PROBE, "--authz-config", opa], "INVALID_OPTION", 'type: must be "cedarv1"');
  });

  test("webhooks: http://, unknown fields, unreadable CA files, bad names", async () => {
    const cases: [unknown, string][] = [
      [{ validating: [{ name: "plain", url: "http://127.0.0.1:9/validate" }] }, "http:// is refused"],
      [{ validating: [{ name: "typo", url: "https://x.example", failurePolicy: "fail" }] }, "validating.0"],
      [
        {
          validating: [{ name: "ca", url: "https://x.example", tls_config: { ca_bundle_path: join(dir, "none.pem") } }],
        },
        "cannot read the file",
      ],
      [{ validating: [{ name: "bad name", url: "https://x.example" }] }, "validating.0.name"],
    ];
    for (const [content, text] of cases)
      refusal([PROBE, "--webhook-config", await file("hooks.json", content)], "INVALID_OPTION", text);
  });

  test("tools: bad override files, empty overrides, hiding an overridden tool", async () => {
    const overrides = await file("overrides.json", { toolsOverride: { env: { name: "environment" } } });
    const described = await file("described.json", { toolsOverride: { env: { description: "The variables" } } });
    const cases: [string[], ErrorCode, string][] = [
      [["--tools-override", await file("bad.json", "{nope")], "INVALID_OPTION", "not valid JSON"],
      [["--tools-override", await file("shape.json", { tools: {} })], "INVALID_OPTION", "--tools-override"],
      [
        ["--tools-override", await file("empty.json", { toolsOverride: { env: {} } })],
        "INVALID_OPTION",
        `--tools-override ${join(dir, "empty.json")}: the entry for env changes nothing`,
      ],
      [
        ["--tools", "read_file", "--tools-override", overrides],
        "CONFLICTING_OPTIONS",
        `--tools-override ${overrides} renames env, but --tools hides it`,
      ],
      [
        ["--tools", "read_file", "--tools-override", described],
        "CONFLICTING_OPTIONS",
        `--tools-override ${described} re-describes env, but --tools hides it`,
      ],
      [
        [
          "--tools-override",
          await file("twice.json", { toolsOverride: { env: { name: "same" }, read_file: { name: "same" } } }),
        ],
        "INVALID_OPTION",
        `--tools-override ${join(dir, "twice.json")} gives two tools the name same`,
      ],
      [["--tools-override", join(dir, "missing.json")], "INVALID_OPTION", "no such file"],
    ];
    for (const [args, code, text] of cases) refusal([PROBE, ...args], code, text);
  });

  test("--thv-ca-bundle is checked when given, even for a local server that no option sends HTTPS for", () => {
    refusal(
      [PROBE, "--thv-ca-bundle", "/nonexistent/ca.pem"],
      "INVALID_OPTION",
      '--thv-ca-bundle "/nonexistent/ca.pem"',
    );
  });

  test("a registry entry's tool list catches unknown tools", () => {
    const probe = entry({ name: "probe", source: { npx: "mcpmgr-sandbox-probe" }, tools: ["env"] });
    refusal(["probe", "--tools", "nope"], "INVALID_OPTION", "unknown tool nope: the registry entry lists env", {
      entry: probe,
    });
  });

  test("telemetry and incoming-auth options need their main option", () => {
    refusal([PROBE, "--otel-service-name", "x"], "MISSING_OPTION", "--otel-service-name needs --otel-endpoint");
    refusal([PROBE, "--oidc-audience", "x"], "MISSING_OPTION", "--oidc-audience needs --oidc-issuer");
  });

  test("a bad --otel-endpoint is explained with a collector's URL, not an MCP server's", () => {
    const error = errorOf([REMOTE, "--otel-endpoint", "127.0.0.1:4318"]);
    expect(error?.message).toContain("https://otel-collector.example.com:4318");
    expect(error?.message).not.toContain("/mcp");
  });

  test("a collector's key in --otel-endpoint's query is refused in a recorded workload and quoted by no error", () => {
    const keyed = "https://otlp.example/otlp?api-key=s3cret-value&region=eu";
    const refused = errorOf([REMOTE, "--otel-endpoint", keyed]);
    expect(refused?.code).toBe("INVALID_OPTION");
    expect(refused?.message).toContain("--otel-endpoint …?api-key=…");
    expect(refused?.hint).toContain("--foreground");
    // A key told by its value's form, under a name that says nothing.
    expect(errorOf([REMOTE, "--otel-endpoint", "https://otlp.example/?t=Bearer%20s3cret-value"])?.code).toBe(
      "INVALID_OPTION",
    );
    // `code`: an OAuth authorization code, and an Azure Functions endpoint's function key (`?code=KEY`);
    // only as the whole name (`country_code`, `statusCode` hold none).
    for (const query of ["code=fn-key-value", "CODE=fn-key-value", "region=eu&code=abc"])
      expect({
        query,
        code: errorOf([REMOTE, "--otel-endpoint", `https://otlp.example/api/otlp?${query}`])?.code,
      }).toEqual({
        query,
        code: "INVALID_OPTION",
      });
    expect(
      errorOf([REMOTE, "--otel-endpoint", "https://otlp.example/otlp?country_code=de&statusCode=1"]),
    ).toBeUndefined();
    // A query with no credential in it is recorded as given; in the foreground nothing is recorded.
    expect(errorOf([REMOTE, "--otel-endpoint", "https://otlp.example/otlp?region=eu"])).toBeUndefined();
    expect(errorOf(["--foreground", REMOTE, "--otel-endpoint", keyed])).toBeUndefined();
    // Names that describe a credential without holding one are no key either.
    expect(
      errorOf([REMOTE, "--otel-endpoint", "https://otlp.example/otlp?token_type=access&authMode=none"]),
    ).toBeUndefined();
    // A workload recorded before this check still starts under its supervisor, warned about, the key not quoted.
    const context = testContext();
    expect(specFor([REMOTE, "--otel-endpoint", keyed], { context, recorded: true }).background).toBe(true);
    expect(context.logged).toEqual([expect.stringMatching(/^warn: .*--otel-endpoint …\?api-key=….*--foreground/)]);
    expect(context.logged.join("")).not.toContain("s3cret-value");
    // Errors about the URL itself quote it without the query's values.
    for (const endpoint of [
      "otlp.example/otlp?api-key=s3cret-value",
      // Mistyped without a path: no less a URL to its user.
      "otlp.example?api-key=s3cret-value",
      "otlp.example:4318?api-key=s3cret-value",
      "localhost?api-key=s3cret-value",
      "ftp://otlp.example/otlp?api-key=s3cret-value#x",
      "https://u:p@otlp.example/otlp?api-key=s3cret-value",
      "http://otlp.example/otlp?api-key=s3cret-value",
    ]) {
      const error = errorOf(["--foreground", REMOTE, "--otel-endpoint", endpoint]);
      expect({ endpoint, code: error?.code }).toEqual({ endpoint, code: "INVALID_OPTION" });
      expect(`${error?.message} ${error?.hint}`).not.toContain("s3cret-value");
    }
  });

  test("decoded policies are in the spec, frozen", async () => {
    const spec = specFor(["--foreground", PROBE, "--tools", "env", "--enable-audit"]);
    expect(spec.policies.tools?.allowed).toEqual(new Set(["env"]));
    expect(spec.policies.audit?.component).toBe("sandbox-probe");
    expect(spec.policies.authz).toBeUndefined();
    expect(Object.isFrozen(spec)).toBe(true);
    expect(Object.isFrozen(spec.placement)).toBe(true);
    expect(Object.isFrozen(spec.policies)).toBe(true);
  });
});

describe("a remote URL runs nowhere locally", () => {
  test("options for a server mcpmgr starts are refused", () => {
    for (const args of [
      ["-e", "A=1"],
      ["--volume", `${dir}:/data`],
      ["--permission-profile", "none"],
      ["--transport", "sse"],
      ["--target-port", "9000"],
      ["--label", "a=b"],
    ]) {
      refusal(
        [REMOTE, ...args],
        "INVALID_OPTION",
        `--${args[0]?.replace(/^-e$/, "env").replace(/^--/, "")} applies to servers mcpmgr starts`,
      );
    }
  });

  test("server arguments after -- are refused for a remote URL, like -e", () => {
    refusal([REMOTE, "--", "--flag"], "INVALID_OPTION", "arguments after -- go to servers mcpmgr starts");
  });

  test("options with nothing to act on for a local stdio process are refused, not recorded", () => {
    refusal([PROBE, "--label", "team=a"], "CONFLICTING_OPTIONS", "--label applies to container workloads");
    refusal(
      [PROBE, "--target-port", "9999"],
      "CONFLICTING_OPTIONS",
      "--target-port applies to sse and streamable-http",
    );
    refusal(
      [PROBE, "--target-host", "0.0.0.0"],
      "CONFLICTING_OPTIONS",
      "--target-host applies to sse and streamable-http",
    );
  });

  test("--endpoint-prefix is refused where no SSE endpoint URL is given out, taken where one is", () => {
    refusal(
      [PROBE, "--endpoint-prefix", "/api"],
      "CONFLICTING_OPTIONS",
      "--endpoint-prefix applies to SSE endpoint URLs",
    );
    refusal(
      [PROBE, "--proxy-mode", "streamable-http", "--endpoint-prefix", "/api"],
      "CONFLICTING_OPTIONS",
      "exposed with --proxy-mode streamable-http",
    );
    refusal(
      [IMAGE, "--transport", "streamable-http", "--endpoint-prefix", "/api"],
      "CONFLICTING_OPTIONS",
      "this server speaks streamable-http",
      { runtime: "container" },
    );
    expect(specFor([PROBE, "--proxy-mode", "sse", "--endpoint-prefix", "/api"]).listen.endpointPrefix).toBe("/api");
    expect(
      specFor([IMAGE, "--transport", "sse", "--endpoint-prefix", "/api"], { runtime: "container" }).listen
        .endpointPrefix,
    ).toBe("/api");
    // A remote's transport is the remote's: the prefix is for the SSE stream it may turn out to be.
    expect(specFor([REMOTE, "--endpoint-prefix", "/api"]).listen.endpointPrefix).toBe("/api");
    // Earlier versions accepted it anywhere: a record that holds it still starts, with a warning.
    const context = testContext();
    specFor([PROBE, "--name", "old", "--endpoint-prefix", "/api"], { context, recorded: true });
    expect(context.logged.join("\n")).toContain("warn: old: --endpoint-prefix applies to SSE endpoint URLs");
  });

  // Review 11 F1: earlier versions accepted (and ignored) these, so a workload's record may hold them.
  test("a recorded workload holding an option an earlier version ignored still starts, with a warning", () => {
    const cases: [string[], string][] = [
      [[PROBE, "--label", "team=a"], "--label applies to container workloads"],
      [[PROBE, "--target-port", "9999", "--target-host", "0.0.0.0"], "--target-port applies to sse"],
      [[REMOTE, "--", "--flag"], "arguments after -- go to servers mcpmgr starts"],
    ];
    for (const [argv, text] of cases) {
      const context = testContext();
      const [source = "", ...rest] = argv;
      const spec = specFor([source, "--name", "old", ...rest], { context, recorded: true });
      expect(spec.name).toBe("old");
      expect(context.logged.join("\n")).toContain(`warn: old: ${text}`);
      expect(context.logged.join("\n")).toContain("ignored");
    }
    // What earlier versions refused too stays refused from a record.
    let thrown: unknown;
    try {
      specFor([PROBE, "--network", "host"], { recorded: true });
    } catch (err) {
      thrown = err;
    }
    expect((thrown as { code?: string }).code).toBe("CONFLICTING_OPTIONS");
  });

  test("container options are refused, and the hint does not suggest a container engine", () => {
    refusal([REMOTE, "--isolate-network"], "CONFLICTING_OPTIONS", "a remote URL runs nowhere locally");
    const err = errorOf(["--foreground", REMOTE, "--runtime-image", "node:22"]) as { hint?: string };
    expect(err.hint).toBe("leave it out: mcpmgr only proxies a remote server, which runs on its own host");
  });

  test("token exchange needs incoming authentication", () => {
    refusal(
      [REMOTE, "--token-exchange-url", "https://sts.example/token"],
      "MISSING_OPTION",
      "needs incoming authentication",
    );
  });

  test("clients use the remote's own path; outgoing authentication is resolved", () => {
    const spec = specFor(["--foreground", "https://mcp.example.com/api/v1/mcp", "--remote-auth-bearer-token", "t"]);
    expect(spec.endpointPath).toBe("/api/v1/mcp");
    expect(spec.placement.kind).toBe("remote");
    if (spec.placement.kind === "remote") expect(spec.placement.outgoingAuth.mode.kind).toBe("bearer");
  });
});

describe("a background workload", () => {
  test("keeps no literal secret in its recorded options", () => {
    for (const [option, instead] of [
      ["--remote-auth-bearer-token", "--remote-auth-bearer-token-file"],
      ["--remote-auth-client-secret", "--remote-auth-client-secret-file"],
    ]) {
      let err: unknown;
      try {
        specFor([
          REMOTE,
          option as string,
          "s3cret",
          ...(option?.includes("client") ? ["--remote-auth-client-id", "c"] : []),
        ]);
      } catch (e) {
        err = e;
      }
      expect((err as { code?: string }).code).toBe("INVALID_OPTION");
      expect((err as { hint?: string }).hint).toContain(instead as string);
    }
    // The same options are fine in the foreground, where nothing is recorded.
    expect(specFor(["--foreground", REMOTE, "--remote-auth-bearer-token", "s3cret"]).background).toBe(false);
  });

  test("keeps no credential forwarded as a plain header in its recorded options", () => {
    const refused = (header: string) => errorOf([REMOTE, "--remote-forward-headers", header]);
    for (const header of [
      "Authorization=Bearer abc.def",
      "X-Api-Key=k-123456",
      "Cookie=sid=9f8e7d",
      "X-Upstream-Token=tok-42x",
      "X-Custom=Bearer abc789",
      "X-Custom=Basic dXNlcjpwYXNz",
      "X-Id=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig",
      // Review L7: names and values the first heuristic missed.
      "Ocp-Apim-Subscription-Key=0123456789abcdef0123",
      "X-Access-Key=AKIAEXAMPLE",
      "X-Custom=sk-live-0123456789abcdef",
    ]) {
      const err = refused(header);
      expect({ header, code: err?.code }).toEqual({ header, code: "INVALID_OPTION" });
      expect(err?.hint).toContain("--remote-forward-headers-secret");
      // The value itself is never repeated in the error.
      expect(err?.message).not.toContain(header.slice(header.indexOf("=") + 1));
    }
    expect(refused("X-Tenant=acme")).toBeUndefined();
    expect(refused("X-Region=eu-west-1")).toBeUndefined();
    // In the foreground nothing is recorded.
    expect(specFor(["--foreground", REMOTE, "--remote-forward-headers", "X-Api-Key=k"]).background).toBe(false);
  });

  test("keeps no other credential of its command line in its recorded options (review 7)", () => {
    const oidc = ["--oidc-issuer", "https://issuer.example", "--oidc-client-id", "c"];
    const introspected = [...oidc, "--oidc-introspection-url", "https://issuer.example/introspect"];
    const cases: [string[], string][] = [
      // The introspection client's secret: its -file form is what a background workload records.
      [[REMOTE, ...introspected, "--oidc-client-secret", "s3cret-value"], "--oidc-client-secret-file"],
      [[PROBE, "-e", "GH=ghp_0123456789abcdef"], "--secret NAME,target=GH"],
      [[PROBE, "-e", "UPSTREAM=Bearer s3cret-value"], "--secret NAME,target=UPSTREAM"],
      [[REMOTE, "--otel-endpoint", "https://otlp.example", "--otel-headers", "api-key=s3cret-value"], "--foreground"],
    ];
    for (const [argv, hint] of cases) {
      const err = errorOf(argv);
      expect({ argv, code: err?.code }).toEqual({ argv, code: "INVALID_OPTION" });
      expect(err?.hint).toContain(hint);
      expect(err?.message).not.toContain("s3cret-value");
    }
    // What is no credential stays allowed; so is all of it in the foreground.
    expect(errorOf([PROBE, "-e", "LIMIT=10", "-e", "MODE=skip"])).toBeUndefined();
    expect(
      errorOf([REMOTE, "--otel-endpoint", "https://otlp.example", "--otel-headers", "x-tenant=acme"]),
    ).toBeUndefined();
    for (const [argv] of cases) expect(errorOf(["--foreground", ...argv])).toBeUndefined();
    // A workload recorded before these checks still starts under its supervisor, with a warning that says what to do.
    const context = testContext();
    expect(specFor([PROBE, "-e", "GH=ghp_0123456789abcdef"], { context, recorded: true }).background).toBe(true);
    expect(context.logged).toEqual([
      expect.stringMatching(/^warn: .*credential in plain text.*--secret NAME,target=GH/),
    ]);
    expect(context.logged.join("")).not.toContain("ghp_0123456789abcdef");
  });

  // Review 7 (R7-L4): mcpmgr never sent a URL's user name or password, yet the URL is listed and logged.
  test("refuses a remote URL with a user name or password, in the foreground too, from a registry entry too", () => {
    for (const url of [
      "https://user:s3cret-value@mcp.example.com/mcp",
      "https://s3cret-value@mcp.example.com/mcp",
      "https://:s3cret-value@mcp.example.com/mcp",
    ]) {
      for (const argv of [[url], ["--foreground", url]]) {
        const err = errorOf(argv);
        expect({ argv, code: err?.code }).toEqual({ argv, code: "INVALID_ARGUMENT" });
        expect(err?.message).toContain("user:password@");
        expect(err?.message).not.toContain("s3cret-value");
        expect(err?.hint).toContain("--remote-forward-headers Authorization=");
        expect(err?.hint).toContain("--remote-forward-headers-secret Authorization=NAME");
      }
    }
    const remote = entry({
      name: "remote-with-password",
      transport: "streamable-http",
      source: { remote: "https://user:s3cret-value@mcp.example.com/mcp" },
    });
    expect(errorOf(["--foreground", "remote-with-password"], { entry: remote })?.code).toBe("INVALID_ARGUMENT");
    expect(errorOf(["--foreground", REMOTE])).toBeUndefined();
  });

  test("needs a name that can be recorded", () => {
    let err: unknown;
    try {
      specFor([PROBE, "--name", "Not A Name"]);
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe("INVALID_ARGUMENT");
  });

  // Review 7: a foreground name is written into AI clients' files too (Codex takes only [A-Za-z0-9_-] names).
  test("so does a foreground run", () => {
    for (const name of ['a"]\nevil = 1\n[x', "../../x", "Not A Name"]) {
      let err: unknown;
      try {
        specFor(["--foreground", PROBE, "--name", name]);
      } catch (e) {
        err = e;
      }
      expect({ name, code: (err as { code?: string }).code }).toEqual({ name, code: "INVALID_ARGUMENT" });
    }
    expect(specFor(["--foreground", PROBE, "--name", "fine-name"]).name).toBe("fine-name");
  });
});

describe("a local process", () => {
  test("an HTTP server needs a network its profile allows", () => {
    refusal(
      [PROBE, "--transport", "streamable-http", "--permission-profile", "none"],
      "CONFLICTING_OPTIONS",
      "needs a network",
    );
  });

  test("a registry entry's transport is its own: another one is refused as that conflict, not as the profile's", () => {
    const stdio = entry({ name: "stdio-entry", source: { npx: "some-package" }, permissions: "none" });
    refusal(
      ["stdio-entry", "--transport", "sse"],
      "CONFLICTING_OPTIONS",
      "--transport sse does not fit registry entry stdio-entry: its server speaks stdio",
      { entry: stdio },
    );
    expect(errorOf(["stdio-entry", "--transport", "sse"], { entry: stdio })?.hint).toBe(
      "leave --transport out (it names what the server speaks); for clients to reach it over SSE, give --proxy-mode sse, or give the server's own arguments for sse after --",
    );
    const http = entry({ name: "http-entry", source: { npx: "some-package" }, transport: "streamable-http" });
    refusal(["http-entry", "--transport", "stdio"], "CONFLICTING_OPTIONS", "its server speaks streamable-http", {
      entry: http,
    });
    // In a container too.
    refusal(["stdio-entry", "--transport", "streamable-http"], "CONFLICTING_OPTIONS", "its server speaks stdio", {
      entry: stdio,
      runtime: "container",
    });
    // Its own transport, or the server's own arguments after --, are the user's to give.
    expect(errorOf(["http-entry", "--transport", "streamable-http"], { entry: http })).toBeUndefined();
    expect(
      errorOf(["stdio-entry", "--transport", "sse", "--permission-profile", "network", "--", "sse"], { entry: stdio }),
    ).toBeUndefined();
  });

  test("an outbound allow-list cannot be enforced by bwrap: refused unless accepted, then a warning", async () => {
    const profile = await file("allow-list.json", {
      network: { outbound: { allow_host: ["api.example.com"], allow_port: [443] } },
    });
    refusal([PROBE, "--permission-profile", profile], "SANDBOX_UNAVAILABLE", "cannot limit outbound connections");
    // The way that keeps the list (process-sandbox.md), not a profile that takes all network away.
    expect(errorOf([PROBE, "--permission-profile", profile])?.hint).toContain("--isolate-network");
    const context = testContext();
    specFor(["--foreground", PROBE, "--permission-profile", profile, "--insecure-allow-unsandboxed"], { context });
    expect(context.logged.join("\n")).toContain("gets the whole network");
  });

  test("a package fetched inside a sandbox without network is warned about; a local project is not", () => {
    const fetched = testContext();
    specFor(["--foreground", "npx://@acme/notes-mcp@1.2.3", "--permission-profile", "none"], { context: fetched });
    expect(fetched.logged.join("\n")).toContain(
      "the permission profile gives @acme/notes-mcp no network, and npx fetches it inside the sandbox",
    );
    const networked = testContext();
    specFor(["--foreground", "npx://@acme/notes-mcp@1.2.3"], { context: networked });
    const local = testContext();
    specFor(["--foreground", PROBE, "--permission-profile", "none"], { context: local });
    expect([...networked.logged, ...local.logged].join("\n")).not.toContain("fetches it inside the sandbox");
  });

  test("container-only options are refused by the process runtime", () => {
    for (const option of ["--isolate-network", "--allow-docker-gateway"])
      refusal([PROBE, option], "CONFLICTING_OPTIONS", `${option} applies to container workloads`);
    refusal([PROBE, "--network", "host"], "CONFLICTING_OPTIONS", "--network applies to container workloads");
  });

  test("credentials for a remote are refused for a local server", () => {
    refusal([PROBE, "--remote-auth-bearer-token", "t"], "INVALID_OPTION", "authenticates mcpmgr to a remote URL");
  });

  test("a secret and a plain variable cannot set the same variable", () => {
    refusal([PROBE, "-e", "TOKEN=1", "--secret", "api,target=TOKEN"], "CONFLICTING_OPTIONS", "both set TOKEN");
  });

  test("variables: the entry's defaults < --env-file-dir < --env-file < -e", async () => {
    await mkdir(join(dir, "envdir"), { recursive: true });
    await writeFile(join(dir, "envdir", "a.env"), "FROM_DIR=dir\nA=dir\nB=dir\nC=dir\n");
    const envFile = await file("file.env", "A=file\nB=file\n");
    const probe = entry({
      name: "probe",
      source: { npx: "mcpmgr-sandbox-probe" },
      env: [
        { name: "A", description: "a", default: "entry" },
        { name: "D", description: "d", default: "entry" },
      ],
    });
    const spec = specFor(
      ["--foreground", "probe", "--env-file-dir", join(dir, "envdir"), "--env-file", envFile, "-e", "A=flag"],
      { entry: probe },
    );
    if (spec.placement.kind !== "process") throw new Error("expected a process");
    expect(spec.placement.server.variables.plain).toEqual({
      A: "flag",
      B: "file",
      C: "dir",
      D: "entry",
      FROM_DIR: "dir",
    });
  });

  test("a variable the registry entry requires must be given: -e, a file or a secret", async () => {
    const probe = entry({
      name: "probe",
      source: { npx: "mcpmgr-sandbox-probe" },
      env: [{ name: "PROBE_TOKEN", description: "a required secret", required: true, secret: true }],
    });
    const { ctx } = testContext({ MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_PROBE_TOKEN: "s3cret" });
    const missing = specFor(["--foreground", "probe"], { entry: probe });
    if (missing.placement.kind !== "process") throw new Error("expected a process");
    const err = await caught(serverEnvironment(missing.placement.server.variables, ctx));
    expect(err.code).toBe("MISSING_OPTION");
    expect(err.message).toContain("probe needs PROBE_TOKEN");
    expect(err.hint).toContain("--secret NAME,target=PROBE_TOKEN");
    const given = specFor(["--foreground", "probe", "--secret", "probe-token,target=PROBE_TOKEN"], { entry: probe });
    if (given.placement.kind !== "process") throw new Error("expected a process");
    const resolved = await serverEnvironment(given.placement.server.variables, ctx);
    expect(resolved.env.PROBE_TOKEN).toBe("s3cret");
    expect(resolved.redact("token s3cret")).not.toContain("s3cret");
  });

  test("the command, the sandbox and the target of an HTTP server are resolved", () => {
    const spec = specFor(["--foreground", PROBE, "--transport", "sse", "--target-port", "9123", "--", "--flag"]);
    if (spec.placement.kind !== "process") throw new Error("expected a process");
    expect(spec.placement.command.at(-1)).toBe("--flag");
    expect(spec.placement.bwrap).toBeString();
    expect(spec.placement.target).toEqual({ host: "127.0.0.1", port: 9123 });
    expect(spec.endpointPath).toBe("/sse");
  });
});

describe("a container", () => {
  const container = { runtime: "container" as const };

  test("--target-host and (for stdio) --target-port are refused", () => {
    refusal(
      [IMAGE, "--transport", "streamable-http", "--target-host", "0.0.0.0"],
      "CONFLICTING_OPTIONS",
      "--target-host applies to servers run as local processes",
      container,
    );
    refusal(
      [IMAGE, "--target-port", "8080"],
      "CONFLICTING_OPTIONS",
      "--target-port applies to sse and streamable-http servers",
      container,
    );
  });

  test("--allow-docker-gateway needs --isolate-network, which excludes --network", () => {
    refusal([IMAGE, "--allow-docker-gateway"], "CONFLICTING_OPTIONS", "--allow-docker-gateway only applies", container);
    refusal(
      [IMAGE, "--isolate-network", "--network", "host"],
      "CONFLICTING_OPTIONS",
      "--network host conflicts",
      container,
    );
  });

  test("--network host/none conflicts with profile none; --publish needs a reachable network", () => {
    refusal(
      [IMAGE, "--permission-profile", "none", "--network", "host"],
      "CONFLICTING_OPTIONS",
      "--network host",
      container,
    );
    refusal(
      [IMAGE, "--network", "host", "--publish", "8080:8080"],
      "CONFLICTING_OPTIONS",
      "--publish needs a bridge",
      container,
    );
    refusal(
      [IMAGE, "--transport", "sse", "--network", "none"],
      "CONFLICTING_OPTIONS",
      "needs a network the proxy can reach",
      container,
    );
  });

  test("invalid labels are refused, naming each of them", () => {
    let err: unknown;
    try {
      specFor(["--foreground", IMAGE, "-l", "mcpmgr.workload=x", "--label=-bad=1", "-l", "ok=1"], container);
    } catch (e) {
      err = e;
    }
    const message = (err as Error).message;
    expect(message).toContain("mcpmgr.workload");
    expect(message).toContain("-bad");
    expect(message).not.toContain("ok (");
  });

  test("a missing mount source is refused", () => {
    refusal([IMAGE, "-v", `${join(dir, "nope")}:/data`], "INVALID_OPTION", "does not exist", container);
  });

  test("a registry entry cannot grant itself privileged mode, the host's network or another network", () => {
    for (const [name, permissions] of [
      ["greedy", { privileged: true }],
      ["hostnet", { network: { mode: "host", outbound: { insecure_allow_all: true } } }],
      // Joining a named network would put the server beside other containers (a database's, say).
      ["joinnet", { network: { mode: "mcpmgr-test-db-net", outbound: { insecure_allow_all: true } } }],
    ] as const) {
      const greedy = entry({ name, source: { image: IMAGE }, permissions });
      refusal([name], "CONFLICTING_OPTIONS", `registry entry ${name} asks for`, { ...container, entry: greedy });
    }
  });

  test("build options apply to packages, and are checked before anything is built", async () => {
    refusal(
      [IMAGE, "--runtime-image", "node:22"],
      "CONFLICTING_OPTIONS",
      "--runtime-image applies to npx://",
      container,
    );
    refusal([PROBE, "--runtime-add-package", "curl;rm -rf /"], "INVALID_OPTION", "--runtime-add-package", container);
    refusal([PROBE, "--ca-cert", await file("not-a-cert.pem", "hello")], "INVALID_OPTION", "--ca-cert", container);
  });

  test("profile none isolates an HTTP server; a host/port allow-list without isolation is warned about", async () => {
    const isolated = specFor(["--foreground", IMAGE, "--transport", "sse", "--permission-profile", "none"], container);
    if (isolated.placement.kind !== "container") throw new Error("expected a container");
    expect(isolated.placement.isolate).toBe(true);
    expect(isolated.placement.networkMode).toBe("");

    const profile = await file("limited.json", { network: { outbound: { allow_host: ["a.example"] } } });
    const context = testContext();
    specFor(["--foreground", IMAGE, "--permission-profile", profile], { ...container, context });
    expect(context.logged.join("\n")).toContain("only --isolate-network enforces");
  });

  test("the registry entry's defaults apply unless an option overrides them", () => {
    const http = entry({
      name: "http-image",
      source: { image: IMAGE },
      transport: "streamable-http",
      targetPort: 7070,
      args: ["--from-entry"],
    });
    const spec = specFor(["--foreground", "http-image"], { ...container, entry: http });
    if (spec.placement.kind !== "container") throw new Error("expected a container");
    expect(spec.name).toBe("http-image");
    expect(spec.placement.targetPort).toBe(7070);
    expect(spec.placement.server.args).toEqual(["--from-entry"]);
    expect(spec.placement.server.transport).toBe("streamable-http");
    const overridden = specFor(["--foreground", "http-image", "--target-port", "9000", "--", "--mine"], {
      ...container,
      entry: http,
    });
    if (overridden.placement.kind !== "container") throw new Error("expected a container");
    expect(overridden.placement.targetPort).toBe(9000);
    expect(overridden.placement.server.args).toEqual(["--mine"]);
  });
});

describe("the proxy's endpoint", () => {
  test("/mcp, or /sse for legacy clients (deprecated, with a warning)", () => {
    expect(specFor(["--foreground", PROBE]).endpointPath).toBe("/mcp");
    const context = testContext();
    const spec: RunSpec = specFor(["--foreground", PROBE, "--proxy-mode", "sse"], { context });
    expect(spec.endpointPath).toBe("/sse");
    expect(context.logged.join("\n")).toContain("--proxy-mode sse is deprecated");
  });

  test("the name comes from --name, the registry entry, or the source", () => {
    expect(specFor(["--foreground", PROBE]).name).toBe("sandbox-probe");
    expect(specFor(["--foreground", PROBE, "--name", "mine"]).name).toBe("mine");
  });
});

describe("locating the server", () => {
  test("MCPMGR_RUNTIME: nonsense is an error; an image cannot run as a process", async () => {
    const nonsense = await caught(
      locateServer(parseRunArgv([PROBE]), testContext({ MCPMGR_RUNTIME: "kubernetes" }).ctx),
    );
    expect(nonsense.code).toBe("INVALID_OPTION");
    expect(nonsense.message).toContain("must be docker, podman or process");
    const image = await caught(locateServer(parseRunArgv([IMAGE]), testContext({ MCPMGR_RUNTIME: "process" }).ctx));
    expect(image.code).toBe("CONFLICTING_OPTIONS");
    expect(image.message).toContain("MCPMGR_RUNTIME=process");
  });

  test("asking for Podman where none answers is a clear error (Docker's socket does not count)", async () => {
    const podman = await caught(
      locateServer(
        parseRunArgv([IMAGE]),
        testContext({ MCPMGR_RUNTIME: "podman", XDG_RUNTIME_DIR: dir, HOME: dir }).ctx,
      ),
    );
    expect(podman.code).toBe("RUNTIME_UNAVAILABLE");
    expect(podman.message).toContain("no podman engine answered");
  });

  test("a registry name is replaced by its entry's source", async () => {
    const registry = await file("registry.json", {
      servers: [
        {
          name: "probe",
          description: "p",
          transport: "stdio",
          source: { npx: "mcpmgr-sandbox-probe" },
          permissions: "none",
          tools: [],
        },
      ],
    });
    const located = await locateServer(
      parseRunArgv(["probe"]),
      testContext({ MCPMGR_RUNTIME: "process", MCPMGR_REGISTRY: registry }).ctx,
    );
    expect(located.entry?.name).toBe("probe");
    expect(located.source.kind).toBe("package");
    expect(located.runtime.kind).toBe("process");
    const unknown = await caught(
      locateServer(parseRunArgv(["prob"]), testContext({ MCPMGR_RUNTIME: "process", MCPMGR_REGISTRY: registry }).ctx),
    );
    expect(unknown.code).toBe("REGISTRY_ENTRY_NOT_FOUND");
    expect(unknown.hint).toContain("probe");
  });
});

describe("MCP_TRANSPORT and MCP_PORT, which mcpmgr sets for an HTTP server", () => {
  test("a value equal to mcpmgr's is kept; a stdio server's are its own", () => {
    expect(
      errorOf([PROBE, "--transport", "sse", "--target-port", "9000", "-e", "MCP_PORT=9000", "-e", "MCP_TRANSPORT=sse"]),
    ).toBeUndefined();
    expect(errorOf([PROBE, "-e", "MCP_PORT=9000", "-e", "MCP_TRANSPORT=sse"])).toBeUndefined();
  });

  test("a registry entry's default is not the user's to fix: it stays overridden", () => {
    const http = entry({
      name: "listener",
      source: { npx: "some-package" },
      transport: "streamable-http",
      env: [{ name: "MCP_PORT", description: "port", default: "8080" }],
    });
    expect(errorOf(["listener"], { entry: http })).toBeUndefined();
    expect(errorOf(["listener", "-e", "MCP_PORT=9000"], { entry: http })?.message).toContain("would be replaced");
  });

  // Earlier versions replaced the value without a word: a workload recorded with it kept starting (after a
  // reboot too), and must not fail to start after an upgrade. On either runtime, as its supervisor resolves it.
  test.each<RuntimeKind>(["process", "container"])(
    "a %s workload recorded with -e MCP_PORT/MCP_TRANSPORT still starts, warned about",
    (runtime) => {
      const argv = [PROBE, "--name", "old", "--transport", "streamable-http", "-e", "MCP_PORT=9000"];
      const context = testContext();
      const spec = specFor([...argv, "-e", "MCP_TRANSPORT=sse"], { runtime, context, recorded: true });
      expect(spec.name).toBe("old");
      const logged = context.logged.join("\n");
      expect(logged).toContain("warn: old: -e MCP_PORT=9000 would be replaced");
      expect(logged).toContain("warn: old: -e MCP_TRANSPORT=sse would be replaced");
      expect(logged).toContain("ignored, as the version that recorded this workload did");
      // A new run of the same options is refused.
      expect(errorOf(argv, { runtime })?.message).toContain("-e MCP_PORT=9000 would be replaced");
    },
  );
});
