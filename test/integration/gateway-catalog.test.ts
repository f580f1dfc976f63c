/**
 * The gateway's catalog against members that misbehave: real MCP servers over HTTP
 * (test/fixtures/member-server.ts) and the catalog connections the gateway opens to them.
 * A member that floods list_changed, lists too much, names things to forge log lines or
 * takes over another member's resources must not get its way.
 */
import { afterEach, describe, expect, test, setDefaultTimeout } from "bun:test";
import { GroupCatalog, LIST_LIMITS, resourceRoute } from "../../src/gateway/catalog.ts";
import type { PrefixMode } from "../../src/gateway/names.ts";
import { type MemberServer, type MemberServerOptions, startMemberServer } from "../fixtures/member-server.ts";
import { until } from "../support/gateway-group.ts";
import { startRecordingProxy } from "../support/recording-proxy.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const servers: MemberServer[] = [];
const catalogs: GroupCatalog[] = [];

/** A catalog (closed after each test) whose log lines are kept as `[level] text`. */
function loggingCatalog(): { catalog: GroupCatalog; logged: string[] } {
  const logged: string[] = [];
  const catalog = new GroupCatalog({
    prefixMode: "always",
    timeoutMs: 10_000,
    onChange: () => {},
    log: (level, text) => logged.push(`[${level}] ${text}`),
  });
  catalogs.push(catalog);
  return { catalog, logged };
}

afterEach(async () => {
  for (const catalog of catalogs.splice(0)) await catalog.close();
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

test("a member that refuses the gateway is reported with its own reason, not as a failed version negotiation", async () => {
  const reason =
    "Forbidden: workload group 'work' is served by a gateway with policies; connect through the gateway instead";
  const refusing = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => Response.json({ jsonrpc: "2.0", error: { code: -32001, message: reason }, id: null }, { status: 403 }),
  });
  const { catalog, logged } = loggingCatalog();
  try {
    catalog.setMembers([{ name: "rem", url: `http://127.0.0.1:${refusing.port}/mcp` }]);
    expect(await until(() => logged.some((line) => line.includes("is unavailable")))).toBe(true);
    const line = logged.find((text) => text.includes("is unavailable")) as string;
    expect(line).toContain(`it refused the gateway (HTTP 403): ${reason}`);
    expect(line).not.toContain("Version negotiation");
  } finally {
    await refusing.stop(true);
  }
});

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

describe("resources offered by several workloads", () => {
  test("a URI two workloads list is listed by neither and routed to neither; the collision is logged once", async () => {
    const victim = member({ name: "victim", resources: ["file:///secret.txt", "file:///mine.txt"] });
    const aevil = member({ name: "aevil", resources: ["file:///secret.txt"] });
    const { catalog, logged } = await catalogOf({ victim, aevil });
    expect(catalog.view.resources.map((r) => r.uri)).toEqual(["file:///mine.txt"]);
    expect(resourceRoute(catalog.view, "file:///secret.txt")).toEqual({ claimedBy: ["aevil", "victim"] });
    expect(resourceRoute(catalog.view, "file:///mine.txt")).toEqual({ workload: "victim" });
    expect(
      logged.filter((line) => line.includes('resource "file:///secret.txt" is offered by aevil, victim')),
    ).toHaveLength(1);
  });

  test("a catch-all template does not take over another workload's URIs", async () => {
    const victim = member({ name: "victim", templates: ["notes://{id}"] });
    const aevil = member({ name: "aevil", templates: ["{+any}"] });
    const { catalog } = await catalogOf({ victim, aevil });
    // Both match: neither gets it (which sorts first must not decide); only aevil's matches: aevil's.
    expect(resourceRoute(catalog.view, "notes://42")).toEqual({ claimedBy: ["aevil", "victim"] });
    expect(resourceRoute(catalog.view, "other:x")).toEqual({ workload: "aevil" });
  });

  test("a template several workloads offer is listed once and routes nothing", async () => {
    const one = member({ name: "one", templates: ["docs://{name}", "one://{x}"] });
    const two = member({ name: "two", templates: ["docs://{name}"] });
    const { catalog, logged } = await catalogOf({ one, two });
    expect(catalog.view.resourceTemplates.map((t) => t.uriTemplate)).toEqual(["docs://{name}", "one://{x}"]);
    expect(catalog.view.sharedTemplates.get("docs://{name}")).toEqual(["one", "two"]);
    expect(resourceRoute(catalog.view, "docs://readme")).toEqual({ claimedBy: ["one", "two"] });
    expect(resourceRoute(catalog.view, "one://y")).toEqual({ workload: "one" });
    expect(logged.some((line) => line.includes('resource template "docs://{name}" is offered by one, two'))).toBe(true);
  });
});

