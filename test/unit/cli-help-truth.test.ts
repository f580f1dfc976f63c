/**
 * Help that says what the command does: no option listed that is always refused, a described
 * default that is the one applied, the arguments a command passes on named. Each case is a help
 * text that once said otherwise (the walk of every command's --help against docs/ and the spec).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY } from "../support/processes.ts";

// Subprocesses of the CLI: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

function cli(...args: string[]) {
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-help-"));
  try {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdin: "ignore",
    });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** The help line of `--name`, its wrapped words joined. */
function optionLine(help: string, name: string): string {
  return help.split("\n").find((line) => line.trimStart().startsWith(`--${name}`)) ?? "";
}

test("proxy stdio lists no token exchange (a stdio client has no token to exchange), and refuses each such option saying so", () => {
  const help = cli("proxy", "stdio", "--help");
  expect(help.code).toBe(0);
  expect(help.stdout).not.toContain("--token-exchange-");
  // Alone, --token-exchange-audience was refused for want of --token-exchange-url, which was refused next.
  for (const [option, value] of [
    ["--token-exchange-audience", "api"],
    ["--token-exchange-url", "https://sts.example/token"],
  ] as const) {
    const refused = cli("proxy", "stdio", "http://127.0.0.1:1/mcp", option, value);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain(`${option}: token exchange trades an incoming client's token`);
  }
});

test("run's --network default names what is chosen without it, not bridge alone", () => {
  const line = optionLine(cli("run", "--help").stdout, "network=");
  expect(line).toContain("bridge");
  // A profile that allows no network, and an HTTP server on Docker (container-placement.ts), get other networks.
  expect(line).toContain("none when the permission profile allows no network");
  // An HTTP server under such a profile is isolated on Podman too (container-placement.ts httpIsolated), not given none.
  expect(line).toContain(
    "an sse/streamable-http server: an internal network of its own when the profile allows no network, on Docker also when neither the profile nor -p chooses one",
  );
  // The process sandbox refuses it: the help says whose option it is.
  expect(line).toContain("(Docker, Podman)");
});

test("run's help says where the server's own arguments go (after --), as the spec's usage does", () => {
  const help = cli("run", "--help").stdout;
  const argument = help.split("\n").find((line) => line.trimStart().startsWith("SERVER_OR_IMAGE_OR_PROTOCOL ")) ?? "";
  expect(argument).toContain("the server's own arguments go after --");
});

test("the routers' usage lines show [OPTIONS] as every other command's, since -h works on each", () => {
  for (const command of ["secret", "group", "client", "registry"]) {
    const help = cli(command, "--help").stdout;
    expect(help).toContain(`USAGE mcpmgr ${command} [OPTIONS] `);
    expect(help).toContain("-h, --help");
  }
});

test("--thv-ca-bundle names the requests each command makes", () => {
  const ca = (...command: string[]) => optionLine(cli(...command, "--help").stdout, "thv-ca-bundle=");
  // proxy stdio exchanges no token (refused: a stdio client has none) and checks no incoming one.
  expect(ca("proxy", "stdio")).toEndWith("OAuth/OIDC discovery, client registration, token and refresh requests");
  // A gateway authenticates its callers only: its members take the gateway key.
  expect(ca("gateway")).toEndWith("OIDC discovery, JWKS and introspection requests");
  for (const command of [["run"], ["proxy"]]) expect(ca(...command)).toContain("token-exchange requests");
});

test("a gateway's Prometheus /metrics is on its own port (it has no proxy port)", () => {
  const metrics = (command: string) => optionLine(cli(command, "--help").stdout, "otel-enable-prometheus-metrics-path");
  expect(metrics("gateway")).toContain("on the gateway's port");
  expect(metrics("run")).toContain("on the proxy port");
});
