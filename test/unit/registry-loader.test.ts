/** loadRegistry: the embedded catalog merged with a custom registry from a file, config.json or a URL. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, mkdtemp, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isMcpmgrError, type ErrorCode } from "../../src/errors.ts";
import { embeddedEntries, loadRegistry, type FetchLike, type LoadRegistryOptions } from "../../src/registry/loader.ts";
import { cliEnv } from "../support/cli-home.ts";
import { INJECTED_REGISTRY, networkAddress } from "../support/plain-http-registry.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

const FIXTURES = resolve(import.meta.dir, "../fixtures/registry");
const fixture = (name: string) => join(FIXTURES, name);
const embeddedCount = embeddedEntries().length;

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-registry-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** The error loadRegistry fails with; fails the test if it succeeds. */
async function loadError(
  options: LoadRegistryOptions,
): Promise<{ code: ErrorCode; message: string; hint: string; exitCode: number }> {
  try {
    await loadRegistry(options);
  } catch (err) {
    if (!isMcpmgrError(err)) throw err;
    return { code: err.code, message: err.message, hint: err.hint ?? "", exitCode: err.exitCode };
  }
  throw new Error("loadRegistry succeeded");
}

describe("without a custom registry", () => {
  test("lists the embedded catalog sorted by name", async () => {
    const registry = await loadRegistry({ env: {} });
    const names = registry.list().map((entry) => entry.name);
    expect(names).toHaveLength(embeddedCount);
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    expect(registry.custom).toBeUndefined();
    expect(registry.origin("github")).toBe("embedded");
  });

  test("lookup is exact, falls back to a unique case-insensitive match, and get() suggests close names", async () => {
    const registry = await loadRegistry({ env: {} });
    expect(registry.lookup("github")?.name).toBe("github");
    expect(registry.lookup("GitHub")?.name).toBe("github");
    expect(registry.lookup("nope")).toBeUndefined();
    expect(registry.closeMatches("fecth")).toContain("fetch");
    try {
      registry.get("githb");
      throw new Error("get succeeded");
    } catch (err) {
      expect(isMcpmgrError(err) && err.code).toBe("REGISTRY_ENTRY_NOT_FOUND");
      expect(isMcpmgrError(err) && err.exitCode).toBe(2);
      expect(isMcpmgrError(err) && err.hint).toContain("github");
    }
  });

  test("a config dir without config.json, or config.json without registry, changes nothing", async () => {
    expect((await loadRegistry({ env: {}, configDir: join(scratch, "missing") })).custom).toBeUndefined();
    const dir = join(scratch, "no-registry");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "config.json"), JSON.stringify({ somethingElse: true }));
    expect((await loadRegistry({ env: {}, configDir: dir })).list()).toHaveLength(embeddedCount);
  });

  test("a config.json saved with a byte order mark (Windows Notepad) gives its registry", async () => {
    const dir = join(scratch, "bom-config");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "config.json"), `\uFEFF${JSON.stringify({ registry: fixture("compact.json") })}\r\n`);
    const plain = await loadRegistry({ env: { MCPMGR_REGISTRY: fixture("compact.json") } });
    const configured = await loadRegistry({ env: {}, configDir: dir });
    expect(configured.custom).toBeDefined();
    expect(configured.list()).toHaveLength(plain.list().length);
  });

  test("a config.json that is not an object, or misspells registry, is an error, never skipped", async () => {
    const dir = join(scratch, "odd-config");
    await mkdir(dir, { recursive: true });
    for (const text of ["[]", '"mine.json"', "5"]) {
      await writeFile(join(dir, "config.json"), text);
      expect(await loadError({ env: {}, configDir: dir })).toMatchObject({
        code: "REGISTRY_INVALID",
        message: expect.stringContaining("must hold one JSON object"),
        exitCode: 2,
      });
    }
    // Other keys, near as they are, may be a later version's settings: the file still loads.
    for (const key of ["registries", "register", "registryUrl"]) {
      await writeFile(join(dir, "config.json"), JSON.stringify({ [key]: "mine.json", somethingElse: 1 }));
      expect((await loadRegistry({ env: {}, configDir: dir })).list()).toHaveLength(embeddedCount);
    }
    for (const key of ["regsitry", "Registry", "registy"]) {
      await writeFile(join(dir, "config.json"), JSON.stringify({ [key]: "mine.json" }));
      expect(await loadError({ env: {}, configDir: dir })).toMatchObject({
        code: "REGISTRY_INVALID",
        message: expect.stringContaining(`"${key}" is not a setting (did you mean "registry"?)`),
      });
    }
  });

  test("a config.json that is there but cannot be read is an error, never skipped: a symlink loop, a directory", async () => {
    const looped = join(scratch, "looped-config");
    await mkdir(looped, { recursive: true });
    await symlink("config.json", join(looped, "config.json"));
    expect(await loadError({ env: {}, configDir: looped })).toMatchObject({
      code: "REGISTRY_UNREACHABLE",
      message: expect.stringContaining("ELOOP"),
    });
    const folder = join(scratch, "folder-config");
    await mkdir(join(folder, "config.json"), { recursive: true });
    expect(await loadError({ env: {}, configDir: folder })).toMatchObject({
      code: "REGISTRY_UNREACHABLE",
      hint: expect.stringContaining("must be a JSON file"),
    });
  });

  test("a config folder the user may not search is an error (the custom registry would be dropped)", async () => {
    // As root everything is readable: the CLI runs as nobody (uid 65534), as a user whose config folder
    // was made by `sudo mcpmgr …` would.
    expect(process.getuid?.()).toBe(0);
    const home = await mkdtemp(join(tmpdir(), "mcpmgr-registry-locked-"));
    try {
      await chmod(home, 0o755);
      const configDir = join(home, ".mcpmgr", "config");
      await mkdir(configDir, { recursive: true });
      await writeFile(join(configDir, "config.json"), JSON.stringify({ registry: "mine.json" }));
      await chmod(configDir, 0o700);
      const run = Bun.spawnSync(
        [
          "setpriv",
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          process.execPath,
          CLI_ENTRY,
          "registry",
          "list",
        ],
        {
          cwd: REPO_ROOT,
          env: { ...cliEnv(home), MCPMGR_HOME: join(home, ".mcpmgr") },
          stdin: "ignore",
        },
      );
      expect(run.exitCode).toBe(1);
      expect(run.stderr.toString()).toContain(`cannot read ${join(configDir, "config.json")}: EACCES`);
      expect(run.stdout.toString()).toBe("");
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe("custom registry file", () => {
  test("custom entries override embedded ones by name and add new ones", async () => {
    const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: fixture("compact.json") } });
    expect(registry.custom).toEqual({
      kind: "file",
      location: fixture("compact.json"),
      configuredBy: "MCPMGR_REGISTRY",
    });
    expect(registry.list()).toHaveLength(embeddedCount + 1);
    expect(registry.lookup("fetch")).toMatchObject({
      source: { image: "registry.example.com/tools/fetch:2.0.0" },
      transport: "streamable-http",
      targetPort: 8080,
    });
    expect(registry.origin("fetch")).toBe("custom");
    expect(registry.lookup("weather")).toMatchObject({
      args: ["--cache", "off"],
      env: [{ name: "UNITS", default: "metric", required: false, secret: false }],
    });
    expect(registry.origin("github")).toBe("embedded");
  });

  test("a relative MCPMGR_REGISTRY is taken from cwd; a file:// URL works too", async () => {
    expect(
      (await loadRegistry({ env: { MCPMGR_REGISTRY: "compact.json" }, cwd: FIXTURES })).lookup("weather"),
    ).toBeDefined();
    expect(
      (await loadRegistry({ env: { MCPMGR_REGISTRY: pathToFileURL(fixture("compact.json")).href } })).lookup("weather"),
    ).toBeDefined();
  });

  test("a list of server.json documents is converted (first runnable package, else the remote)", async () => {
    const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: fixture("server-json-list.json") } });
    expect(registry.lookup("weather-py")).toMatchObject({
      source: { uvx: "weather-mcp-server@0.5.0" },
      qualifiedName: "io.github.example/weather-py",
      args: ["--mode", "local"],
      env: [
        { name: "WEATHER_API_KEY", required: true, secret: true },
        { name: "WEATHER_UNITS", default: "celsius" },
      ],
    });
    expect(registry.lookup("io.github.example/weather-py")?.name).toBe("weather-py");
    expect(registry.lookup("db-manager")).toMatchObject({
      source: { image: "docker.io/example/db-manager:3.1.0" },
      transport: "streamable-http",
      targetPort: 8000,
    });
    expect(registry.lookup("hosted")).toMatchObject({
      source: { remote: "https://mcp.example.com/sse" },
      transport: "sse",
    });
  });

  test("an MCP registry API listing keeps only the latest version of each server", async () => {
    const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: fixture("registry-api.json") } });
    expect(registry.lookup("notes")).toMatchObject({ version: "1.1.0", source: { npx: "@example/notes-mcp@1.1.0" } });
  });

  test("config.json names the registry relative to the config dir; MCPMGR_REGISTRY wins over it", async () => {
    const dir = join(scratch, "with-config");
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, "mine.json"),
      JSON.stringify({
        servers: [
          {
            name: "mine",
            description: "Mine",
            transport: "stdio",
            source: { uvx: "mine-mcp" },
            permissions: "none",
            tools: ["t"],
          },
        ],
      }),
    );
    await writeFile(join(dir, "config.json"), JSON.stringify({ registry: "mine.json" }));
    const fromConfig = await loadRegistry({ env: {}, configDir: dir });
    expect(fromConfig.lookup("mine")).toBeDefined();
    expect(fromConfig.custom?.configuredBy).toBe(join(dir, "config.json"));
    const fromEnv = await loadRegistry({ env: { MCPMGR_REGISTRY: fixture("compact.json") }, configDir: dir });
    expect(fromEnv.lookup("mine")).toBeUndefined();
    expect(fromEnv.lookup("weather")).toBeDefined();
  });
});

