/**
 * A resource a Cedar forbid names stays refused through the gateway under the spellings its workload
 * reads as the same file: with a query or a fragment, which a server that maps `file:` URIs to paths
 * (`fileURLToPath`) drops. Real parts: a stdio member run by `mcpmgr run`, `mcpmgr gateway
 * --authz-config`, the SDK's client.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REPO_ROOT } from "../support/processes.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

const FILES_FIXTURE = join(REPO_ROOT, "test/fixtures/file-uri-member.ts");

let group: TestGroup;
let client: Client;

beforeAll(async () => {
  group = await createTestGroup();
  group.run(await group.packageOf(FILES_FIXTURE), "files", "default");
  const policies = join(group.home, "authz.json");
  await writeFile(
    policies,
    JSON.stringify({
      version: "1.0",
      type: "cedarv1",
      cedar: {
        policies: [
          "permit(principal, action, resource);",
          'forbid(principal, action == Action::"read_resource", resource == Resource::"file:///srv/secret.txt");',
        ],
        entities_json: "[]",
      },
    }),
  );
  const gateway = await group.gateway("default", "--authz-config", policies);
  client = new Client({ name: "spellings-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
});

afterAll(async () => {
  await client?.close().catch(() => {});
  await group?.cleanup();
});

async function read(uri: string): Promise<string> {
  try {
    const { contents } = await client.readResource({ uri });
    return `read ${(contents[0] as { text: string }).text}`;
  } catch (err) {
    return `error: ${err instanceof Error ? err.message : String(err)}`;
  }
}

test("a forbidden file is refused with a query or a fragment, which its server drops", async () => {
  // The workload answers reads, through its template too, and reads these spellings as the file.
  expect(await read("file:///srv/public.txt")).toBe("read contents of /srv/public.txt");
  expect(await read("file:///srv//public.txt/")).toBe("read contents of /srv/public.txt");
  expect(await read("file:///srv/public.txt#top")).toBe("read contents of /srv/public.txt");
  for (const uri of [
    "file:///srv/secret.txt",
    "file:///srv/secret.txt#x",
    "file:///srv/secret.txt?x",
    "file:///srv/secret.txt?",
    "FILE:///srv/%73ecret.txt?a=1#b",
    // Doubled and trailing slashes: the same file to fs.readFile and path.resolve.
    "file:///srv//secret.txt",
    "file:////srv/secret.txt",
    "file:///srv/secret.txt/",
    "file:///srv/secret.txt/.",
    "file:///srv//./secret.txt//?x#y",
  ]) {
    const outcome = await read(uri);
    expect(outcome).toContain("error:");
    expect(outcome).toContain("Forbidden");
  }
});
