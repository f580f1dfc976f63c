/** The embedded catalog: every entry valid, runnable, least-privilege and unique. */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { embeddedCatalog } from "../../src/registry/catalog.ts";
import { embeddedEntries } from "../../src/registry/loader.ts";
import { describeIssues } from "../../src/registry/issues.ts";
import { registryEntrySchema, sourceKinds, sourceOf } from "../../src/registry/schema.ts";

describe("embedded catalog", () => {
  test("has at least 20 servers with unique names", () => {
    const names = embeddedCatalog.map((entry) => entry.name);
    expect(names.length).toBeGreaterThanOrEqual(20);
    expect(new Set(names).size).toBe(names.length);
  });

  test.each(embeddedCatalog.map((entry) => [entry.name, entry] as const))(
    "%s validates, has a source and tools",
    (_name, input) => {
      const result = v.safeParse(registryEntrySchema, input);
      if (!result.success) throw new Error(describeIssues(result.issues, input.name));
      const entry = result.output;
      expect(entry.tools.length).toBeGreaterThanOrEqual(1);
      expect(sourceKinds.filter((kind) => entry.source[kind] !== undefined)).toHaveLength(1);
      expect(entry.description.length).toBeGreaterThan(10);
      expect(entry.repository).toMatch(/^https:\/\//);
      // Least privilege: nothing privileged, no default mounts, allow-lists rather than open egress where a profile is given.
      if (typeof entry.permissions !== "string") {
        expect(entry.permissions.privileged).toBe(false);
        expect(entry.permissions.read).toEqual([]);
        expect(entry.permissions.write).toEqual([]);
        expect(entry.permissions.network.outbound.insecure_allow_all).toBe(false);
        expect(entry.permissions.network.outbound.allow_host.length).toBeGreaterThan(0);
      }
      // A remote server runs nothing locally, so it asks for nothing.
      if (sourceOf(entry).kind === "remote") expect(entry.permissions).toBe("none");
      // Variables that hold credentials are secret.
      for (const item of entry.env) {
        if (/TOKEN|API_KEY|PASSWORD|SECRET/.test(item.name) && !/THRESHOLD/.test(item.name))
          expect(item.secret).toBe(true);
      }
    },
  );

  test("the well-known servers carry the facts users rely on", () => {
    const byName = new Map(embeddedEntries().map((entry) => [entry.name, entry]));
    const github = byName.get("github");
    expect(github?.env.find((item) => item.name === "GITHUB_PERSONAL_ACCESS_TOKEN")).toMatchObject({
      required: true,
      secret: true,
    });
    expect(github?.source.image).toMatch(/^ghcr\.io\/github\/github-mcp-server:/);
    expect(byName.get("fetch")).toMatchObject({
      source: { uvx: "mcp-server-fetch" },
      permissions: "network",
      tools: ["fetch"],
    });
    expect(byName.get("memory")?.permissions).toBe("none");
    expect(byName.get("time")?.source.uvx).toBe("mcp-server-time");
    expect(byName.get("git")?.source.uvx).toBe("mcp-server-git");
    expect(byName.get("filesystem")?.source.npx).toMatch(/^@modelcontextprotocol\/server-filesystem@/);
    expect(byName.get("sequential-thinking")?.tools).toEqual(["sequentialthinking"]);
    expect(byName.get("context7")?.tools).toContain("resolve-library-id");
  });
});
