/**
 * The strict argv parser and the per-command builders on top of it. Errors are checked
 * by their code; the wording belongs to the CLI tests.
 */
import { describe, expect, test } from "bun:test";
import { parseArgv } from "../../src/config/argv.ts";
import { booleanOption, repeatableOption, stringOption } from "../../src/config/option-spec.ts";
import { buildGatewaySpec } from "../../src/config/gateway-spec.ts";
import { buildProxySpec } from "../../src/config/proxy-spec.ts";
import { clientUrl } from "../../src/state/workload-url.ts";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import { commaList, duration, nonEmpty, port } from "../../src/config/values.ts";
import { McpmgrError, type ErrorCode } from "../../src/errors.ts";

const TARGET = ["--target-uri", "http://127.0.0.1:9/mcp"];

/** A small table, so the generic parser is tested apart from the real option tables. */
const table = {
  name: stringOption({ description: "name", schema: nonEmpty }),
  port: stringOption({ description: "port", default: "8080", schema: port }),
  tag: repeatableOption({ short: "t", description: "tag", schema: nonEmpty }),
  list: repeatableOption({ description: "list", schema: commaList }),
  wait: stringOption({ description: "wait", default: "30s", schema: duration }),
  verbose: booleanOption({ short: "V", description: "verbose", default: false }),
  color: booleanOption({ description: "color", default: true }),
} as const;

/** Runs `fn`, which must throw an McpmgrError, and returns it. */
function caught(fn: () => unknown): McpmgrError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(McpmgrError);
    return err as McpmgrError;
  }
  throw new Error("expected an McpmgrError, but nothing was thrown");
}

/** test.each rows labelled by the argv they hold. */
function labelled(rows: readonly (readonly string[])[]): [string, readonly string[]][] {
  return rows.map((argv) => [argv.join(" "), argv]);
}

function expectCode(fn: () => unknown, code: ErrorCode): void {
  const err = caught(fn);
  expect(err.code).toBe(code);
  expect(err.exitCode).toBe(2);
  expect(err.hint).toBeString();
}

