/**
 * The `everything` registry entry lists the tools its pinned server really offers (asked with
 * the SDK client, declaring every capability its conditional tools wait for): `--tools` is
 * checked against this list, so a missing name refuses a valid value.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { embeddedEntries } from "../../src/registry/loader.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const PACKAGE = join(REPO_ROOT, "node_modules/@modelcontextprotocol/server-everything");

test("the everything entry lists every tool the pinned server offers to a client with roots, sampling and elicitation", async () => {
  const pkg = (await Bun.file(join(PACKAGE, "package.json")).json()) as { version: string };
  const everything = embeddedEntries().find((entry) => entry.name === "everything");
  // The dev dependency is the server the entry pins: a bump of one must bump the other.
  expect(everything?.source.npx).toBe(`@modelcontextprotocol/server-everything@${pkg.version}`);
  const client = new Client(
    { name: "registry-check", version: "1.0.0" },
    { capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: {} } },
  );
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [join(PACKAGE, "dist/index.js")], stderr: "ignore" }),
  );
  try {
    const { tools } = await client.listTools();
    expect([...(everything?.tools ?? [])].sort()).toEqual(tools.map((tool) => tool.name).sort());
  } finally {
    await client.close();
  }
});
