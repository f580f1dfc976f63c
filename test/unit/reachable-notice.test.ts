/**
 * The warning a listener bound beyond loopback gets: what protects it. `/metrics` answers before
 * authentication (Prometheus scrapers carry no token), so with --oidc-issuer the warning must not
 * read as if every path needed a token.
 */
import { afterEach, expect, test } from "bun:test";
import { warnIfReachable } from "../../src/cli/reachable-notice.ts";

const printed: string[] = [];
const consoleWarn = console.warn;
afterEach(() => {
  console.warn = consoleWarn;
  printed.length = 0;
});
function capture(): void {
  console.warn = (...args: unknown[]) => void printed.push(args.join(" "));
}

const issuer = new URL("https://login.example.com/");

test("with --oidc-issuer and the Prometheus path, the warning says that /metrics answers without a token", () => {
  capture();
  warnIfReachable("r2", "0.0.0.0", "http://127.0.0.1:4000/mcp", { issuer, metrics: true });
  expect(printed).toEqual([
    "[warn] r2 listens on every address of this machine, port 4000, reachable from the network; callers need a token from https://login.example.com/ (--oidc-issuer); /metrics answers anyone without one (--otel-enable-prometheus-metrics-path: request counts and the names of the tools called)",
  ]);
});

test("without the Prometheus path, only the token is named", () => {
  capture();
  warnIfReachable("r2", "0.0.0.0", "http://127.0.0.1:4000/mcp", { issuer, authz: true });
  expect(printed).toEqual([
    "[warn] r2 listens on every address of this machine, port 4000, reachable from the network; callers need a token from https://login.example.com/ (--oidc-issuer) and Cedar decides each call (--authz-config)",
  ]);
});
