/**
 * Whose listener a connection reached (state/listener-owner.ts `listenerHeldBy`), read from the kernel's
 * socket tables and a process's descriptors: the gateway sends the installation's key on a member's
 * connection only when the listener it reached is the supervisor's. Real listeners, in this process and
 * in a child that takes the other loopback address at the same port.
 */
import { afterEach, expect, test } from "bun:test";
import type { Server, Subprocess } from "bun";
import { listenerHeldBy } from "../../src/state/listener-owner.ts";

const servers: Server<unknown>[] = [];
const children: Subprocess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await Promise.all(servers.splice(0).map((server) => server.stop(true)));
});

function listen(hostname: string, port = 0): number {
  const server = Bun.serve({ hostname, port, fetch: () => new Response("mine") });
  servers.push(server);
  return server.port as number;
}

/** Another process listening on `hostname`:`port`; resolves once it listens. */
async function otherListener(hostname: string, port: number): Promise<number> {
  const child = Bun.spawn(
    [
      process.execPath,
      "-e",
      `Bun.serve({ hostname: ${JSON.stringify(hostname)}, port: ${port}, fetch: () => new Response("other") }); console.log("up");`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  children.push(child);
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  expect(new TextDecoder().decode(value)).toContain("up");
  reader.releaseLock();
  return child.pid;
}

test("a listener on the connection's own address is its holder's, and no other process's", async () => {
  const port = listen("127.0.0.1");
  expect(listenerHeldBy(process.pid, "127.0.0.1", port)).toBe(true);
  expect(listenerHeldBy(process.pid, "::ffff:127.0.0.1", port)).toBe(true);
  const other = await otherListener("::1", port);
  expect(listenerHeldBy(process.pid, "::1", port)).toBe(false);
  expect(listenerHeldBy(other, "::1", port)).toBe(true);
  expect(listenerHeldBy(other, "127.0.0.1", port)).toBe(false);
});

test("a wildcard listener answers for the addresses nobody holds by name", async () => {
  const v4 = listen("0.0.0.0");
  expect(listenerHeldBy(process.pid, "127.0.0.1", v4)).toBe(true);
  expect(listenerHeldBy(process.pid, "::1", v4)).toBe(false);
  const dual = listen("::");
  expect(listenerHeldBy(process.pid, "127.0.0.1", dual)).toBe(true);
  expect(listenerHeldBy(process.pid, "::1", dual)).toBe(true);
  // Another process's listener on the connection's own address is the one that answers, not the wildcard.
  const other = await otherListener("::1", v4);
  expect(listenerHeldBy(process.pid, "::1", v4)).toBe(false);
  expect(listenerHeldBy(other, "::1", v4)).toBe(true);
});

test("no listener at the address, or no address, is nobody's", () => {
  const port = listen("127.0.0.1");
  expect(listenerHeldBy(process.pid, "127.0.0.2", port)).toBe(false);
  expect(listenerHeldBy(process.pid, "127.0.0.1", port === 65535 ? 1 : port + 1)).toBe(false);
  expect(listenerHeldBy(process.pid, "", port)).toBe(false);
  expect(listenerHeldBy(process.pid, "localhost", port)).toBe(false);
});

test("a process gone holds nothing", async () => {
  const port = listen("127.0.0.1");
  expect(listenerHeldBy(2 ** 22 + 1, "127.0.0.1", port)).toBe(false);
});