describe("parseArgv", () => {
  test("applies defaults when nothing is given, and reports nothing as given", () => {
    const parsed = parseArgv([], table, "test");
    expect(parsed.values).toEqual({
      name: undefined,
      port: 8080,
      tag: [],
      list: [],
      wait: 30_000,
      verbose: false,
      color: true,
    });
    expect([...parsed.given]).toEqual([]);
    expect(parsed.positionals).toEqual([]);
    expect(parsed.passthrough).toEqual([]);
  });

  test("converts given values with the option's schema", () => {
    const parsed = parseArgv(["--name", " srv ", "--port=9000", "-V"], table, "test");
    expect(parsed.values.name).toBe("srv");
    expect(parsed.values.port).toBe(9000);
    expect(parsed.values.verbose).toBe(true);
    expect([...parsed.given].sort()).toEqual(["name", "port", "verbose"]);
  });

  test("repeatable options accumulate in order, in every spelling", () => {
    const parsed = parseArgv(["-t", "a", "--tag", "b", "--tag=c", "-td"], table, "test");
    expect(parsed.values.tag).toEqual(["a", "b", "c", "d"]);
  });

  test("a non-repeatable option given twice is an error", () => {
    expectCode(() => parseArgv(["--name", "a", "--name", "b"], table, "test"), "INVALID_OPTION");
    expectCode(() => parseArgv(["--name=a", "--name=a"], table, "test"), "INVALID_OPTION");
  });

  test("unknown options are errors, long and short", () => {
    expectCode(() => parseArgv(["--bogus"], table, "test"), "INVALID_OPTION");
    expectCode(() => parseArgv(["--bogus=1"], table, "test"), "INVALID_OPTION");
    expectCode(() => parseArgv(["-x"], table, "test"), "INVALID_OPTION");
    expectCode(() => parseArgv(["--no-name"], table, "test"), "INVALID_OPTION");
  });

  test("a string option without its value is an error", () => {
    expectCode(() => parseArgv(["--name"], table, "test"), "INVALID_OPTION");
  });

  test("a boolean option with an inline value other than true/false is an error", () => {
    expectCode(() => parseArgv(["--verbose=yes"], table, "test"), "INVALID_OPTION");
  });

  test("an invalid value is an error", () => {
    expectCode(() => parseArgv(["--port", "0"], table, "test"), "INVALID_OPTION");
    expectCode(() => parseArgv(["--name", "  "], table, "test"), "INVALID_OPTION");
  });

  test("--no-X and --X=false turn a boolean off; --X=true and --X=TRUE turn it on", () => {
    expect(parseArgv(["--no-color"], table, "test").values.color).toBe(false);
    expect(parseArgv(["--color=false"], table, "test").values.color).toBe(false);
    expect(parseArgv(["--verbose=true"], table, "test").values.verbose).toBe(true);
    expect(parseArgv(["--verbose=TRUE"], table, "test").values.verbose).toBe(true);
    expect(parseArgv(["--no-color"], table, "test").given.has("color")).toBe(true);
  });

  test("a value that looks like --no-X stays the value of the option before it", () => {
    // `--tag --no-color` is ambiguous: it must not silently turn color off.
    expectCode(() => parseArgv(["--tag", "--no-color"], table, "test"), "INVALID_OPTION");
    expect(parseArgv(["--tag=--no-color"], table, "test").values).toMatchObject({ tag: ["--no-color"], color: true });
  });

  test("everything after a standalone -- is passed through verbatim", () => {
    const argv = ["srv", "--name", "n", "--", "--help", "-t", "x", "--", "--no-color", "--bogus"];
    const parsed = parseArgv(argv, table, "test");
    expect(parsed.positionals).toEqual(["srv"]);
    expect(parsed.passthrough).toEqual(["--help", "-t", "x", "--", "--no-color", "--bogus"]);
    expect(parsed.values).toMatchObject({ name: "n", tag: [], color: true });
  });

  test("a trailing -- gives an empty passthrough", () => {
    const parsed = parseArgv(["srv", "--"], table, "test");
    expect(parsed.positionals).toEqual(["srv"]);
    expect(parsed.passthrough).toEqual([]);
  });

  test.each([
    ["30s", 30_000],
    ["2m30s", 150_000],
    ["1m", 60_000],
    ["1h", 3_600_000],
    ["500ms", 500],
    ["1h1m1s1ms", 3_661_001],
    ["1.5s", 1500],
  ])("duration %s is %d ms", (text, ms) => {
    expect(parseArgv(["--wait", text], table, "test").values.wait).toBe(ms);
  });

  test.each(["30", "30x", "0s", "s", "-1s", "1d", ""])("duration %j is rejected", (text) => {
    expectCode(() => parseArgv([`--wait=${text}`], table, "test"), "INVALID_OPTION");
  });

  // Every spelling of a boolean keeps its place on the command line: the last one wins.
  test("for a boolean given several times, the last occurrence wins", () => {
    expect(parseArgv(["--verbose", "--verbose=false"], table, "test").values.verbose).toBe(false);
    expect(parseArgv(["--color", "--no-color"], table, "test").values.color).toBe(false);
  });

  test("values and passthrough are frozen", () => {
    const parsed = parseArgv(["-t", "a", "--", "x"], table, "test");
    expect(Object.isFrozen(parsed.values)).toBe(true);
    expect(Object.isFrozen(parsed.values.tag)).toBe(true);
  });
});