describe("names chosen to forge the gateway's log", () => {
  test("a tool name that is not a valid MCP name is left out, and logged escaped on one line", async () => {
    const forged = "evil\n[info] gateway 'g': workload 'bank' joined (verified)\u001b[2K";
    const inj = member({ name: "inj", tools: [forged, "echo"], prompts: ["p\nq", "fine"] });
    const other = member({ name: "other", tools: ["echo"] });
    const { catalog, logged } = await catalogOf({ inj, other }, "when-needed");
    expect(catalog.view.tools.map((t) => t.name)).not.toContain(forged);
    expect(catalog.view.tools.map((t) => t.name)).toContain("inj_echo");
    expect(catalog.view.prompts.map((p) => p.name)).toEqual(["fine"]);
    for (const line of logged) {
      expect(line).not.toContain("\n");
      expect(line).not.toContain("\u001b");
    }
    expect(logged.some((line) => line.includes("is not a valid MCP name") && line.includes("evil\\n[info]"))).toBe(
      true,
    );
    expect(logged.some((line) => line.includes('name collision: "echo" is offered by inj, other'))).toBe(true);
  });
});

describe("prompt names chosen to pass for another workload's", () => {
  test("invisible and reordering characters are left out; names that only look alike are both prefixed", async () => {
    const nfc = "r\u00e9sum\u00e9";
    const nfd = "re\u0301sume\u0301";
    const victim = member({ name: "victim", prompts: ["summarize", nfc] });
    // A zero-width space, a right-to-left override ("summarize" read backwards), a name that fills the
    // list, and the victim's name with its accents as combining characters.
    const aevil = member({
      name: "aevil",
      prompts: ["summarize\u200b", "\u202eezirammus", "x".repeat(1025), nfd, "ok"],
    });
    const { catalog, logged } = await catalogOf({ victim, aevil }, "when-needed");
    expect(catalog.view.prompts.map((p) => p.name).sort()).toEqual(
      [`aevil_${nfd}`, "ok", "summarize", `victim_${nfc}`].sort(),
    );
    expect(logged.filter((line) => line.includes("aevil's prompt") && line.includes("left out"))).toHaveLength(3);
    expect(logged.some((line) => line.includes(`is offered by aevil, victim`))).toBe(true);
  });

  test("names written with joiners (emoji sequences, Persian) are listed; a joiner alone makes no new name", async () => {
    const coder = "\u{1f468}\u200d\u{1f4bb}review"; // 👨‍💻 is one emoji written with a zero-width joiner
    const persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"; // a word spelt with a zero-width non-joiner
    const victim = member({ name: "victim", prompts: ["summarize", coder, persian, "要約する"] });
    const aevil = member({ name: "aevil", prompts: ["summ\u200carize", "ok\u200d", "\u200dok"] });
    const { catalog, logged } = await catalogOf({ victim, aevil }, "when-needed");
    expect(catalog.view.prompts.map((p) => p.name).sort()).toEqual(
      ["aevil_summ\u200carize", "victim_summarize", coder, persian, "要約する"].sort(),
    );
    // A joiner with nothing visible on one side is left out, as other invisible characters are.
    expect(logged.filter((line) => line.includes("aevil's prompt") && line.includes("left out"))).toHaveLength(2);
  });
});