describe("bad custom registries fail with a code, one line and a hint", () => {
  test("missing file", async () => {
    const error = await loadError({ env: { MCPMGR_REGISTRY: join(scratch, "nope.json") } });
    expect(error).toMatchObject({ code: "REGISTRY_FILE_NOT_FOUND", exitCode: 2 });
    expect(error.message).toContain("nope.json");
    expect(error.hint).toContain("MCPMGR_REGISTRY");
  });

  test("a directory", async () => {
    expect((await loadError({ env: { MCPMGR_REGISTRY: scratch } })).code).toBe("REGISTRY_INVALID");
  });

  test("an endless device is refused past 16 MiB, not read into memory", async () => {
    const error = await loadError({ env: { MCPMGR_REGISTRY: "/dev/zero" } });
    expect(error).toMatchObject({ code: "REGISTRY_INVALID", exitCode: 2 });
    expect(error.message).toContain("larger than 16 MiB");
  });

  test("invalid JSON", async () => {
    const error = await loadError({ env: { MCPMGR_REGISTRY: fixture("not-json.json") } });
    expect(error.code).toBe("REGISTRY_INVALID");
    expect(error.message).toContain("not-json.json: not valid JSON");
    expect(error.message).not.toContain("\n");
  });

  test("a registry file saved with a byte order mark (Windows Notepad) is read", async () => {
    const file = join(scratch, "bom-registry.json");
    await writeFile(file, `\uFEFF${await Bun.file(fixture("compact.json")).text()}`);
    const plain = await loadRegistry({ env: { MCPMGR_REGISTRY: fixture("compact.json") } });
    const withBom = await loadRegistry({ env: { MCPMGR_REGISTRY: file } });
    expect(withBom.list().map((entry) => entry.name)).toEqual(plain.list().map((entry) => entry.name));
  });

  test("an invalid entry is named by file and field path", async () => {
    const error = await loadError({ env: { MCPMGR_REGISTRY: fixture("invalid-entry.json") } });
    expect(error).toMatchObject({ code: "REGISTRY_INVALID", exitCode: 2 });
    expect(error.message).toBe(
      `invalid registry ${fixture("invalid-entry.json")}: servers[3].transport: must be one of stdio, sse, streamable-http (got "http")`,
    );
  });

  test("the same name twice in one file", async () => {
    const file = join(scratch, "dupe.json");
    const entry = {
      name: "dupe",
      description: "d",
      transport: "stdio",
      source: { uvx: "x" },
      permissions: "none",
      tools: ["t"],
    };
    await writeFile(file, JSON.stringify({ servers: [entry, entry] }));
    expect((await loadError({ env: { MCPMGR_REGISTRY: file } })).message).toContain(
      `servers[1].name: "dupe" is already defined by servers[0]`,
    );
  });

  test("a document of the wrong shape", async () => {
    const file = join(scratch, "shape.json");
    await writeFile(file, JSON.stringify({ servers: { fetch: {} } }));
    expect((await loadError({ env: { MCPMGR_REGISTRY: file } })).message).toContain(
      "servers: must be a list of servers",
    );
    await writeFile(file, "42");
    expect((await loadError({ env: { MCPMGR_REGISTRY: file } })).message).toContain(
      `(top level): must be {"servers": [...]}`,
    );
  });

  test("config.json that is not JSON, or whose registry is not a string", async () => {
    const dir = join(scratch, "bad-config");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "config.json"), "{ nope");
    expect((await loadError({ env: {}, configDir: dir })).code).toBe("REGISTRY_INVALID");
    await writeFile(join(dir, "config.json"), JSON.stringify({ registry: 42 }));
    expect((await loadError({ env: {}, configDir: dir })).message).toContain(
      "registry: must be a file path or an https:// URL",
    );
  });

  test("plain http is refused except on loopback; other schemes are refused", async () => {
    expect(await loadError({ env: { MCPMGR_REGISTRY: "http://registry.example.com/r.json" } })).toMatchObject({
      code: "REGISTRY_INVALID",
      exitCode: 2,
    });
    expect((await loadError({ env: { MCPMGR_REGISTRY: "ftp://registry.example.com/r.json" } })).code).toBe(
      "REGISTRY_INVALID",
    );
  });
});