describe("parseRunArgv", () => {
  test("-e accumulates KEY=VALUE pairs; the value may contain = or be empty", () => {
    const { values } = parseRunArgv(["srv", "-e", "A=1", "-e", "B=2", "--env=C=x=y", "-eD="]);
    expect(values.env).toEqual([
      { key: "A", value: "1" },
      { key: "B", value: "2" },
      { key: "C", value: "x=y" },
      { key: "D", value: "" },
    ]);
  });

  test("--tools accumulates across comma lists and repetitions", () => {
    const { values } = parseRunArgv(["srv", "--tools", "a,b", "--tools", "c"]);
    expect(values.tools.flat()).toEqual(["a", "b", "c"]);
  });

  test("-p 127.0.0.1:host:container, as Docker users keep a port on loopback, is the same as host:container", () => {
    expect(parseRunArgv(["srv", "-p", "127.0.0.1:8080:80"]).values.publish).toEqual([
      { hostPort: 8080, containerPort: 80 },
    ]);
  });

  test("other repeatable options accumulate: -l, -p, -v, --secret, --webhook-config", () => {
    const { values } = parseRunArgv([
      "srv",
      "-l",
      "a=1",
      "-l",
      "b=2",
      "-p",
      "8080:80",
      "-p",
      "9090:90",
      "-v",
      "/src:/dst",
      "-v",
      "/data:/data:ro",
      "--secret",
      "gh,target=GITHUB_TOKEN",
      "--secret",
      "db,target=DB_PASSWORD",
      "--webhook-config",
      "a.json",
      "--webhook-config",
      "b.json",
    ]);
    expect(values.label).toEqual([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
    ]);
    expect(values.publish).toEqual([
      { hostPort: 8080, containerPort: 80 },
      { hostPort: 9090, containerPort: 90 },
    ]);
    expect(values.volume).toEqual([
      { hostPath: "/src", containerPath: "/dst", readOnly: false },
      { hostPath: "/data", containerPath: "/data", readOnly: true },
    ]);
    expect(values.secret).toEqual([
      { name: "gh", target: "GITHUB_TOKEN" },
      { name: "db", target: "DB_PASSWORD" },
    ]);
    expect(values["webhook-config"]).toEqual(["a.json", "b.json"]);
  });

  // Which targets a secret must not replace depends on the server (MCP_PORT is the user's for a stdio
  // server) and on whether the options are a record's: the parser takes any variable name, and
  // server-environment.ts decides (test/unit/secret-targets.test.ts).
  test("--secret takes any variable name as its target", () => {
    for (const target of ["PATH_TOKEN", "GITHUB_HOME", "path", "HTTPS_PROXY", "MCP_API_KEY", "MCP_PORT", "HOME"]) {
      expect(parseRunArgv(["srv", "--secret", `tok,target=${target}`]).values.secret).toEqual([
        { name: "tok", target },
      ]);
    }
  });

  test("server arguments after -- are kept verbatim, including --help and -e", () => {
    const parsed = parseRunArgv(["npx://@scope/server", "-e", "A=1", "--", "--help", "-e", "NOVALUE", "--", "x y"]);
    expect(parsed.positionals).toEqual(["npx://@scope/server"]);
    expect(parsed.passthrough).toEqual(["--help", "-e", "NOVALUE", "--", "x y"]);
    expect(parsed.values.env).toEqual([{ key: "A", value: "1" }]);
  });

  test("--ignore-globally defaults to true; --no-ignore-globally and --ignore-globally=false turn it off", () => {
    expect(parseRunArgv(["srv"]).values["ignore-globally"]).toBe(true);
    expect(parseRunArgv(["srv", "--no-ignore-globally"]).values["ignore-globally"]).toBe(false);
    expect(parseRunArgv(["srv", "--ignore-globally=false"]).values["ignore-globally"]).toBe(false);
    expect(parseRunArgv(["srv", "--ignore-globally=true"]).values["ignore-globally"]).toBe(true);
  });

  test("applies the spec's defaults", () => {
    const { values } = parseRunArgv(["srv"]);
    expect(values).toMatchObject({
      group: "default",
      foreground: false,
      "proxy-mode": "streamable-http",
      host: "127.0.0.1",
      "target-host": "127.0.0.1",
      "image-verification": "warn",
      "remote-auth-callback-port": 8666,
      "remote-auth-timeout": 30_000,
      "otel-sampling-rate": 0.1,
      "otel-tracing-enabled": true,
      "otel-metrics-enabled": true,
      "otel-use-legacy-attributes": true,
      "token-exchange-subject-token-type": "access_token",
    });
    expect(values.name).toBeUndefined();
  });

  test.each([
    ["30s", 30_000],
    ["2m30s", 150_000],
    ["1h", 3_600_000],
    ["500ms", 500],
  ])("--remote-auth-timeout %s is %d ms", (text, ms) => {
    expect(parseRunArgv(["srv", "--remote-auth-timeout", text]).values["remote-auth-timeout"]).toBe(ms);
  });

  test.each([
    ["unknown option", ["srv", "--bogus"]],
    ["value outside the choices", ["srv", "--proxy-mode", "foo"]],
    ["env without =", ["srv", "-e", "NOVALUE"]],
    ["volume without container path", ["srv", "-v", "bad"]],
    ["publish without container port", ["srv", "-p", "80"]],
    ["publish on an address other than loopback", ["srv", "-p", "0.0.0.0:8080:80"]],
    ["bad duration", ["srv", "--remote-auth-timeout", "30x"]],
    ["sampling rate above 1", ["srv", "--otel-sampling-rate", "1.5"]],
    ["negative sampling rate", ["srv", "--otel-sampling-rate=-0.5"]],
    ["port out of range", ["srv", "--proxy-port", "70000"]],
    ["unknown transport", ["srv", "--transport", "websocket"]],
    ["non-repeatable option twice", ["srv", "--name", "a", "--name", "b"]],
    ["boolean with a non-boolean value", ["srv", "--foreground=maybe"]],
  ] as const)("%s is INVALID_OPTION", (_label, argv) => {
    expectCode(() => parseRunArgv(argv), "INVALID_OPTION");
  });

  test("no server is MISSING_OPTION", () => {
    expectCode(() => parseRunArgv([]), "MISSING_OPTION");
    expectCode(() => parseRunArgv(["--", "arg"]), "MISSING_OPTION");
  });

  test("--from-config replaces the server argument", () => {
    expect(parseRunArgv(["--from-config", "exported.json"]).positionals).toEqual([]);
    expectCode(() => parseRunArgv(["srv", "--from-config", "exported.json"]), "CONFLICTING_OPTIONS");
  });

  test("a second positional is INVALID_ARGUMENT", () => {
    expectCode(() => parseRunArgv(["srv", "extra"]), "INVALID_ARGUMENT");
  });

  test.each(
    labelled([
      [
        "--remote-auth-issuer",
        "https://a.example",
        "--remote-auth-authorize-url",
        "https://b.example",
        "--remote-auth-token-url",
        "https://b.example/t",
      ],
      ["--remote-auth-bearer-token", "t", "--remote-auth-bearer-token-file", "f"],
      ["--remote-auth", "--remote-auth-bearer-token", "t"],
      [
        "--token-exchange-url",
        "https://x.example",
        "--token-exchange-client-secret",
        "s",
        "--token-exchange-client-secret-file",
        "f",
      ],
    ]),
  )("%s is CONFLICTING_OPTIONS", (_label, options) => {
    expectCode(() => parseRunArgv(["srv", ...options]), "CONFLICTING_OPTIONS");
  });

  test("--env-file and --env-file-dir combine (the file wins over the directory)", () => {
    const { values } = parseRunArgv(["srv", "--env-file", "a", "--env-file-dir", "b"]);
    expect(values["env-file"]).toBe("a");
    expect(values["env-file-dir"]).toBe("b");
  });

  test.each(
    labelled([
      ["--remote-auth-authorize-url", "https://a.example"],
      ["--remote-auth-token-url", "https://a.example"],
      ["--token-exchange-audience", "aud"],
    ]),
  )("%s is MISSING_OPTION", (_label, options) => {
    expectCode(() => parseRunArgv(["srv", ...options]), "MISSING_OPTION");
  });

  test("valid outgoing-auth combinations parse", () => {
    const { values } = parseRunArgv([
      "https://remote.example/mcp",
      "--remote-auth",
      "--remote-auth-authorize-url",
      "https://a.example/authorize",
      "--remote-auth-token-url",
      "https://a.example/token",
      "--remote-auth-scopes",
      "openid, email",
      "--token-exchange-url",
      "https://sts.example/token",
      "--token-exchange-subject-token-type",
      "id_token",
    ]);
    expect(values["remote-auth"]).toBe(true);
    expect(values["remote-auth-scopes"]).toEqual(["openid", "email"]);
    expect(values["token-exchange-subject-token-type"]).toBe("id_token");
  });
});

