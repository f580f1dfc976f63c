/**
 * What the gateway merges besides tools: the prompts, resources and resource templates of two
 * real workloads of one group, under both `--name-prefix` modes, and the requests that name them
 * (`prompts/get`, `resources/read` of a listed URI and of one only a template matches) reaching
 * the workload that offers them. The workloads are `mcpmgr run` of the conformance fixture over
 * stdio (`conf`) and of a member server over HTTP (`notes`, test/fixtures/member-server.ts, whose
 * lists a test can change); the clients are the SDK's. The two share one prompt name
 * (`test_simple_prompt`), so `when-needed` has something to prefix. What happens when two
 * workloads claim the same resource is gateway-catalog.test.ts's and gateway-isolation.test.ts's.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { CONFORMANCE_FIXTURE, createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let group: TestGroup;
let notes: MemberServer;
/** Each workload's lists as the workload itself gives them, read directly from its own URL. */
const own: Record<"conf" | "notes", { prompts: string[]; resources: string[]; templates: string[] }> = {
  conf: { prompts: [], resources: [], templates: [] },
  notes: { prompts: [], resources: [], templates: [] },
};
let always: string;
let whenNeeded: string;
const clients: Client[] = [];

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: "merge-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

async function listsOf(client: Client) {
  return {
    prompts: (await client.listPrompts()).prompts.map((p) => p.name),
    resources: (await client.listResources()).resources.map((r) => r.uri),
    templates: (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate),
  };
}

const promptText = (result: { messages: { content: unknown }[] }) =>
  result.messages.map((m) => (m.content as { text?: string }).text ?? "").join("\n");
const readText = (result: { contents: unknown[] }) => (result.contents[0] as { text: string }).text;

beforeAll(async () => {
  group = await createTestGroup();
  notes = startMemberServer({
    name: "notes",
    tools: ["echo"],
    prompts: ["summarize", "test_simple_prompt"],
    resources: ["notes://index"],
    templates: ["notes://{id}"],
  });
  const urls = {
    conf: group.run(await group.packageOf(CONFORMANCE_FIXTURE), "conf", "docs", "stdio"),
    notes: group.run(notes.url, "notes", "docs"),
  };
  for (const name of ["conf", "notes"] as const) {
    const direct = await connect(urls[name]);
    own[name] = await listsOf(direct);
  }
  always = (await group.gateway("docs")).url;
  whenNeeded = (await group.gateway("docs", "--name-prefix", "when-needed")).url;
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await group?.cleanup();
  await notes?.stop();
});

describe("--name-prefix always", () => {
  test("lists each workload's prompts as <workload>_<name>, its resources and templates as they are", async () => {
    // The fixtures give the merge something of each kind.
    expect(own.conf.prompts).toContain("test_prompt_with_arguments");
    expect(own.conf.resources).toContain("test://static-text");
    expect(own.conf.templates).toEqual(["test://template/{id}/data"]);
    const client = await connect(always);
    const merged = await listsOf(client);
    const prefixedPrompts = [
      ...own.conf.prompts.map((name) => `conf_${name}`),
      ...own.notes.prompts.map((name) => `notes_${name}`),
    ].sort();
    expect(merged.prompts).toEqual(prefixedPrompts);
    expect(merged.prompts).toContain("conf_test_simple_prompt");
    expect(merged.prompts).toContain("notes_test_simple_prompt");
    // Resources in workload-name order; URIs and templates are never renamed.
    expect(merged.resources).toEqual([...own.conf.resources, "notes://index"]);
    expect(merged.templates).toEqual(["test://template/{id}/data", "notes://{id}"]);
  });

  test("prompts/get reaches the workload whose prefix the name carries, with the arguments", async () => {
    const client = await connect(always);
    const conf = await client.getPrompt({
      name: "conf_test_prompt_with_arguments",
      arguments: { arg1: "x", arg2: "y" },
    });
    expect(promptText(conf)).toContain("arg1='x'");
    expect(promptText(conf)).toContain("arg2='y'");
    expect(promptText(await client.getPrompt({ name: "conf_test_simple_prompt" }))).toBe(
      "This is a simple prompt for testing.",
    );
    expect(promptText(await client.getPrompt({ name: "notes_test_simple_prompt" }))).toBe(
      "notes prompt test_simple_prompt {}",
    );
    expect(promptText(await client.getPrompt({ name: "notes_summarize", arguments: { topic: "q3" } }))).toBe(
      'notes prompt summarize {"topic":"q3"}',
    );
    await expect(client.getPrompt({ name: "summarize" })).rejects.toThrow(/Unknown prompt: summarize/);
  });

  test("resources/read of a listed URI, and of a URI only a template matches, reaches its workload", async () => {
    const client = await connect(always);
    expect(readText(await client.readResource({ uri: "test://static-text" }))).toBe(
      "This is the content of the static text resource.",
    );
    expect(readText(await client.readResource({ uri: "notes://index" }))).toBe("notes says: contents of notes://index");
    // Listed by neither workload: routed by the template that matches it.
    expect(JSON.parse(readText(await client.readResource({ uri: "test://template/42/data" })))).toMatchObject({
      id: "42",
    });
    expect(readText(await client.readResource({ uri: "notes://meeting-7" }))).toBe(
      "notes says: contents of notes://meeting-7",
    );
    // Nobody offers it: the resource-not-found error, not a guess.
    await expect(client.readResource({ uri: "elsewhere://x" })).rejects.toThrow(/-32002|not found/i);
  });
});

