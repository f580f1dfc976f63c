import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { webhookConfig } from "../../src/config/webhook-config.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-webhook-config-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

test("files merge by name: a later entry replaces an earlier one, others are kept, YAML and JSON alike", async () => {
  const first = await file(
    "a.json",
    JSON.stringify({
      validating: [
        { name: "policy", url: "https://a.example/check" },
        { name: "other", url: "https://a.example/other" },
      ],
    }),
  );
  const second = await file(
    "b.yaml",
    "validating:\n  - name: policy\n    url: https://b.example/check\n    failure_policy: ignore\nmutating:\n  - name: rewrite\n    url: https://b.example/patch\n",
  );
  const merged = webhookConfig([first, second]);
  expect(merged?.validating.map((h) => [h.name, h.url.href, h.failurePolicy])).toEqual([
    ["policy", "https://b.example/check", "ignore"],
    ["other", "https://a.example/other", "fail"],
  ]);
  expect(merged?.mutating.map((h) => h.name)).toEqual(["rewrite"]);
});

test("http:// is refused unless allow_http is set on that entry", async () => {
  const plain = await file(
    "plain.json",
    JSON.stringify({ validating: [{ name: "local", url: "http://127.0.0.1:9/check" }] }),
  );
  expect(() => webhookConfig([plain])).toThrow("http:// is refused");
  const allowed = await file(
    "allowed.json",
    JSON.stringify({ validating: [{ name: "local", url: "http://127.0.0.1:9/check", allow_http: true }] }),
  );
  expect(webhookConfig([allowed])?.validating[0]?.url.protocol).toBe("http:");
});