describe("buildProxySpec", () => {
  test("builds the listen address and target", () => {
    const spec = buildProxySpec(["everything", ...TARGET, "--port", "8081", "--host", "[::1]"]);
    expect(spec.serverName).toBe("everything");
    expect(spec.target.href).toBe("http://127.0.0.1:9/mcp");
    expect(spec.listen).toEqual({ host: "::1", port: 8081, allowedHosts: [] });
    expect(spec.trustProxyHeaders).toBe(false);
    expect(Object.isFrozen(spec)).toBe(true);
  });

  // Review 7 (R7-L4): the user name and password of a URL were never sent, and the command line is in ps.
  test("refuses a --target-uri with a user name or password, without repeating it", () => {
    for (const target of ["http://user:s3cret@127.0.0.1:9/mcp", "http://s3cret@127.0.0.1:9/mcp"]) {
      const err = caught(() => buildProxySpec(["x", "--target-uri", target]));
      expect(err.code).toBe("INVALID_OPTION");
      expect(err.message).toStartWith("--target-uri holds a user name or password");
      expect(err.message).not.toContain("s3cret");
      expect(err.hint).toContain("--remote-forward-headers-secret Authorization=NAME");
    }
  });

  test("defaults to 127.0.0.1 and a free port", () => {
    expect(buildProxySpec(["x", ...TARGET]).listen).toEqual({ host: "127.0.0.1", port: undefined, allowedHosts: [] });
  });

  test("normalises --endpoint-prefix", () => {
    expect(buildProxySpec(["x", ...TARGET, "--endpoint-prefix", "api/mcp/"]).endpointPrefix).toBe("/api/mcp");
  });

  test.each([
    ["port out of range", ["x", ...TARGET, "--port", "70000"]],
    ["port zero", ["x", ...TARGET, "--port", "0"]],
    ["target is not a URL", ["x", "--target-uri", "notaurl"]],
    ["target is not http(s)", ["x", "--target-uri", "ftp://example.com/mcp"]],
    ["unknown option", ["x", ...TARGET, "--bogus"]],
    ["--target-uri twice", ["x", ...TARGET, "--target-uri", "http://127.0.0.1:10/mcp"]],
  ] as const)("%s is INVALID_OPTION", (_label, argv) => {
    expectCode(() => buildProxySpec(argv), "INVALID_OPTION");
  });

  test("run's policy and telemetry options point to 'mcpmgr run URL'; each command's port option names the other's", () => {
    for (const option of ["--tools", "--enable-audit", "--authz-config", "--webhook-config", "--otel-endpoint"]) {
      const err = caught(() => buildProxySpec(["x", ...TARGET, option, "v"]));
      expect(err.code).toBe("INVALID_OPTION");
      expect(err.hint).toContain(`'mcpmgr run URL --name NAME ${option}`);
    }
    expect(caught(() => buildProxySpec(["x", ...TARGET, "--no-otel-metrics-enabled"])).hint).toContain("'mcpmgr run");
    expect(caught(() => buildProxySpec(["x", ...TARGET, "--proxy-port", "8080"])).hint).toContain("--port?");
    expect(caught(() => buildGatewaySpec(["team", "--proxy-port", "8080"])).hint).toContain("--port?");
    expect(caught(() => buildGatewaySpec(["team", "--webhook-config", "h.yaml"])).hint).toContain(
      "'mcpmgr run … --webhook-config FILE'",
    );
    // run's --port may be the server's own option, so the hint says where those go too.
    const run = caught(() => parseRunArgv(["srv", "--port", "8080"]));
    expect(run.hint).toContain("--proxy-port?");
    expect(run.hint).toContain("after --");
  });

  test("missing SERVER_NAME or --target-uri is MISSING_OPTION", () => {
    expectCode(() => buildProxySpec([...TARGET]), "MISSING_OPTION");
    expectCode(() => buildProxySpec(["x"]), "MISSING_OPTION");
  });

  test("arguments after -- and a second positional are INVALID_ARGUMENT", () => {
    expectCode(() => buildProxySpec(["x", ...TARGET, "--", "--help"]), "INVALID_ARGUMENT");
    expectCode(() => buildProxySpec(["x", "y", ...TARGET]), "INVALID_ARGUMENT");
  });

  test("--oidc-* options build the incoming-auth spec; http:// issuers and stray companions are refused", () => {
    const spec = buildProxySpec([
      "x",
      ...TARGET,
      "--oidc-issuer=https://idp.example",
      "--oidc-audience=aud",
    ]).incomingAuth;
    expect(spec?.issuer.href).toBe("https://idp.example/");
    expect(spec?.audience).toBe("aud");
    expect(spec?.scopesSupported).toEqual(["openid"]);
    expect(buildProxySpec(["x", ...TARGET]).incomingAuth).toBeUndefined();
    expectCode(() => buildProxySpec(["x", ...TARGET, "--oidc-issuer=http://idp.example"]), "INVALID_OPTION");
    expectCode(() => buildProxySpec(["x", ...TARGET, "--oidc-audience=aud"]), "MISSING_OPTION");
  });

  test("outgoing-auth options build their spec: bearer, OAuth (explicit or on demand), token exchange, headers", () => {
    const bearer = buildProxySpec([
      "x",
      ...TARGET,
      "--remote-auth-bearer-token=abc",
      "--remote-forward-headers=X-Api-Key=k",
    ]).outgoingAuth;
    expect(bearer.mode).toEqual({ kind: "bearer", token: "abc", option: "remote-auth-bearer-token" });
    expect(bearer.headers).toEqual([{ name: "X-Api-Key", value: "k" }]);
    const oauth = buildProxySpec([
      "x",
      ...TARGET,
      "--remote-auth",
      "--remote-auth-issuer=https://idp.example",
      "--remote-auth-client-id=c",
    ]).outgoingAuth.mode;
    expect(oauth.kind === "oauth" && oauth.oauth.onDemand).toBe(false);
    expect(oauth.kind === "oauth" && oauth.oauth.callbackPort).toBe(8666);
    expect(oauth.kind === "oauth" && oauth.oauth.timeoutMs).toBe(30_000);
    const onDemand = buildProxySpec(["x", ...TARGET, "--remote-auth-client-id=c"]).outgoingAuth.mode;
    expect(onDemand.kind === "oauth" && onDemand.oauth.onDemand).toBe(true);
    expect(buildProxySpec(["x", ...TARGET]).outgoingAuth.mode).toEqual({ kind: "none" });
    // Token exchange exchanges the client's token: it needs incoming authentication.
    expectCode(() => buildProxySpec(["x", ...TARGET, "--token-exchange-url=https://sts.example"]), "MISSING_OPTION");
    const exchange = buildProxySpec([
      "x",
      ...TARGET,
      "--oidc-issuer=https://idp.example",
      "--token-exchange-url=https://sts.example",
    ]).outgoingAuth.tokenExchange;
    expect(exchange?.headerName).toBe("Authorization");
    expect(exchange?.subjectTokenType).toBe("access_token");
  });

  test("client secret precedence: the flag, then the file, then MCPMGR_REMOTE_OAUTH_CLIENT_SECRET", async () => {
    const { outgoingAuthSpec } = await import("../../src/config/outgoing-auth-spec.ts");
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const file = join(mkdtempSync(join(tmpdir(), "mcpmgr-secret-")), "secret");
    writeFileSync(file, "from-file\n");
    const base = {
      "remote-auth": true,
      "remote-auth-issuer": "https://idp.example",
      "remote-auth-callback-port": 8666,
      "remote-auth-skip-browser": false,
      "remote-auth-timeout": 30_000,
      "remote-forward-headers": [],
      "remote-forward-headers-secret": [],
      "token-exchange-subject-token-type": "access_token" as const,
      "remote-insecure-allow-http": false,
    };
    const secretOf = (values: Record<string, unknown>, env: Record<string, string> = {}) => {
      const mode = outgoingAuthSpec(
        { ...base, ...values } as Parameters<typeof outgoingAuthSpec>[0],
        new Set(Object.keys(values)),
        env,
      ).mode;
      return mode.kind === "oauth" ? mode.oauth.clientSecret : undefined;
    };
    const env = { MCPMGR_REMOTE_OAUTH_CLIENT_SECRET: "from-env" };
    expect(secretOf({ "remote-auth-client-secret": "from-flag", "remote-auth-client-secret-file": file }, env)).toBe(
      "from-flag",
    );
    expect(secretOf({ "remote-auth-client-secret-file": file }, env)).toBe("from-file");
    expect(secretOf({}, env)).toBe("from-env");
    expect(secretOf({})).toBeUndefined();
  });

  test("conflicting outgoing-auth options are reported as conflicts", () => {
    const argv = [
      "x",
      ...TARGET,
      "--remote-auth-issuer",
      "https://a.example",
      "--remote-auth-authorize-url",
      "https://b.example",
    ];
    expectCode(() => buildProxySpec(argv), "CONFLICTING_OPTIONS");
  });

  // Checked up front, not left to fail when the server tries to bind.
  test("--host rejects strings that are no address or host name", () => {
    for (const bad of [":", "1:2", "-", "a..b", "host/path", "256.1.1.1", "1.2.3", "10.0.0.1.5"]) {
      expectCode(() => buildProxySpec(["x", ...TARGET, "--host", bad]), "INVALID_OPTION");
    }
    for (const good of ["::1", "[::1]", "0.0.0.0", "10.1.2.3", "mcp-01.internal", "1password.example"]) {
      expect(buildProxySpec(["x", ...TARGET, "--host", good]).listen.host).toBe(good.replace(/^\[(.*)\]$/, "$1"));
    }
  });

  test("--host localhost is bound as 127.0.0.1 (run, proxy, gateway), the address its URLs then name; --target-host keeps the name", () => {
    for (const spelling of ["localhost", "LOCALHOST"]) {
      expect(buildProxySpec(["x", ...TARGET, "--host", spelling]).listen.host).toBe("127.0.0.1");
      expect(parseRunArgv(["x", "--host", spelling]).values.host).toBe("127.0.0.1");
      expect(buildGatewaySpec(["team", "--host", spelling]).listen.host).toBe("127.0.0.1");
    }
    expect(parseRunArgv(["x", "--target-host", "localhost"]).values["target-host"]).toBe("localhost");
    // A record written before, with "localhost" as its host, is shown by the same address.
    expect(clientUrl("localhost", 8080, "/mcp")).toBe("http://127.0.0.1:8080/mcp");
  });
});

