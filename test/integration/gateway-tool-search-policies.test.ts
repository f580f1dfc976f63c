/**
 * Search mode's policies end to end: `--tools` (weather_get_alerts hidden), Cedar (notes_delete_note
 * forbidden) and audit on one gateway, Cedar per caller with OIDC on another, and an embeddings
 * endpoint (our fixture) whose key comes from a secret on a third; real stdio workloads of the
 * tools.json fixture started by `mcpmgr run`, the SDK client through each gateway's endpoint.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddingServer } from "../fixtures/embedding-server.ts";
import { startAuthServer, type AuthServer } from "../support/auth-server.ts";
import { type TestGroup, until } from "../support/gateway-group.ts";
import {
  callTool,
  createSearchGroup,
  echoed,
  find,
  outcome,
  SEARCH_GROUP,
  type SearchGroup,
} from "../support/tool-search-group.ts";
import { writeCedarConfig } from "../support/cedar-config.ts";
import { networkAddress } from "../support/network.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let search: SearchGroup;
let group: TestGroup;
let auth: AuthServer;
let dir: string;
let logFile: string;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
const connect = (url = gateway.url, init?: RequestInit) => search.connect(url, init);

interface AuditLine {
  type: string;
  target: { tool?: string };
  outcome: string;
  request?: string;
}

async function auditLines(): Promise<AuditLine[]> {
  return (await readFile(logFile, "utf8").catch(() => ""))
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditLine);
}

async function policyFile(name: string, policies: string[]): Promise<string> {
  return writeCedarConfig(join(dir, name), policies);
}

beforeAll(async () => {
  search = await createSearchGroup(["weather", "notes", "car-rental"]);
  group = search.group;
  auth = await startAuthServer();
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-tool-search-"));
  logFile = join(dir, "audit.jsonl");
  const audit = join(dir, "audit.json");
  await writeFile(audit, JSON.stringify({ logFile, eventTypes: ["mcp_tool_call"], includeRequestData: true }));
  const authz = await policyFile("authz.json", [
    "permit(principal, action, resource);",
    'forbid(principal, action == Action::"call_tool", resource == Tool::"notes_delete_note");',
  ]);
  const allowed = ["weather_get_forecast", "weather_search", "notes_create_note", "notes_delete_note"];
  gateway = await group.gateway(
    SEARCH_GROUP,
    "--tool-search",
    "--tools",
    allowed.join(","),
    "--authz-config",
    authz,
    "--audit-config",
    audit,
  );
}, 180_000);

afterAll(async () => {
  await search?.cleanup();
  await auth?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("policies are not bypassed", () => {
  test("a tool hidden by --tools is neither found nor callable, whatever the way", async () => {
    const client = await connect();
    expect(await find(client, "severe weather alerts storms floods", 20)).not.toContain("weather_get_alerts");
    expect(await callTool(client, "weather_get_alerts", { region: "north" })).toStartWith(
      'isError: No tool named "weather_get_alerts".',
    );
    expect(await callTool(client, "weather_get_alert", { region: "north" })).not.toContain("weather_get_alerts");
    expect(await outcome(client, "weather_get_alerts", { region: "north" })).toMatch(
      /Unknown tool: weather_get_alerts/,
    );
  });

  test("a tool Cedar forbids is not found, and is answered exactly as a tool that does not exist", async () => {
    const client = await connect();
    expect(await find(client, "delete a note", 20)).not.toContain("notes_delete_note");
    // The answers as the client reads them, with the name asked for replaced (the rest must not differ).
    const as = async (answer: Promise<string>, name: string) =>
      (await answer).replace(/"id":\d+/, '"id":…').replaceAll(name, "NAME");
    const direct = await as(outcome(client, "notes_delete_note", { id: "1" }), "notes_delete_note");
    expect(direct).toBe(await as(outcome(client, "notes_delete_notx", { id: "1" }), "notes_delete_notx"));
    expect(direct).toContain("Unknown tool: NAME");
    const viaCallTool = await as(callTool(client, "notes_delete_note", { id: "1" }), "notes_delete_note");
    expect(viaCallTool).toStartWith('isError: No tool named "NAME".');
    expect(viaCallTool).toBe(await as(callTool(client, "notes_delete_notx", { id: "1" }), "notes_delete_notx"));
    // Its schema stays unknown too: invalid arguments get the same answer, not a schema error.
    expect(await as(callTool(client, "notes_delete_note", {}), "notes_delete_note")).toStartWith(
      'isError: No tool named "NAME".',
    );
    // A near miss is never answered with a name the caller may not call.
    const nearMiss = await callTool(client, "notes_delete", { id: "1" });
    expect(nearMiss).toStartWith('isError: No tool named "notes_delete".');
    expect(nearMiss).toContain("notes_create_note");
    expect(nearMiss).not.toContain("notes_delete_note");
  });

  test("audit records the real tool and arguments of a call_tool, and find_tool as itself", async () => {
    const client = await connect();
    await callTool(client, "weather_get_forecast", { city: "audited-city" });
    await callTool(client, "notes_delete_note", { id: "audited-id" });
    await client.callTool({ name: "find_tool", arguments: { query: "audited query" } });
    // Lines are flushed every 200 ms.
    expect(await until(async () => (await auditLines()).some((l) => l.request?.includes("audited query")))).toBe(true);
    const lines = await auditLines();
    const forecast = lines.find((l) => l.request?.includes("audited-city"));
    expect(forecast).toMatchObject({
      type: "mcp_tool_call",
      target: { tool: "weather_get_forecast" },
      outcome: "success",
    });
    expect(JSON.parse(forecast?.request ?? "{}")).toMatchObject({
      name: "weather_get_forecast",
      arguments: { city: "audited-city" },
    });
    expect(lines.find((l) => l.request?.includes("audited-id"))).toMatchObject({
      target: { tool: "notes_delete_note" },
      outcome: "denied",
    });
    expect(lines.find((l) => l.request?.includes("audited query"))?.target.tool).toBe("find_tool");
    expect(lines.some((l) => l.target.tool === "call_tool" && l.request?.includes("audited"))).toBe(false);
  });

  test("with OIDC, Cedar decides per caller what find_tool shows and what call_tool runs", async () => {
    const authz = await policyFile("per-caller.json", [
      'permit(principal, action == Action::"call_tool", resource) when { context.claim_scope like "*mcp:write*" };',
      'permit(principal, action == Action::"call_tool", resource == Tool::"weather_get_forecast");',
    ]);
    const protectedGateway = await group.gateway(
      SEARCH_GROUP,
      "--tool-search",
      "--authz-config",
      authz,
      ...auth.oidcArgs(),
    );
    const as = async (scope: string) =>
      connect(protectedGateway.url, { headers: { authorization: `Bearer ${await auth.token({ scope })}` } });
    const reader = await as("mcp:read");
    const writer = await as("mcp:write");
    expect(await find(reader, "write a new note", 20)).toEqual([]);
    expect(await find(writer, "write a new note", 1)).toEqual(["notes_create_note"]);
    expect(await find(reader, "weather forecast", 5)).toEqual(["weather_get_forecast"]);
    // The instructions name only the workloads a caller can use.
    expect(reader.getInstructions()).toContain('weather "');
    expect(reader.getInstructions()).not.toContain('notes "');
    expect(writer.getInstructions()).toContain('notes "');
    expect(await callTool(reader, "notes_create_note", { title: "t", body: "b" })).toStartWith(
      'isError: No tool named "notes_create_note".',
    );
    expect(
      echoed(
        await writer.callTool({
          name: "call_tool",
          arguments: { name: "notes_create_note", arguments: { title: "t", body: "b" } },
        }),
      ).server,
    ).toBe("notes");
  });
});

describe("with embeddings", () => {
  /** The gateway's options for tool search blended with the embedding endpoint at `url`. */
  const withEmbeddings = (url: string) => [
    "--tool-search",
    "--tool-search-embeddings",
    url,
    "--tool-search-embeddings-model",
    "fixture-model",
  ];

  test("--tool-search-embeddings blends the endpoint in, with the key from --tool-search-embeddings-key-secret", async () => {
    const key = "embeddings-key-value";
    const embeddings = startEmbeddingServer({ apiKey: key });
    try {
      const blended = await group.gatewayWithEnv(
        { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_EMBEDDINGS_KEY: key },
        SEARCH_GROUP,
        ...withEmbeddings(embeddings.url),
        "--tool-search-embeddings-key-secret",
        "embeddings-key",
      );
      const client = await connect(blended.url);
      // No word of the query is in the tool's text: only the embeddings can find it.
      expect(await find(client, "automobile hire", 1)).toEqual(["car-rental_rent_car"]);
      expect(embeddings.requests.length).toBeGreaterThan(0);
      expect(embeddings.requests.every((r) => r.authorization === `Bearer ${key}` && r.model === "fixture-model")).toBe(
        true,
      );
      // The endpoint failing: find_tool answers from the keywords alone, and the log says so without the key.
      embeddings.failing = true;
      expect(await find(client, "rent a car for a few days", 1)).toEqual(["car-rental_rent_car"]);
      expect(await until(() => blended.output().includes("find_tool answers from keywords alone"))).toBe(true);
      expect(blended.output()).not.toContain(key);
    } finally {
      await embeddings.stop();
    }
  });

  test("an endpoint answering wrong indices: find_tool answers from keywords, with one log line (review 9, F14)", async () => {
    const embeddings = startEmbeddingServer();
    embeddings.answers = "one-based";
    try {
      const wrong = await group.gateway(SEARCH_GROUP, ...withEmbeddings(embeddings.url));
      const client = await connect(wrong.url);
      expect(await find(client, "rent a car for a few days", 1)).toEqual(["car-rental_rent_car"]);
      // An index of 10⁹ neither fails the call nor stalls the gateway.
      embeddings.answers = "huge-index";
      expect(await find(client, "create a note", 1)).toEqual(["notes_create_note"]);
      const warnings = wrong
        .output()
        .split("\n")
        .filter((line) => line.includes("find_tool answers from keywords alone"));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(`tool search: embeddings endpoint ${embeddings.url}: item `);
      expect(warnings[0]).toMatch(/item (\d+) has "index" \d+, not one of 0\.\.\1; find_tool answers/);
    } finally {
      await embeddings.stop();
    }
  });

  test("an API key is never sent over plain http beyond loopback: the start is refused (review 9, F13)", async () => {
    const lanAddress = networkAddress();
    expect(lanAddress).toBeDefined();
    let asked = 0;
    const listener = Bun.serve({
      hostname: lanAddress,
      port: 0,
      fetch: () => {
        asked++;
        return new Response("{}");
      },
    });
    try {
      const url = `http://${lanAddress}:${listener.port}/v1/embeddings`;
      const failure = await group
        .gatewayWithEnv(
          { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_EMBKEY: "sk-NEVER-IN-CLEAR-TEXT" },
          SEARCH_GROUP,
          "--tool-search",
          "--tool-search-embeddings",
          url,
          "--tool-search-embeddings-model",
          "m",
          "--tool-search-embeddings-key-secret",
          "embkey",
        )
        .then(
          () => "started",
          (err: unknown) => String(err),
        );
      expect(failure).toContain("exited with 2 before it was ready");
      expect(failure).toContain(
        `--tool-search-embeddings ${url}: the API key (--tool-search-embeddings-key-secret) is sent only over https://`,
      );
      expect(failure).not.toContain("sk-NEVER-IN-CLEAR-TEXT");
      expect(asked).toBe(0);
    } finally {
      await listener.stop(true);
    }
  });

  test("a key secret that does not exist stops the start with a clear error", async () => {
    const started = group
      .gatewayWithEnv(
        { MCPMGR_SECRETS_PROVIDER: "environment" },
        SEARCH_GROUP,
        "--tool-search",
        "--tool-search-embeddings",
        "http://127.0.0.1:9/v1/embeddings",
        "--tool-search-embeddings-model",
        "m",
        "--tool-search-embeddings-key-secret",
        "no-such-key",
      )
      .then(
        () => "started",
        (err: unknown) => String(err),
      );
    const failure = await started;
    expect(failure).toContain("exited with 1 before it was ready");
    expect(failure).toContain("no-such-key");
    expect(failure).not.toContain("    at ");
  });
});
