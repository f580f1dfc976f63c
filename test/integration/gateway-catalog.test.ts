/**
 * The gateway's catalog against members that misbehave: real MCP servers over HTTP
 * (test/fixtures/member-server.ts) and the catalog connections the gateway opens to them.
 * A member that floods list_changed, lists too much, names things to forge log lines or
 * takes over another member's resources must not get its way.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { GroupCatalog, LIST_LIMITS, resourceWorkload } from "../../src/gateway/catalog.ts";
import type { PrefixMode } from "../../src/gateway/names.ts";
import { type MemberServer, type MemberServerOptions, startMemberServer } from "../fixtures/member-server.ts";
import { until } from "../support/gateway-group.ts";

const servers: MemberServer[] = [];
const catalogs: GroupCatalog[] = [];

afterEach(async () => {
  for (const catalog of catalogs.splice(0)) catalog.close();
  await Promise.allSettled(servers.splice(0).map((server) => server.stop()));
});

function member(options: MemberServerOptions): MemberServer {
  const server = startMemberServer(options);
  servers.push(server);
  return server;
}

async function catalogOf(members: Record<string, MemberServer>, prefixMode: PrefixMode = "always") {
  const logged: string[] = [];
  const catalog = new GroupCatalog({
    prefixMode,
    timeoutMs: 10_000,
    onChange: () => {},
    log: (level, text) => logged.push(`[${level}] ${text}`),
  });
  catalogs.push(catalog);
  catalog.setMembers(Object.entries(members).map(([name, server]) => ({ name, url: server.url })));
  await catalog.settled(10_000);
  return { catalog, logged };
}

describe("list_changed floods", () => {
  test("a flood of notifications costs at most one re-list in flight and one queued", async () => {
    const flooder = member({ name: "flooder", tools: ["a"] });
    const { catalog } = await catalogOf({ flooder });
    expect(flooder.listRequests).toBe(1);
    await flooder.flood(300);
    // The last change is announced after the flood: once the catalog shows it, every notification is in.
    await flooder.addTool("last");
    expect(await until(() => catalog.view.tools.some((t) => t.name === "flooder_last"))).toBe(true);
    expect(flooder.listRequests).toBeLessThanOrEqual(5);
  });

  test("a list past the item limit is refused with a warning; the other members are served", async () => {
    const many = Array.from({ length: LIST_LIMITS.items + 1 }, (_, i) => `t${i}`);
    const big = member({ name: "big", tools: many });
    const small = member({ name: "small", tools: ["echo"] });
    const { catalog, logged } = await catalogOf({ big, small });
    expect(catalog.view.tools.map((t) => t.name)).toEqual(["small_echo", "small_getctx", "small_setctx"]);
    expect(logged.some((line) => line.includes("'big'") && line.includes("larger than the gateway accepts"))).toBe(
      true,
    );
  });
});
