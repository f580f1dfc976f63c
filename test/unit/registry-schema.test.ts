/** Compact registry entries, permission profiles, and server.json conversion. */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { isMcpmgrError } from "../../src/errors.ts";
import { parseRegistryDocument } from "../../src/registry/document.ts";
import { describeIssues } from "../../src/registry/issues.ts";
import { describePermissions, expandPermissions } from "../../src/config/permission-profile.ts";
import { registryEntrySchema, sourceOf, type RegistryEntryInput } from "../../src/registry/schema.ts";
import { serverJsonSchema, serverJsonToEntry } from "../../src/registry/server-json.ts";

const good: RegistryEntryInput = {
  name: "weather",
  description: "Weather forecasts",
  transport: "stdio",
  source: { npx: "@example/weather-mcp@1.4.0" },
  permissions: "network",
  tools: ["get_forecast"],
};

function parse(input: unknown) {
  return v.safeParse(registryEntrySchema, input);
}

/** The one-line error for an invalid entry, as a custom registry would report it. */
function problem(input: unknown, prefix = "servers[3]"): string {
  const result = parse(input);
  expect(result.success).toBe(false);
  return result.success ? "" : describeIssues(result.issues, prefix);
}

describe("compact entries", () => {
  test("a minimal entry gets least-privilege defaults and is frozen", () => {
    const result = parse(good);
    expect(result.success).toBe(true);
    if (!result.success) return;
    expect(result.output).toMatchObject({ env: [], args: [], tags: [], permissions: "network" });
    expect(Object.isFrozen(result.output)).toBe(true);
    expect(Object.isFrozen(result.output.tools)).toBe(true);
  });

  test("a full entry keeps every field; env flags default to false", () => {
    const result = parse({
      ...good,
      transport: "streamable-http",
      source: { image: `ghcr.io/example/weather:1.0@sha256:${"a".repeat(64)}` },
      targetPort: 8080,
      permissions: {
        read: ["/data:/data"],
        network: { outbound: { allow_host: [".example.com", "10.0.0.1"], allow_port: [443] } },
      },
      env: [
        { name: "API_KEY", description: "key", required: true, secret: true },
        { name: "UNITS", default: "metric" },
      ],
      args: ["--verbose"],
      tags: ["weather"],
      repository: "https://github.com/example/weather",
      version: "1.0.0",
    });
    expect(result.success).toBe(true);
    if (!result.success) return;
    expect(result.output.env[1]).toEqual({
      name: "UNITS",
      description: "",
      required: false,
      secret: false,
      default: "metric",
    });
    const profile = expandPermissions(result.output.permissions);
    expect(profile.network.outbound).toEqual({
      insecure_allow_all: false,
      allow_host: [".example.com", "10.0.0.1"],
      allow_port: [443],
    });
    expect(profile.write).toEqual([]);
    expect(profile.privileged).toBe(false);
  });

  test.each([
    ["transport", { ...good, transport: "http" }, "servers[3].transport: must be one of stdio, sse, streamable-http"],
    ["no source", { ...good, source: {} }, "servers[3].source: must name one of image, npx, uvx, go, remote"],
    ["two sources", { ...good, source: { npx: "a", uvx: "b" } }, "servers[3].source: must name exactly one"],
    [
      "unknown field",
      { ...good, homepage: "https://x.example" },
      "servers[3].homepage: is not a known field (check the spelling)",
    ],
    ["unknown source kind", { ...good, source: { pip: "x" } }, "servers[3].source.pip: is not a known field"],
    [
      "misspelt field",
      { name: "x", description: "d", transport: "stdio", source: { uvx: "x" }, tools: [], permisions: "none" },
      "servers[3].permisions: is not a known field (did you mean permissions?)",
    ],
    ["missing tools", { ...good, tools: undefined }, "servers[3].tools: is required"],
    ["duplicate tool", { ...good, tools: ["a", "a"] }, "servers[3].tools: lists a twice"],
    [
      "bad env name",
      { ...good, env: [{ name: "MY-VAR" }] },
      "servers[3].env[0].name: must be a valid environment variable name",
    ],
    ["duplicate env", { ...good, env: [{ name: "A" }, { name: "A" }] }, "servers[3].env: lists A twice"],
    [
      "env flag type",
      { ...good, env: [{ name: "A", secret: "yes" }] },
      "servers[3].env[0].secret: must be true or false",
    ],
    ["name with slash", { ...good, name: "io.github/x" }, "servers[3].name: must be 1-100 letters"],
    ["empty description", { ...good, description: "  " }, "servers[3].description: must not be empty"],
    [
      "unknown built-in profile",
      { ...good, permissions: "all" },
      `servers[3].permissions: must be "none", "network" or a permission profile object`,
    ],
    [
      "profile port",
      { ...good, permissions: { network: { outbound: { allow_port: [70000] } } } },
      "servers[3].permissions.network.outbound.allow_port[0]: must be a port number",
    ],
    [
      "profile host",
      { ...good, permissions: { network: { outbound: { allow_host: ["https://x.com"] } } } },
      "servers[3].permissions.network.outbound.allow_host[0]: must be a host name",
    ],
    [
      "profile typo",
      { ...good, permissions: { network: { outbund: {} } } },
      "servers[3].permissions.network.outbund: is not a known field",
    ],
    ["npx spec", { ...good, source: { npx: "Not A Package" } }, "servers[3].source.npx: must be an npm package"],
    ["image given as URL", { ...good, source: { image: "https://ghcr.io/x" } }, "servers[3].source.image:"],
    [
      "remote over ftp",
      { ...good, transport: "sse", source: { remote: "ftp://x.example/sse" } },
      "servers[3].source.remote: must be an http:// or https:// URL",
    ],
    [
      "remote over stdio",
      { ...good, source: { remote: "https://x.example/mcp" } },
      "servers[3].transport: a remote server is reached over sse or streamable-http",
    ],
    ["port on stdio", { ...good, targetPort: 8080 }, "servers[3].targetPort: applies only to sse and streamable-http"],
    [
      "port on remote",
      { ...good, transport: "sse", source: { remote: "https://x.example/sse" }, targetPort: 8080 },
      "servers[3].targetPort: does not apply to a remote server",
    ],
  ])("%s is refused with its field path", (_label, input, expected) => {
    expect(problem(input)).toContain(expected);
  });

  test("several problems are counted after the first", () => {
    expect(problem({ ...good, transport: "x", tools: "y" })).toMatch(/\(and 1 more problem\)$/);
  });

  test("sourceOf gives the equivalent run target", () => {
    const entry = (source: RegistryEntryInput["source"], transport: RegistryEntryInput["transport"] = "stdio") =>
      v.parse(registryEntrySchema, { ...good, source, transport });
    expect(sourceOf(entry({ npx: "@a/b@1.0.0" }))).toEqual({
      kind: "npx",
      ref: "@a/b@1.0.0",
      runTarget: "npx://@a/b@1.0.0",
    });
    expect(sourceOf(entry({ uvx: "mcp-server-time" })).runTarget).toBe("uvx://mcp-server-time");
    expect(sourceOf(entry({ go: "github.com/o/r/cmd/s@v1.0.0" })).runTarget).toBe("go://github.com/o/r/cmd/s@v1.0.0");
    expect(sourceOf(entry({ image: "ghcr.io/o/i:1" })).runTarget).toBe("ghcr.io/o/i:1");
    expect(sourceOf(entry({ remote: "https://x.example/mcp" }, "streamable-http")).runTarget).toBe(
      "https://x.example/mcp",
    );
  });

  test("permission descriptions name the built-ins and the allow-list", () => {
    expect(describePermissions("none")).toContain("no network");
    expect(describePermissions("network")).toContain("any outbound");
    const profile = expandPermissions("network");
    expect(profile.network.outbound.insecure_allow_all).toBe(true);
    expect(
      describePermissions({
        ...expandPermissions("none"),
        network: {
          outbound: { insecure_allow_all: false, allow_host: ["api.x.com"], allow_port: [443] },
          inbound: { allow_host: [] },
        },
      }),
    ).toContain("outbound to api.x.com on port 443");
  });
});

