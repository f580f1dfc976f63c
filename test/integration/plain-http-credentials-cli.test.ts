/**
 * mcpmgr's own credentials for a remote (a bearer token, a secret header, OAuth tokens, an exchanged
 * token) cross the network only over https:// (http:// on loopback), as those for the OAuth endpoints
 * do. A remote given as plain http:// elsewhere was sent them in clear text. A real HTTP server on this
 * machine's own network address (not loopback) stands for such a remote and records what reaches it:
 * `run` (background and foreground), `proxy --target-uri` and `proxy stdio URL` refuse in one line, and
 * it hears nothing; the same remote without credentials is still served.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { networkAddress } from "../support/network.ts";

setDefaultTimeout(60_000);

const TOKEN = "plain-http-bearer-token";
let remote: ReturnType<typeof Bun.serve>;
let url: string;
const heard: string[] = [];
let home: string;
let env: Record<string, string>;
let tokenFile: string;

beforeAll(async () => {
  // This machine's own address on its network: reached without loopback, as a remote elsewhere is.
  const address = networkAddress();
  expect(address).toBeDefined();
  remote = Bun.serve({
    hostname: address,
    port: 0,
    fetch(req) {
      heard.push(`${req.method} ${req.headers.get("authorization")}`);
      return Response.json({ jsonrpc: "2.0", id: 1, result: {} });
    },
  });
  url = `http://${address}:${remote.port}/mcp`;
  home = await mkdtemp(join(tmpdir(), "mcpmgr-plain-http-"));
  env = cliEnv(home);
  tokenFile = join(home, "token");
  await writeFile(tokenFile, `${TOKEN}\n`);
});

afterAll(async () => {
  runCli(env, ["rm", "no-credentials"]);
  await remote?.stop(true);
  await rm(home, { recursive: true, force: true });
});

function expectRefused(args: string[]): void {
  const line = expectOneLineError(runCli(env, args), 2);
  expect(line).toContain(
    "is plain http://: mcpmgr sends the bearer token (--remote-auth-bearer-token-file) over https:// only",
  );
  expect(line).not.toContain(TOKEN);
}

test("run, proxy and proxy stdio refuse to send a bearer token to a plain http:// remote beyond loopback; it hears nothing", () => {
  const bearer = ["--remote-auth-bearer-token-file", tokenFile];
  expectRefused(["run", url, "--name", "plain-bearer", ...bearer]);
  expectRefused(["run", "--foreground", url, ...bearer]);
  expectRefused(["proxy", "p", "--target-uri", url, ...bearer]);
  expectRefused(["proxy", "stdio", url, ...bearer]);
  expect(heard).toEqual([]);
  expect(JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout)).toEqual([]);
});

test("the same remote without credentials of mcpmgr's is still run", () => {
  expect(runCliOk(env, ["run", url, "--name", "no-credentials"]).stdout.trim()).toStartWith("http://127.0.0.1:");
});