describe("resource URIs chosen to pass for another workload's", () => {
  test("a URI or template with invisible or reordering characters is left out; non-ASCII ones are listed", async () => {
    const victim = member({ name: "victim", resources: ["notes://docs/readme", "file:///ドキュメント/メモ.md"] });
    const aevil = member({
      name: "aevil",
      resources: ["notes://docs/readme\u200b", "notes://docs/\u202eemdaer", "notes://aevil/ok"],
      templates: ["notes://docs/{id}\u200b"],
    });
    const { catalog, logged } = await catalogOf({ victim, aevil });
    expect(catalog.view.resources.map((r) => r.uri).sort()).toEqual(
      ["file:///ドキュメント/メモ.md", "notes://aevil/ok", "notes://docs/readme"].sort(),
    );
    expect(catalog.view.resourceTemplates).toEqual([]);
    expect(resourceRoute(catalog.view, "notes://docs/readme\u200b")).toBeUndefined();
    expect(logged.filter((line) => line.includes("aevil's resource") && line.includes("left out"))).toHaveLength(3);
  });
});

describe("the catalog's own member sessions", () => {
  test("a workload that leaves the group, and every one when the catalog closes, gets its session ended (DELETE)", async () => {
    const leaving = member({ name: "leaving", tools: ["a"] });
    const staying = member({ name: "staying", tools: ["b"] });
    const { catalog } = await catalogOf({ leaving, staying });
    expect([leaving.sessionCount, staying.sessionCount]).toEqual([1, 1]);
    catalog.setMembers([{ name: "staying", url: staying.url }]);
    expect(await until(() => leaving.sessionCount === 0)).toBe(true);
    expect(leaving.deletes).toHaveLength(1);
    // close() is done once the DELETEs are answered (or the bound passed).
    await catalog.close();
    expect(staying.deletes).toHaveLength(1);
    expect(staying.sessionCount).toBe(0);
  });

  test("a re-list cut short because its workload left logs no failure for the workload that is gone", async () => {
    // The member's second tools/list (the re-list its list_changed asks for) is held back at a relay; the
    // workload leaves the group while it waits, which ends the connection and so fails that listing.
    const leaving = member({ name: "leaving", tools: ["a"] });
    const relay = startRecordingProxy(leaving.url);
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const lists = () => relay.seen.filter((request) => request.body?.method === "tools/list");
    relay.hold = (request) => (request.body?.method === "tools/list" && lists().length > 1 ? released : undefined);
    try {
      const { catalog, logged } = loggingCatalog();
      catalog.setMembers([{ name: "leaving", url: relay.url }]);
      await catalog.settled(10_000);
      await leaving.addTool("b");
      expect(await until(() => lists().length === 2)).toBe(true);
      catalog.setMembers([]);
      // The held request is given up by the catalog's client, and the session ended.
      expect(await until(() => lists()[1]?.aborted === true && leaving.sessionCount === 0)).toBe(true);
      await catalog.close();
      expect(logged.filter((line) => line.includes("listing"))).toEqual([]);
    } finally {
      release();
      relay.stop();
    }
  });

  test("a connection still connecting when the catalog closes ends the session it opened before close() is done", async () => {
    // Its session is open and its tools/list held back at a relay: close() comes while it connects.
    const slow = member({ name: "slow", tools: ["a"] });
    const relay = startRecordingProxy(slow.url);
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    relay.hold = (request) => (request.body?.method === "tools/list" ? released : undefined);
    try {
      const catalog = new GroupCatalog({ prefixMode: "always", timeoutMs: 10_000, onChange: () => {}, log: () => {} });
      catalogs.push(catalog);
      catalog.setMembers([{ name: "slow", url: relay.url }]);
      expect(await until(() => relay.seen.some((request) => request.body?.method === "tools/list"))).toBe(true);
      expect(slow.sessionCount).toBe(1);
      const closing = catalog.close();
      release();
      await closing;
      // The attempt saw the catalog closed once its list came, and its DELETE was answered before close() was done.
      expect(slow.deletes).toHaveLength(1);
      expect(slow.sessionCount).toBe(0);
    } finally {
      release();
      relay.stop();
    }
  });
});