test("a refused KEY=VALUE option is quoted by its keys alone: its value, often a credential, stays out of the error", () => {
  const token = "ghp_polish33SecretToken0123456789abcdefghi"; // a real one's length: 40
  const cases: [string[], string][] = [
    [["-e", `9TOKEN=${token}`], '--env "9TOKEN=…": the name before'],
    [["-e", `=${token}`], '--env "=…": must look like KEY=VALUE'],
    [["--remote-forward-headers", `Bearer ${token}`], '--remote-forward-headers "…": must look like Name=Value'],
    [["--remote-forward-headers", `X Key=${token}`], '--remote-forward-headers "X Key=…": the header name'],
    [["--otel-headers", token], '--otel-headers "…": must look like key=value'],
    [["--otel-custom-attributes", `team=a,${token}`], '--otel-custom-attributes "team=…,…": every item'],
    [["--otel-headers", "sk-proj.abc/def+ghi"], '--otel-headers "…": must look like key=value'],
  ];
  for (const [args, said] of cases) {
    let caught: unknown;
    try {
      parseRunArgv(["http://127.0.0.1:9/mcp", ...args]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(McpmgrError);
    expect((caught as McpmgrError).message).toContain(said);
    expect((caught as McpmgrError).message).not.toContain("ghp_");
  }
});
