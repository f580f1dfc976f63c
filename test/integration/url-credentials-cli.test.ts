/**
 * A server's URL with a user name or password in it (review 7, R7-L4): mcpmgr never sent them
 * (its requests are built from the URL's origin) while the URL was listed, logged and shown by
 * ps. Every place that takes such a URL refuses it with one line and the header way instead:
 * `run URL` (background and foreground), `run --from-config`, a registry entry's remote,
 * `proxy --target-uri` and `proxy stdio URL`. The password never appears in the error.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { emptyResultUpstream } from "../support/json-rpc-upstream.ts";

setDefaultTimeout(60_000);

const PASSWORD = "S3CRETPW";

let upstream: ReturnType<typeof Bun.serve>;
let home: string;
let env: Record<string, string>;
const withPassword = () => `http://alice:${PASSWORD}@127.0.0.1:${upstream.port}/mcp`;

beforeAll(async () => {
  // The only server a remote workload needs here.
  upstream = emptyResultUpstream();
  home = await mkdtemp(join(tmpdir(), "mcpmgr-url-credentials-"));
  env = cliEnv(home);
});

afterAll(async () => {
  runCli(env, ["rm", "plain"]);
  await upstream?.stop(true);
  await rm(home, { recursive: true, force: true });
});

/** The one-line refusal, with the header way in its hint and without the password. */
function expectRefused(args: string[], what: string, extraEnv: Record<string, string> = {}): void {
  const line = expectOneLineError(runCli({ ...env, ...extraEnv }, args), 2);
  expect(line).toContain(`${what} holds a user name or password`);
  expect(line).toContain("--remote-forward-headers-secret Authorization=NAME");
  expect(line).not.toContain(PASSWORD);
}

test("run refuses it in the background and in the foreground, and records nothing", () => {
  expectRefused(["run", withPassword(), "--name", "pw"], "the server URL");
  expectRefused(["run", "--foreground", withPassword()], "the server URL");
  expectRefused(["run", `http://alice@127.0.0.1:${upstream.port}/mcp`, "--name", "user"], "the server URL");
  expect(JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout)).toEqual([]);
});

test("run --from-config refuses an exported file whose URL was given one", async () => {
  const url = runCliOk(env, ["run", `http://127.0.0.1:${upstream.port}/mcp`, "--name", "plain"]).stdout.trim();
  expect(url).toStartWith("http://");
  const file = join(home, "plain.json");
  runCliOk(env, ["export", "plain", file]);
  runCliOk(env, ["rm", "plain"]);
  const exported = await readFile(file, "utf8");
  await writeFile(file, exported.replaceAll(`http://127.0.0.1:${upstream.port}/mcp`, withPassword()));
  expectRefused(["run", "--from-config", file], "the server URL");
});

test("a registry entry whose remote URL holds one is refused by name", async () => {
  const registry = join(home, "registry.json");
  await writeFile(
    registry,
    JSON.stringify({
      servers: [
        {
          name: "remote-pw",
          description: "a remote server whose URL holds a password",
          transport: "streamable-http",
          source: { remote: withPassword() },
          permissions: "network",
          tools: [],
        },
      ],
    }),
  );
  expectRefused(["run", "remote-pw", "--foreground"], "registry entry remote-pw's remote URL", {
    MCPMGR_REGISTRY: registry,
  });
});

test("proxy --target-uri and proxy stdio refuse it", () => {
  expectRefused(["proxy", "pw", "--target-uri", withPassword()], "--target-uri");
  expectRefused(["proxy", "stdio", withPassword()], "the URL");
});

test("the other URL options (issuers, endpoints, the collector) refuse a user name or password, and never quote it", () => {
  const server = `http://127.0.0.1:${upstream.port}/mcp`;
  const withPasswordAt = (host: string) => `https://alice:${PASSWORD}@${host}/`;
  for (const option of [
    ["--oidc-issuer", withPasswordAt("idp.example")],
    ["--oidc-introspection-url", withPasswordAt("idp.example")],
    ["--otel-endpoint", withPasswordAt("collector.example")],
    ["--remote-auth-issuer", withPasswordAt("as.example")],
    ["--token-exchange-url", withPasswordAt("sts.example")],
  ]) {
    for (const args of [
      ["run", server, "--name", "url-option-pw", ...option],
      ["run", "--foreground", server, ...option],
      // A gateway takes the incoming and telemetry options, not a remote's.
      ...(option[0]?.startsWith("--oidc-") || option[0] === "--otel-endpoint"
        ? [["gateway", "default", "--detach", ...option]]
        : []),
    ]) {
      const line = expectOneLineError(runCli(env, args), 2);
      expect(line).toContain(`${option[0]} "https://…@`);
      expect(line).toContain("must not hold a user name or password");
      expect(line).not.toContain(PASSWORD);
    }
  }
  expect(JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout)).toEqual([]);
});

test("a URL mistyped with a password in it (an '@', '/' or '#' in the password, a bad host, another scheme) is not quoted with it", () => {
  const server = `http://127.0.0.1:${upstream.port}/mcp`;
  const cases: [string[], string][] = [
    // The parser takes userinfo up to the last '@': "pa@S3CRETPW" is the password.
    [
      ["run", server, "--name", "at-pw", "--oidc-issuer", `https://alice:pa@${PASSWORD}@idp.example/`],
      "https://…@idp.example/",
    ],
    // A raw '/' or '#' in a password makes the URL unparseable: everything up to its last '@' is left out.
    [
      ["run", server, "--name", "slash-pw", "--oidc-issuer", `https://alice:pa/${PASSWORD}@idp.example/`],
      "https://…@idp.example/",
    ],
    [["run", `http://alice:${PASSWORD}@[bad/mcp`, "--name", "bad-host"], "http://…@[bad/mcp"],
    [["run", `wss://alice:${PASSWORD}@host.example/mcp`, "--name", "ws-pw"], "wss://…@host.example/mcp"],
    [["proxy", "stdio", `http://alice:pa#${PASSWORD}@host.example/mcp`], "http://…@host.example/mcp"],
    [["proxy", "stdio", `htp://alice:${PASSWORD}@host.example/mcp`], "htp://…@host.example/mcp"],
  ];
  for (const [args, quoted] of cases) {
    const line = expectOneLineError(runCli(env, args), 2);
    expect(line).toContain(JSON.stringify(quoted));
    expect(line.toLowerCase()).not.toContain(PASSWORD.toLowerCase());
  }
});