describe("server.json conversion", () => {
  const convert = (doc: unknown) => serverJsonToEntry(v.parse(serverJsonSchema, doc));

  test("an npm package becomes an npx entry with env flags and fixed arguments", () => {
    const entry = convert({
      name: "io.github.example/notes",
      description: "Notes",
      version: "1.2.0",
      repository: { url: "https://github.com/example/notes", source: "github" },
      packages: [
        {
          registryType: "npm",
          identifier: "@example/notes-mcp",
          version: "1.2.0",
          transport: { type: "stdio" },
          environmentVariables: [
            { name: "NOTES_TOKEN", description: "token", isRequired: true, isSecret: true },
            { name: "NOTES_DIR", value: "/data" },
          ],
          packageArguments: [
            { type: "positional", value: "serve" },
            { type: "named", name: "--root", value: "{dir}", variables: { dir: { default: "/notes" } } },
            { type: "named", name: "--user", value: "{user}" },
            { type: "positional", valueHint: "extra" },
          ],
        },
      ],
      _meta: { anything: true },
    });
    expect(entry).toMatchObject({
      name: "notes",
      qualifiedName: "io.github.example/notes",
      version: "1.2.0",
      repository: "https://github.com/example/notes",
      transport: "stdio",
      source: { npx: "@example/notes-mcp@1.2.0" },
      permissions: "network",
      tools: [],
      args: ["serve", "--root", "/notes"],
    });
    expect(entry.env).toEqual([
      { name: "NOTES_TOKEN", description: "token", required: true, secret: true },
      { name: "NOTES_DIR", description: "", required: false, secret: false, default: "/data" },
    ]);
    expect(v.safeParse(registryEntrySchema, entry).success).toBe(true);
  });

  test("pypi → uvx, oci → image (with the port of an HTTP transport), remotes only without packages", () => {
    const doc = { name: "io.github.example/x", description: "X", version: "2.0.0" };
    expect(
      convert({
        ...doc,
        packages: [{ registryType: "pypi", identifier: "x-mcp", version: "2.0.0", transport: { type: "stdio" } }],
      }).source,
    ).toEqual({ uvx: "x-mcp@2.0.0" });
    const oci = convert({
      ...doc,
      packages: [
        {
          registryType: "oci",
          identifier: "ghcr.io/example/x:2.0.0",
          transport: { type: "streamable-http", url: "http://localhost:9000/mcp" },
        },
      ],
    });
    expect(oci).toMatchObject({
      source: { image: "ghcr.io/example/x:2.0.0" },
      transport: "streamable-http",
      targetPort: 9000,
    });
    const legacyOci = convert({
      ...doc,
      packages: [
        {
          registryType: "oci",
          identifier: "example/x",
          version: "2.0.0",
          transport: { type: "sse", url: "http://localhost:{port}/sse" },
        },
      ],
    });
    expect(legacyOci.source).toEqual({ image: "example/x:2.0.0" });
    expect(legacyOci.targetPort).toBeUndefined();
    const remote = convert({ ...doc, remotes: [{ type: "streamable-http", url: "https://mcp.example.com/mcp" }] });
    expect(remote).toMatchObject({ transport: "streamable-http", source: { remote: "https://mcp.example.com/mcp" } });
  });

  test("documents mcpmgr cannot run are refused with the field path", () => {
    const run = () =>
      parseRegistryDocument(
        [
          {
            name: "io.github.example/dotnet",
            description: "d",
            version: "1",
            packages: [{ registryType: "nuget", identifier: "X", version: "1", transport: { type: "stdio" } }],
          },
        ],
        { origin: "test.json", hint: "h" },
      );
    expect(run).toThrow("[0].packages: no npm, pypi or oci package and no remote (found nuget");
  });

  test("invalid server.json documents name the field", () => {
    const attempt = (doc: unknown) => {
      try {
        parseRegistryDocument([doc], { origin: "list.json", hint: "h" });
      } catch (err) {
        if (isMcpmgrError(err)) return `${err.code} ${err.message}`;
        throw err;
      }
      return "no error";
    };
    expect(attempt({ name: "no-namespace", description: "d", version: "1" })).toContain(
      "REGISTRY_INVALID invalid registry list.json: [0].name: must look like io.github.owner/server",
    );
    expect(
      attempt({
        name: "a.b/c",
        description: "d",
        version: "1",
        packages: [{ registryType: "npm", identifier: "x", transport: { type: "websocket" } }],
      }),
    ).toContain("[0].packages[0].transport.type: must be one of stdio, streamable-http, sse");
  });
});