describe("custom registry by URL", () => {
  const documents: Record<string, string> = {
    "/registry.json": JSON.stringify({
      servers: [
        {
          name: "remote-one",
          description: "From the URL",
          transport: "stdio",
          source: { npx: "remote-one@1.0.0" },
          permissions: "none",
          tools: ["t"],
        },
      ],
    }),
    "/servers.json": JSON.stringify([
      {
        name: "io.github.example/from-url",
        description: "server.json over HTTP",
        version: "1.0.0",
        remotes: [{ type: "streamable-http", url: "https://x.example/mcp" }],
      },
    ]),
    "/broken.json": "{",
  };
  /** Served by the second server, on this machine's network address: what a plain-http hop could inject. */
  const injected = JSON.stringify(INJECTED_REGISTRY);
  /** This machine's address on a network (not loopback); the test needs one, as the review's machine had. */
  const lanAddress = networkAddress();
  let lan: ReturnType<typeof Bun.serve>;
  let lanRequests = 0;
  /** Bytes the endless answer handed out before the reader stopped. */
  let endlessSent = 0;
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  let requests: { accept: string | null }[] = [];

  beforeAll(() => {
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        requests.push({ accept: req.headers.get("accept") });
        const path = new URL(req.url).pathname;
        if (path === "/to-lan.json")
          return new Response(null, { status: 302, headers: { location: `http://${lanAddress}:${lan.port}/r.json` } });
        if (path === "/hop.json") return new Response(null, { status: 301, headers: { location: "/registry.json" } });
        if (path === "/loop.json") return new Response(null, { status: 302, headers: { location: "/loop.json" } });
        if (path === "/endless.json") {
          endlessSent = 0;
          const chunk = new Uint8Array(1024 * 1024).fill(0x20);
          // Chunked, no Content-Length, never ending: only the reader can stop it.
          return new Response(
            new ReadableStream({
              pull(controller) {
                endlessSent += chunk.byteLength;
                controller.enqueue(chunk);
              },
            }),
            { headers: { "content-type": "application/json" } },
          );
        }
        if (path === "/slow.json")
          return new Promise<Response>((done) => setTimeout(() => done(new Response("{}")), 2_000));
        const body = documents[path];
        return body === undefined
          ? new Response("not here", { status: 404, statusText: "Not Found" })
          : new Response(body, { headers: { "content-type": "application/json" } });
      },
    });
    base = `http://127.0.0.1:${server.port}`;
    lan = Bun.serve({
      hostname: lanAddress,
      port: 0,
      fetch() {
        lanRequests++;
        return new Response(injected, { headers: { "content-type": "application/json" } });
      },
    });
  });
  afterAll(async () => {
    await server.stop(true);
    await lan.stop(true);
  });

  test("a compact registry served over loopback http is merged", async () => {
    requests = [];
    const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: `${base}/registry.json` }, fetch });
    expect(registry.lookup("remote-one")?.source.npx).toBe("remote-one@1.0.0");
    expect(registry.origin("remote-one")).toBe("custom");
    expect(registry.custom).toMatchObject({ kind: "url", location: `${base}/registry.json` });
    expect(registry.list()).toHaveLength(embeddedCount + 1);
    expect(requests[0]?.accept).toBe("application/json");
  });

  test("server.json documents over HTTP are converted", async () => {
    const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: `${base}/servers.json` }, fetch });
    expect(registry.lookup("from-url")).toMatchObject({
      transport: "streamable-http",
      source: { remote: "https://x.example/mcp" },
    });
  });

  test("config.json may name the URL", async () => {
    const dir = join(scratch, "url-config");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "config.json"), JSON.stringify({ registry: `${base}/registry.json` }));
    expect((await loadRegistry({ env: {}, configDir: dir, fetch })).lookup("remote-one")).toBeDefined();
  });

  test("HTTP errors, bad JSON, timeouts and network failures have their codes", async () => {
    const notFound = await loadError({ env: { MCPMGR_REGISTRY: `${base}/missing.json` }, fetch });
    expect(notFound).toMatchObject({ code: "REGISTRY_UNREACHABLE", exitCode: 1 });
    expect(notFound.message).toContain("HTTP 404");
    expect((await loadError({ env: { MCPMGR_REGISTRY: `${base}/broken.json` }, fetch })).code).toBe("REGISTRY_INVALID");
    const slow = await loadError({ env: { MCPMGR_REGISTRY: `${base}/slow.json` }, fetch, timeoutMs: 100 });
    expect(slow.code).toBe("REGISTRY_UNREACHABLE");
    expect(slow.message).toContain("no answer within");
    const failing: FetchLike = () => Promise.reject(new TypeError("connection refused"));
    const refused = await loadError({
      env: { MCPMGR_REGISTRY: "https://registry.example.com/r.json" },
      fetch: failing,
    });
    expect(refused.code).toBe("REGISTRY_UNREACHABLE");
    expect(refused.message).toContain("connection refused");
  });

  test("a redirect is followed while it stays on the rule: loopback http to loopback http", async () => {
    const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: `${base}/hop.json` }, fetch });
    expect(registry.lookup("remote-one")?.source.npx).toBe("remote-one@1.0.0");
  });

  test("a redirect to plain http beyond loopback is refused before it is fetched (review 9, F11)", async () => {
    expect(lanAddress).toBeDefined();
    lanRequests = 0;
    const refused = await loadError({ env: { MCPMGR_REGISTRY: `${base}/to-lan.json` }, fetch });
    expect(refused).toMatchObject({ code: "REGISTRY_INVALID", exitCode: 2 });
    expect(refused.message).toBe(
      `custom registry ${base}/to-lan.json redirected to http://${lanAddress}:${lan.port}/r.json; a registry decides what runs, so every hop must be https`,
    );
    expect(refused.hint).toContain("https:// URL");
    expect(lanRequests).toBe(0);
    const looping = await loadError({ env: { MCPMGR_REGISTRY: `${base}/loop.json` }, fetch });
    expect(looping).toMatchObject({ code: "REGISTRY_UNREACHABLE" });
    expect(looping.message).toContain("more than 5 redirects");
  });

  test("an answer without a length is read no further than 16 MiB (review 9, F11)", async () => {
    const tooLarge = await loadError({ env: { MCPMGR_REGISTRY: `${base}/endless.json` }, fetch, timeoutMs: 20_000 });
    expect(tooLarge).toMatchObject({ code: "REGISTRY_INVALID", exitCode: 2 });
    expect(tooLarge.message).toBe(`custom registry ${base}/endless.json is larger than 16 MiB`);
    // The stream was stopped at the cap (plus what was in flight), not read on.
    expect(endlessSent).toBeLessThan(64 * 1024 * 1024);
  });
});