describe("--name-prefix when-needed", () => {
  test("a prompt only one workload offers keeps its name; the shared one is prefixed for both", async () => {
    const client = await connect(whenNeeded);
    const merged = await listsOf(client);
    const expected = [
      ...own.conf.prompts.map((name) => (own.notes.prompts.includes(name) ? `conf_${name}` : name)),
      ...own.notes.prompts.map((name) => (own.conf.prompts.includes(name) ? `notes_${name}` : name)),
    ].sort();
    expect(merged.prompts).toEqual(expected);
    expect(merged.prompts).toContain("summarize");
    expect(merged.prompts).toContain("test_prompt_with_arguments");
    expect(merged.prompts).not.toContain("test_simple_prompt");
    expect(merged.resources).toEqual([...own.conf.resources, "notes://index"]);
    expect(merged.templates).toEqual(["test://template/{id}/data", "notes://{id}"]);
  });

  test("prompts/get by a bare name and by a prefixed one reaches the right workload", async () => {
    const client = await connect(whenNeeded);
    expect(promptText(await client.getPrompt({ name: "summarize", arguments: { topic: "q4" } }))).toBe(
      'notes prompt summarize {"topic":"q4"}',
    );
    const conf = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a", arg2: "b" } });
    expect(promptText(conf)).toContain("arg1='a'");
    expect(promptText(await client.getPrompt({ name: "conf_test_simple_prompt" }))).toBe(
      "This is a simple prompt for testing.",
    );
    expect(promptText(await client.getPrompt({ name: "notes_test_simple_prompt" }))).toBe(
      "notes prompt test_simple_prompt {}",
    );
    expect(readText(await client.readResource({ uri: "notes://42" }))).toBe("notes says: contents of notes://42");
  });
});

describe("a workload changing its lists", () => {
  test("a new prompt, resource and template of one workload reach the merged lists, announced; the other's stay", async () => {
    const prefixedClient = await connect(always);
    const bareClient = await connect(whenNeeded);
    const heard = { prompts: 0, resources: 0, tools: 0 };
    prefixedClient.setNotificationHandler(PromptListChangedNotificationSchema, () => {
      heard.prompts++;
    });
    prefixedClient.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      heard.resources++;
    });
    prefixedClient.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      heard.tools++;
    });
    const before = await listsOf(prefixedClient);

    await notes.addPrompt("outline");
    expect(await until(() => heard.prompts > 0)).toBe(true);
    const afterPrompt = await listsOf(prefixedClient);
    expect(afterPrompt.prompts).toEqual([...before.prompts, "notes_outline"].sort());
    expect(afterPrompt.resources).toEqual(before.resources);
    expect(await until(async () => (await listsOf(bareClient)).prompts.includes("outline"))).toBe(true);
    expect(promptText(await prefixedClient.getPrompt({ name: "notes_outline" }))).toBe("notes prompt outline {}");

    await notes.addResource("notes://archive");
    expect(await until(() => heard.resources > 0)).toBe(true);
    const afterResource = await listsOf(prefixedClient);
    expect(afterResource.resources).toEqual([...before.resources, "notes://archive"]);
    expect(readText(await prefixedClient.readResource({ uri: "notes://archive" }))).toBe(
      "notes says: contents of notes://archive",
    );

    const announced = heard.resources;
    await notes.addTemplate("journal://{day}");
    expect(await until(() => heard.resources > announced)).toBe(true);
    expect((await listsOf(prefixedClient)).templates).toEqual([...before.templates, "journal://{day}"]);
    expect(readText(await prefixedClient.readResource({ uri: "journal://monday" }))).toBe(
      "notes says: contents of journal://monday",
    );
    // Only what changed was announced: the tools did not change.
    expect(heard.tools).toBe(0);
  }, 60_000);

  test("a 2026-07-28 client hears of a new prompt and resource on its subscriptions/listen stream", async () => {
    const latest: { prompts: string[]; resources: string[] } = { prompts: [], resources: [] };
    const modern = new ModernClient(
      { name: "modern-listener", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        listChanged: {
          prompts: {
            debounceMs: 0,
            onChanged: (_err, items) => void (latest.prompts = (items ?? []).map((p) => p.name)),
          },
          resources: {
            debounceMs: 0,
            onChanged: (_err, items) => void (latest.resources = (items ?? []).map((r) => r.uri)),
          },
        },
      },
    );
    await modern.connect(new ModernTransport(new URL(always)));
    try {
      expect(modern.getNegotiatedProtocolVersion()).toBe("2026-07-28");
      const promptsBefore = (await modern.listPrompts()).prompts.map((p) => p.name);
      await notes.addPrompt("agenda");
      expect(await until(() => latest.prompts.includes("notes_agenda"))).toBe(true);
      expect(latest.prompts).toEqual([...promptsBefore, "notes_agenda"].sort());
      await notes.addResource("notes://board");
      expect(await until(() => latest.resources.includes("notes://board"))).toBe(true);
      expect(latest.resources).toContain("test://static-text");
      const read = await modern.readResource({ uri: "notes://board" });
      expect(readText(read)).toBe("notes says: contents of notes://board");
    } finally {
      await modern.close();
    }
  }, 60_000);
});
